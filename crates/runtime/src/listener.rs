//! Accepting connections: a connection limit, back-off on accept errors, and
//! the end of accepting when the server begins to shut down.

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, UnixListener};

use crate::connection::{self, transport};
use crate::server::Shared;
use crate::tls::TlsSocket;

/// The first and the longest pause after a failed `accept`. Running out of
/// file descriptors (EMFILE) is the usual cause: spinning on it would burn a
/// core while connections close and free descriptors.
const ACCEPT_BACKOFF_START: Duration = Duration::from_millis(5);
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// What a TCP listener serves.
#[derive(Clone)]
pub enum Endpoint {
    /// HTTP: static routes and WebSocket upgrades.
    Http,
    /// The Switchboard protocol, from the first byte.
    Wire,
    /// The Switchboard protocol inside TLS.
    WireTls(Arc<rustls::ServerConfig>),
}

pub async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, endpoint: Endpoint) {
    let accept = || async {
        let (stream, remote) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        Ok((stream, remote))
    };
    let refused = endpoint.clone();
    run(
        &shared,
        accept,
        |stream, remote, shared| {
            let endpoint = endpoint.clone();
            async move {
                match endpoint {
                    Endpoint::Http => connection::run(stream, remote, shared).await,
                    Endpoint::Wire => {
                        let remote = remote.to_string();
                        connection::run_wire(stream, remote, shared, transport::TCP).await
                    }
                    Endpoint::WireTls(config) => {
                        // Fails only when rustls cannot allocate its state.
                        if let Ok(socket) = TlsSocket::new(stream, config) {
                            let remote = remote.to_string();
                            // Boxed: this future holds rustls's connection
                            // state inline, and an async block is as large
                            // as its largest arm, so unboxed every plain
                            // connection's task paid for it too (an idle
                            // WebSocket connection went from 6.6 to 22 kB).
                            Box::pin(connection::run_wire(socket, remote, shared, transport::TLS))
                                .await;
                        }
                    }
                }
            }
        },
        move |stream| refuse(stream, refused.clone()),
    )
    .await;
}

pub async fn accept_unix_loop(listener: UnixListener, shared: Arc<Shared>) {
    let accept = || async {
        let (stream, remote) = listener.accept().await?;
        Ok((stream, remote))
    };
    run(
        &shared,
        accept,
        |stream, remote, shared| async move {
            let remote = remote
                .as_pathname()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "unix".to_owned());
            connection::run_wire(stream, remote, shared, transport::UNIX).await
        },
        |stream| refuse(stream, Endpoint::Wire),
    )
    .await;
}

/// The loop both listener kinds share: accept, admit under the connection
/// limit, spawn the connection's task (or refuse it), back off on errors.
async fn run<S, R, A, AF, C, CF, F, FF>(shared: &Arc<Shared>, accept: A, connect: C, refuse: F)
where
    S: crate::socket::Socket,
    R: Send + 'static,
    A: Fn() -> AF,
    AF: Future<Output = io::Result<(S, R)>>,
    C: Fn(S, R, Arc<Shared>) -> CF,
    CF: Future<Output = ()> + Send + 'static,
    F: Fn(S) -> FF,
    FF: Future<Output = ()> + Send + 'static,
{
    let mut backoff = ACCEPT_BACKOFF_START;
    loop {
        let accepted = tokio::select! {
            _ = shared.stopping.cancelled() => return,
            accepted = accept() => accepted,
        };
        let (stream, remote) = match accepted {
            Ok(pair) => {
                backoff = ACCEPT_BACKOFF_START;
                pair
            }
            Err(_) => {
                tokio::select! {
                    _ = shared.stopping.cancelled() => return,
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(ACCEPT_BACKOFF_MAX);
                continue;
            }
        };
        match shared.permits.clone().try_acquire_owned() {
            Ok(permit) => {
                let task = connect(stream, remote, shared.clone());
                shared.tracker.spawn(async move {
                    task.await;
                    drop(permit);
                });
            }
            Err(_) => {
                // Over `max_connections`: say so instead of leaving the
                // client in the backlog.
                crate::stats::add(&shared.stats.handshakes_rejected, 1);
                shared.tracker.spawn(refuse(stream));
            }
        }
    }
}

/// Tell a client over the connection limit why it is refused: a `503` on
/// HTTP, a preface and GO_AWAY on the protocol.
async fn refuse<S: crate::socket::Socket>(mut stream: S, endpoint: Endpoint) {
    const REASON: &str = "ERR_SERVER_AT_CAPACITY: too many connections";
    let response = match endpoint {
        Endpoint::Http => switchboard_proto::http::error_response(503, REASON, &[]),
        // Saying why would take a TLS handshake: just close.
        Endpoint::WireTls(_) => Vec::new(),
        Endpoint::Wire => {
            let mut out = switchboard_proto::wire::PREFACE.to_vec();
            switchboard_proto::wire::encode_go_away(0, "ERR_SERVER_AT_CAPACITY", REASON, &mut out);
            out
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), write_all(&mut stream, &response)).await;
    let _ = stream.shutdown().await;
}

async fn write_all<S: crate::socket::Socket>(stream: &mut S, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        stream.writable().await?;
        match stream.try_write_vectored(&[io::IoSlice::new(bytes)]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
