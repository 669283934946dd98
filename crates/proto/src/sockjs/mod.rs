//! The SockJS protocol as a pure codec: URL layout, frames, client
//! payloads, escaping and the fixed documents, for serving `sockjs-client`
//! 1.x natively. No sockets, timers or sessions live here; the runtime
//! keeps sessions and calls these functions to classify requests, parse
//! what clients send and write what they receive.
//!
//! The protocol is defined by its test suite, published as annotated
//! Python: <https://sockjs.github.io/sockjs-protocol/sockjs-protocol-0.3.3.html>
//! (repository `sockjs/sockjs-protocol`; `sockjs-protocol-0.3.3.py` and the
//! current `sockjs-protocol.py`). Section names quoted in the docs of this
//! module ("Session URLs", "JSON Unicode Encoding"...) and test names
//! (`XhrPolling.test_invalid_json`) are that suite's. Where the suite
//! leaves a detail open, sockjs-node 0.3.24 (`lib/*.js`), the reference
//! server, decides; each place says so.
//!
//! - [`Route`] classifies a path under the service prefix
//!   ([`strip_prefix`]): greeting, `/info`, the iframe page, the raw
//!   WebSocket, or a session URL `/{server}/{session}/{transport}` with a
//!   [`Transport`] ("Static URLs", "Session URLs"); [`Route::allows`] and
//!   the `Transport` methods give each one's method, content type, status
//!   and caching rule;
//! - [`Framing`] writes the frames `o`, `h`, `a[...]`, `c[code,"reason"]`
//!   and each receiving transport's prelude and wrapping ("Protocol and
//!   framing", "XhrStreaming", "EventSource", "HtmlFile", "JsonpPolling");
//! - [`write_quoted`] is the SockJS JSON string quoting, which escapes
//!   [`SOCKJS_ESCAPED_RANGES`] beyond what JSON requires ("JSON Unicode
//!   Encoding");
//! - [`parse_xhr_send`], [`parse_jsonp_send`], [`parse_websocket_message`]
//!   parse what clients send into [`Messages`], with a strict parser for
//!   JSON arrays of strings; errors are [`PayloadError`] with the
//!   protocol's exact texts;
//! - [`write_carried_message`] and [`decode_carried`] carry the
//!   Switchboard protocol's frames in SockJS messages, as base64;
//! - [`Callback`] validates the jsonp and htmlfile callback name
//!   ([`CallbackError`]);
//! - [`GREETING`], [`Info`] and [`IframePage`] are the fixed documents;
//!   the `close` constants ([`GO_AWAY`], [`ANOTHER_CONNECTION_STILL_OPEN`],
//!   ...) and the header values and defaults ([`NO_CACHE`],
//!   [`CACHE_ONE_YEAR`], [`DEFAULT_HEARTBEAT_DELAY`], ...) are the rest
//!   of the protocol's data.
//!
//! Where the 0.3.3 suite and the current one differ, this module follows
//! the current one and sockjs-node 0.3.24, which sockjs-client 1.x is
//! developed against: jsonp responses start with `/**/`, `Cache-Control`
//! carries `no-transform`, and callback names are validated. Run against
//! `sockjs-protocol-0.3.3.py`, the jsonp body and `verify_not_cached`
//! checks would fail on exactly those bytes.
//!
//! Memory: writers append to the caller's `Vec<u8>` and allocate nothing
//! else; parsers borrow the request body and allocate only for message
//! strings that contain escapes (and `jsonp_send` decodes its form field
//! into a scratch buffer the caller keeps).
//!
//! ```
//! use switchboard_proto::sockjs::{parse_xhr_send, Framing, Route, Transport};
//!
//! let route = Route::parse("/000/f3k2/xhr_send").unwrap();
//! assert!(matches!(route, Route::Session { transport: Transport::XhrSend, .. }));
//! let echoed: Vec<_> = parse_xhr_send(br#"["hello"]"#).unwrap().collect();
//!
//! let mut out = Vec::new();
//! let polling = Framing::for_transport(Transport::XhrPolling, None).unwrap();
//! polling.write_messages(&mut out, &echoed);
//! assert_eq!(out, b"a[\"hello\"]\n");
//! ```

mod callback;
mod carriage;
mod close;
mod documents;
mod escape;
mod form;
mod frame;
mod json;
mod payload;
mod route;
mod rules;
mod transport;

#[cfg(test)]
mod callback_tests;
#[cfg(test)]
mod carriage_tests;
#[cfg(test)]
mod documents_tests;
#[cfg(test)]
mod escape_tests;
#[cfg(test)]
mod frame_tests;
#[cfg(test)]
mod payload_tests;
#[cfg(test)]
mod route_tests;

pub use callback::{Callback, CallbackError, MAX_CALLBACK_LEN};
pub use carriage::{carried_len, decode_carried, write_carried_message, BrokenBase64};
pub use close::{
    CloseReason, ANOTHER_CONNECTION_STILL_OPEN, BROKEN_FRAMING, CONNECTION_INTERRUPTED, GO_AWAY,
    NORMAL_CLOSURE, NO_RESPONSE_FROM_HEARTBEAT,
};
pub use documents::{etag_for, IframePage, Info, DEFAULT_SOCKJS_URL, GREETING};
pub use escape::{is_sockjs_escaped, write_quoted, SOCKJS_ESCAPED_RANGES};
pub use frame::{write_htmlfile_prelude, Framing, EVENTSOURCE_PRELUDE, XHR_STREAMING_PRELUDE};
pub use json::Messages;
pub use payload::{parse_jsonp_send, parse_websocket_message, parse_xhr_send, PayloadError};
pub use route::{strip_prefix, Route};
pub use rules::{
    ACCESS_CONTROL_MAX_AGE, CACHE_ONE_YEAR, CONTENT_TYPE_EVENT_STREAM, CONTENT_TYPE_HTML,
    CONTENT_TYPE_JAVASCRIPT, CONTENT_TYPE_JSON, CONTENT_TYPE_PLAIN, DEFAULT_DISCONNECT_DELAY,
    DEFAULT_HEARTBEAT_DELAY, DEFAULT_RESPONSE_LIMIT, JSONP_SEND_OK, NOSNIFF, NO_CACHE,
    ONE_YEAR_SECS, WEBSOCKET_UPGRADE_REQUIRED,
};
pub use transport::{Transport, TransportRole};
