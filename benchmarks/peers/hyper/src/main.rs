//! Pure Rust hyper HTTP/1.1 server: the "no JavaScript in the loop" peer of
//! the benchmark suite's HTTP scenarios. It follows `benchmarks/SCENARIOS.md`
//! ("HTTP": `PORT`, `STATIC_DIR`, `LISTENING <port>`, SIGTERM, and the five
//! endpoints).
//!
//! Written the way a competent Rust engineer would write such a service with
//! the ecosystem's standard crates:
//!
//! - **hyper 1.x** (`server::conn::http1`) on **tokio**, one task per
//!   connection, `service_fn` routing by hand (the endpoints are few).
//! - **A current-thread runtime** (`THREADS=1`, the default): the runner pins
//!   every server to one core, so more workers would only contend for it. With
//!   `THREADS` > 1 it runs a multi-thread runtime with that many workers.
//!   tokio's blocking pool (file reads) is in the same process, on the same core.
//! - **`pipeline_flush(true)`** (`PIPELINE_FLUSH=0` turns it off): while
//!   pipelined requests wait in the read buffer, responses are buffered
//!   instead of flushed one by one. It is hyper's setting for pipelining
//!   (marked experimental) and multiplies the small pipelined scenarios'
//!   rate about 6× here; its cost is that the buffering is unbounded, so 16
//!   pipelined 1 MiB files are all held before any is written (see
//!   SCENARIOS.md). The loadgen checks every response, so a bug would show.
//! - **No timer**: hyper's header-read timeout needs one, and a benchmark
//!   connection is never idle mid-request; keep-alive is on (the default) with
//!   no idle limit, like the other peers' long keep-alive timeouts.
//! - `/json` serializes a struct per request with serde_json; `/echo`
//!   collects the body under a 1 MiB limit (`Limited`), else 413;
//!   `/static/<name>` opens the file with tokio::fs and streams it in 64 KiB
//!   chunks (`ReaderStream` into a `StreamBody`), with its Content-Length from
//!   the file's metadata: hyper's own way of serving a file.
//! - `TCP_NODELAY` on every connection (hyper batches its writes already).

use std::convert::Infallible;
use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::TryStreamExt as _;
use http_body_util::{BodyExt as _, Either, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{HeaderValue, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::signal::unix::{signal, SignalKind};
use tokio_util::io::ReaderStream;

const HELLO: &str = "Hello, World!";
/// The largest request body accepted (`POST /echo` sends 64 KiB).
const BODY_LIMIT: usize = 1 << 20;
/// The size of each read of a static file.
const FILE_CHUNK: usize = 64 << 10;

#[derive(serde::Serialize)]
struct Message {
    message: &'static str,
}

type FileStream =
    futures_util::stream::MapOk<ReaderStream<tokio::fs::File>, fn(Bytes) -> Frame<Bytes>>;
type Body = Either<Full<Bytes>, StreamBody<FileStream>>;

fn main() {
    let port = env_number("PORT", 0u16);
    let threads = env_number("THREADS", 1usize).max(1);
    let pipeline_flush = env_number("PIPELINE_FLUSH", 1u8) != 0;
    let dir = match std::env::var_os("STATIC_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => fail("STATIC_DIR must name the folder of the static files"),
    };
    if !dir.is_dir() {
        fail(&format!("STATIC_DIR={} is not a directory", dir.display()));
    }
    let mut builder = if threads == 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(threads);
        b
    };
    let runtime = builder
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(&format!("cannot start the tokio runtime: {e}")));
    runtime.block_on(serve(port, Arc::new(dir), pipeline_flush));
}

/// Reads a numeric setting from the environment; a malformed value stops the
/// server instead of silently running a benchmark with the wrong settings.
fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(value) if !value.trim().is_empty() => value
            .trim()
            .parse()
            .unwrap_or_else(|_| fail(&format!("{name}={value:?} is not a valid number"))),
        _ => default,
    }
}

fn fail(message: &str) -> ! {
    eprintln!("switchboard-bench-hyper: {message}");
    std::process::exit(2);
}

