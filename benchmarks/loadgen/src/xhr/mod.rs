//! SockJS's xhr-streaming transport (`--protocol sockjs-xhr-streaming`):
//! the scenarios of SCENARIOS.md in SockJS framing over plain HTTP/1.1
//! requests, as sockjs-client uses them when WebSockets are not available.
//!
//! Each client is a SockJS session with two connections, as a browser has:
//!
//! - the stream: `POST <prefix>/<server>/<session>/xhr_streaming`, whose
//!   response (chunked, or until the close for HTTP/1.0) carries the
//!   prelude (2048 `h` and `\n`) and then frames, one per line: `o`, `h`,
//!   `a[...]` (each message in the array counts), `c[...]`. When the server
//!   ends the response (after its response limit, 128 KiB by default in
//!   sockjs-node) the client asks again at once for the same session, on
//!   the same connection when it was kept alive; the session lives on and
//!   the server keeps what it sends meanwhile.
//! - the sends: `POST <prefix>/<server>/<session>/xhr_send` with a JSON
//!   array of strings, answered `204`, one in flight per session; messages
//!   sent meanwhile go together in the next (`request.rs`). This connection
//!   opens when the first batch goes and again whenever the server has
//!   closed it (Node closes an idle keep-alive connection after 5 s); idle
//!   sessions never open it.
//!
//! Payloads, stamps and latency are the WebSocket framings' (`payload.rs`,
//! a message stamped when it is queued). Files: `stream.rs` (the stream's
//! bytes to frames, pure), `request.rs` (the requests, pure), `client.rs`
//! (a client's state), `engine.rs` (the loop), `connect.rs` (opening
//! legs), `read.rs` (what arrives).

mod client;
mod connect;
mod engine;
mod read;
mod request;
mod stream;

pub use engine::Engine;
#[cfg(test)]
mod selftest;
