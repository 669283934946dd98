//! The per-message and per-batch operations (`send`, `publish` in
//! `raw.rs`, `drainEvents` here) as free functions taking the server's id,
//! rather than methods of `ServerHandle`.
//!
//! napi-rs 3 registers every `&self` receiver of a class method in a
//! process-wide borrow table behind a mutex, on every call. That was about
//! 4% of the server's CPU in the echo profile, and the mutex is shared by
//! every worker thread. A free function skips it; the server is found
//! through a per-thread cache instead of the registry's lock.

use std::cell::RefCell;
use std::sync::{Arc, Weak};

use napi::bindgen_prelude::{Buffer, Either};
use napi_derive::napi;
use switchboard_runtime::Server;

use crate::SERVERS;

thread_local! {
    /// The server this thread used last (a thread serves one server in
    /// practice). Weak, so the cache never keeps a closed server alive.
    static LAST_SERVER: RefCell<Option<(u32, Weak<Server>)>> = const { RefCell::new(None) };
}

/// Run `f` on server `id`; `None` when no such server is open.
pub(crate) fn with_server<R>(id: u32, f: impl FnOnce(&Server) -> R) -> Option<R> {
    let cached = LAST_SERVER.with(|last| match &*last.borrow() {
        Some((cached_id, server)) if *cached_id == id => server.upgrade(),
        _ => None,
    });
    let server = match cached {
        Some(server) => server,
        None => {
            let server: Arc<Server> = SERVERS.lock().get(&id).cloned()?;
            LAST_SERVER.with(|last| *last.borrow_mut() = Some((id, Arc::downgrade(&server))));
            server
        }
    };
    Some(f(&server))
}

/// Take every event queued for worker `index` of server `server`, as one
/// buffer (empty when there is none); when `MESSAGE_OWNED` events are among
/// them, an array instead: the events, then the buffers they refer to
/// (each handed over without a copy).
#[napi(ts_return_type = "Buffer | Buffer[]")]
pub fn drain_events(server: u32, index: u32) -> Either<Buffer, Vec<Buffer>> {
    let drained = with_server(server, |s| {
        s.queue(index as usize).map(|queue| queue.drain())
    })
    .flatten()
    .unwrap_or_default();
    if drained.owned.is_empty() {
        return Either::A(drained.events.into());
    }
    let mut parts = Vec::with_capacity(1 + drained.owned.len());
    parts.push(drained.events.into());
    parts.extend(drained.owned.into_iter().map(Buffer::from));
    Either::B(parts)
}

/// The handlers of HTTP connection `connection` consumed `bytes` more of
/// its request bodies: the core reads on (see `http_body_window`).
#[napi]
pub fn http_body_consumed(server: u32, connection: i64, bytes: f64) {
    let bytes = if bytes.is_finite() && bytes > 0.0 {
        bytes as u64
    } else {
        0
    };
    with_server(server, |s| {
        s.http_body_consumed(crate::id_from_js(connection), bytes)
    });
}

/// The handler of body number `body` of HTTP connection `connection`
/// answered without reading all of it: the core discards the rest.
#[napi]
pub fn http_discard_body(server: u32, connection: i64, body: u32) {
    with_server(server, |s| {
        s.http_discard_body(crate::id_from_js(connection), body)
    });
}

/// Answer the first response in line of HTTP connection `connection` with
/// a file (`res.file`): the order is handed to the connection's I/O
/// thread, which opens and sends the file (this thread touches no disk)
/// and reports how it went (`HTTP_FILE_DONE`). `headers` is the handler's
/// header lines (`Name: value`, each ending with CRLF), `requestHeaders`
/// the request's lines as received, `flags` the `FILE_*` bits
/// (`http/flags.ts`) with the route from `RESPOND_ROUTE_SHIFT` up, and
/// `started` its record's (the response is counted when the file ends).
/// Returns the send status (3: the connection is gone).
#[allow(clippy::too_many_arguments)]
#[napi]
pub fn http_file(
    server: u32,
    connection: i64,
    status: u32,
    headers: String,
    path: String,
    root: Option<String>,
    request_headers: Buffer,
    flags: u32,
    max_age: u32,
    started: i64,
) -> u32 {
    let order = switchboard_runtime::http::FileOrder {
        status: u16::try_from(status).unwrap_or(200),
        headers: headers.into_bytes(),
        path: path.into_bytes(),
        root: root.map(std::path::PathBuf::from),
        request_headers: request_headers.to_vec(),
        flags,
        max_age,
        started: started.max(0) as u64,
    };
    with_server(server, |s| {
        s.http_file(crate::id_from_js(connection), order) as u32
    })
    .unwrap_or(3)
}

/// The `Content-Type` the core sends a file with, by its name's extension
/// (`application/octet-stream` for any other): what `res.attachment` and
/// `inject()` use, so they cannot disagree with the core.
#[napi]
pub fn content_type_of(name: String) -> &'static str {
    switchboard_runtime::http::content_type_of(std::path::Path::new(&name))
}