async fn serve(port: u16, dir: Arc<PathBuf>, pipeline_flush: bool) {
    // Installed before `LISTENING` so a SIGTERM sent right after it is caught.
    let mut sigterm = signal(SignalKind::terminate())
        .unwrap_or_else(|e| fail(&format!("cannot install the SIGTERM handler: {e}")));
    let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
        .await
        .unwrap_or_else(|e| fail(&format!("cannot listen on 127.0.0.1:{port}: {e}")));
    let port = listener
        .local_addr()
        .unwrap_or_else(|e| fail(&format!("cannot read the listening address: {e}")))
        .port();
    {
        let mut stdout = std::io::stdout().lock();
        if writeln!(stdout, "LISTENING {port}")
            .and_then(|()| stdout.flush())
            .is_err()
        {
            fail("cannot write LISTENING to stdout");
        }
    }
    let mut http = http1::Builder::new();
    http.pipeline_flush(pipeline_flush);
    let http = Arc::new(http);
    loop {
        tokio::select! {
            _ = sigterm.recv() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    let (http, dir) = (Arc::clone(&http), Arc::clone(&dir));
                    tokio::spawn(async move {
                        let service = service_fn(move |req| handle(req, Arc::clone(&dir)));
                        // A client that goes away mid-request is its own business.
                        let _ = http.serve_connection(TokioIo::new(stream), service).await;
                    });
                }
                Err(e) => {
                    // Typically EMFILE: back off briefly instead of spinning.
                    eprintln!("switchboard-bench-hyper: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
        }
    }
}

fn full(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Response<Body> {
    let mut res = Response::new(Either::Left(Full::new(body.into())));
    *res.status_mut() = status;
    res.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    res
}

fn not_found() -> Response<Body> {
    full(StatusCode::NOT_FOUND, "text/plain", "Not Found")
}

/// A file name `/static/<name>` may serve: one path segment, no dot files.
fn safe_file_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && !name.contains("..")
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
}

async fn handle(req: Request<Incoming>, dir: Arc<PathBuf>) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path();
    let res = match (req.method(), path) {
        (&Method::GET, "/hello") => full(StatusCode::OK, "text/plain", HELLO),
        (&Method::GET, "/json") => {
            let body = serde_json::to_vec(&Message { message: HELLO }).unwrap_or_default();
            full(StatusCode::OK, "application/json", body)
        }
        (&Method::GET, p) if p.starts_with("/user/") => {
            let id = &p["/user/".len()..];
            if id.is_empty() || id.contains('/') {
                not_found()
            } else {
                full(
                    StatusCode::OK,
                    "text/plain",
                    Bytes::copy_from_slice(id.as_bytes()),
                )
            }
        }
        (&Method::GET, p) if p.starts_with("/static/") => {
            let name = &p["/static/".len()..];
            if safe_file_name(name) {
                file(dir.join(name)).await
            } else {
                not_found()
            }
        }
        (&Method::POST, "/echo") => echo(req).await,
        _ => not_found(),
    };
    Ok(res)
}

async fn echo(req: Request<Incoming>) -> Response<Body> {
    let too_large = || {
        full(
            StatusCode::PAYLOAD_TOO_LARGE,
            "text/plain",
            "Payload Too Large",
        )
    };
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    if declared.is_some_and(|n| n > BODY_LIMIT) {
        return too_large();
    }
    match Limited::new(req.into_body(), BODY_LIMIT).collect().await {
        Ok(collected) => full(
            StatusCode::OK,
            "application/octet-stream",
            collected.to_bytes(),
        ),
        Err(_) => too_large(),
    }
}

async fn file(path: PathBuf) -> Response<Body> {
    let Ok(file) = tokio::fs::File::open(&path).await else {
        return not_found();
    };
    let len = match file.metadata().await {
        Ok(m) if m.is_file() => m.len(),
        _ => return not_found(),
    };
    let frames: FileStream = ReaderStream::with_capacity(file, FILE_CHUNK)
        .map_ok(Frame::data as fn(Bytes) -> Frame<Bytes>);
    let mut res = Response::new(Either::Right(StreamBody::new(frames)));
    let headers = res.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    headers.insert(CONTENT_LENGTH, HeaderValue::from(len));
    res
}
