//! The failures the runtime itself reports (beyond the protocols' own and
//! the registry's): each one's stable code, the WebSocket close code or
//! HTTP status that goes with it, and what it means, stated once here. Call
//! sites name the constant; the catalogue (`docs/errors.md`, checked by a
//! test) is built from the same list, so the two cannot disagree.

/// One failure: its code is sent as the close reason (or first in the HTTP
/// body, or in a protocol GO_AWAY), so clients can branch on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failure {
    pub code: &'static str,
    /// A WebSocket close code (below 5000) or an HTTP status.
    pub status: u16,
    /// What a client is told after the code (`"<code>: <message>"`).
    pub message: &'static str,
    /// What it means, for the catalogue.
    pub description: &'static str,
}

impl Failure {
    const fn new(
        code: &'static str,
        status: u16,
        message: &'static str,
        description: &'static str,
    ) -> Self {
        Self {
            code,
            status,
            message,
            description,
        }
    }

    /// `"<code>: <message>"`: an HTTP body or a close reason.
    pub fn reason(&self) -> String {
        if self.message.is_empty() {
            self.code.to_owned()
        } else {
            format!("{}: {}", self.code, self.message)
        }
    }
}

pub const WS_SLOW_CONSUMER: Failure = Failure::new(
    "ERR_WS_SLOW_CONSUMER",
    1008,
    "",
    "The connection's outbound queue passed `maxBackpressure` under the `close` slow-consumer policy.",
);
pub const WS_IDLE_TIMEOUT: Failure = Failure::new(
    "ERR_WS_IDLE_TIMEOUT",
    1001,
    "",
    "Nothing arrived from the client for `idleTimeout`.",
);
pub const WORKER_DIED: Failure = Failure::new(
    "ERR_WORKER_DIED",
    1011,
    "",
    "The connection's worker thread died or was replaced by the watchdog.",
);
pub const SERVER_SHUTDOWN: Failure = Failure::new(
    "ERR_SERVER_SHUTDOWN",
    1001,
    "",
    "The server shut down and the drain timeout passed before the closing handshake finished.",
);
pub const SERVER_AT_CAPACITY: Failure = Failure::new(
    "ERR_SERVER_AT_CAPACITY",
    503,
    "too many connections",
    "`maxConnections` connections are open.",
);
pub const HTTP_REQUEST_TIMEOUT: Failure = Failure::new(
    "ERR_HTTP_REQUEST_TIMEOUT",
    408,
    "request head took too long",
    "The request head did not arrive within `handshakeTimeout`.",
);
pub const HTTP_NOT_FOUND: Failure = Failure::new(
    "ERR_HTTP_NOT_FOUND",
    404,
    "",
    "No route or static response at this path; also the error `res.file` gives when its file does not exist or its path is refused.",
);
pub const HTTP_METHOD_NOT_ALLOWED: Failure = Failure::new(
    "ERR_HTTP_METHOD_NOT_ALLOWED",
    405,
    "",
    "The path has routes, none for the request's method (the `Allow` header lists those it has).",
);
pub const HTTP_PRECONDITION_FAILED: Failure = Failure::new(
    "ERR_HTTP_PRECONDITION_FAILED",
    412,
    "",
    "A file's (`app.static`, `res.file`) `If-Match` or `If-Unmodified-Since` does not hold: the file changed.",
);
pub const HTTP_RANGE_NOT_SATISFIABLE: Failure = Failure::new(
    "ERR_HTTP_RANGE_NOT_SATISFIABLE",
    416,
    "",
    "A file's (`app.static`, `res.file`) `Range` starts past its end (`Content-Range: bytes */<size>` gives the size).",
);
pub const WS_NO_ROUTE: Failure = Failure::new(
    "ERR_WS_NO_ROUTE",
    404,
    "no WebSocket route at this path",
    "An upgrade request for a path with no WebSocket route.",
);
pub const WS_UPGRADE_REQUIRED: Failure = Failure::new(
    "ERR_WS_UPGRADE_REQUIRED",
    426,
    "this path speaks WebSocket",
    "A plain HTTP request for a WebSocket route.",
);
pub const WS_ORIGIN_REJECTED: Failure = Failure::new(
    "ERR_WS_ORIGIN_REJECTED",
    403,
    "origin not allowed",
    "The `Origin` is not in the route's `allowedOrigins`.",
);
pub const UPGRADE_TIMEOUT: Failure = Failure::new(
    "ERR_UPGRADE_TIMEOUT",
    503,
    "the upgrade hook did not answer in time",
    "The `upgrade` hook did not decide within `upgradeTimeout` (or its worker died).",
);
// The Switchboard protocol (docs/protocol.md §8). On a raw stream the code
// travels in a GO_AWAY; the close code is what JavaScript's close event
// (and a WebSocket client) sees.
pub const HANDSHAKE_TIMEOUT: Failure = Failure::new(
    "ERR_HANDSHAKE_TIMEOUT",
    1002,
    "",
    "A protocol client did not complete its preface and HELLO within `handshakeTimeout`.",
);
pub const HEARTBEAT_TIMEOUT: Failure = Failure::new(
    "ERR_HEARTBEAT_TIMEOUT",
    1001,
    "",
    "Nothing arrived on a protocol connection for twice `rpc.heartbeatInterval`.",
);
pub const GOING_AWAY: Failure = Failure::new(
    "ERR_GOING_AWAY",
    1001,
    "",
    "Graceful GO_AWAY (server shutdown or `connection.goAway()`): no new calls; in-flight calls complete.",
);
// Found by the TypeScript peer, which tracks credit and file sizes; the
// peer that finds them sends GO_AWAY with the code and closes.
pub const PROTOCOL_FLOW_CONTROL: Failure = Failure::new(
    "ERR_PROTOCOL_FLOW_CONTROL",
    1002,
    "",
    "Stream data beyond the credit the receiver granted (docs/protocol.md §7).",
);
pub const PROTOCOL_FILE_SIZE: Failure = Failure::new(
    "ERR_PROTOCOL_FILE_SIZE",
    1002,
    "",
    "A file's data did not total its declared size.",
);
pub const PROTOCOL_TEXT_MESSAGE: Failure = Failure::new(
    "ERR_PROTOCOL_TEXT_MESSAGE",
    1003,
    "",
    "A text message on a WebSocket that speaks the Switchboard protocol (it uses binary messages only).",
);
pub const SOCKJS_BROKEN_FRAMING: Failure = Failure::new(
    "ERR_SOCKJS_BROKEN_FRAMING",
    3000,
    "",
    "A message on a SockJS session's WebSocket that is not a JSON array of strings (or one JSON string): the session closes, as the protocol's reference server closes it (3000).",
);
// A SockJS session's HTTP transports. The texts after the codes are the
// protocol's own (its test suite looks for them in the bodies).
pub const SOCKJS_PAYLOAD_EXPECTED: Failure = Failure::new(
    "ERR_SOCKJS_PAYLOAD_EXPECTED",
    500,
    "Payload expected.",
    "An `xhr_send` or `jsonp_send` with an empty body (or a form without its `d` field): 500, the session goes on.",
);
pub const SOCKJS_BROKEN_JSON: Failure = Failure::new(
    "ERR_SOCKJS_BROKEN_JSON",
    500,
    "Broken JSON encoding.",
    "An `xhr_send` or `jsonp_send` whose payload is not a JSON array of strings: 500, none of its messages is delivered, the session goes on.",
);
pub const SOCKJS_CALLBACK_REQUIRED: Failure = Failure::new(
    "ERR_SOCKJS_CALLBACK_REQUIRED",
    500,
    "\"callback\" parameter required",
    "An `htmlfile` or `jsonp` request without its `c` (callback) query parameter.",
);
pub const SOCKJS_CALLBACK_INVALID: Failure = Failure::new(
    "ERR_SOCKJS_CALLBACK_INVALID",
    500,
    "invalid \"callback\" parameter",
    "An `htmlfile` or `jsonp` callback name with a character outside `[a-zA-Z0-9_.-]`, or longer than 32 bytes.",
);
pub const SOCKJS_MESSAGE_TOO_BIG: Failure = Failure::new(
    "ERR_SOCKJS_MESSAGE_TOO_BIG",
    1009,
    "Message too big",
    "A send to a SockJS session over the route's `maxPayloadLength`: the request gets 413, and the session closes with `c[1009,\"Message too big\"]` (its `close` event reports 1009).",
);

// The Switchboard protocol carried by a SockJS session
// (`app.sockjs(prefix, { rpc: true })`, docs/protocol.md, "Over SockJS").
pub const SOCKJS_BROKEN_BASE64: Failure = Failure::new(
    "ERR_SOCKJS_BROKEN_BASE64",
    1002,
    "a message is not padded standard base64",
    "A message sent to a SockJS session that carries the Switchboard protocol is not padded standard base64: the `xhr_send` gets 500, none of its later messages is delivered, and the session closes with a GO_AWAY and `c[1002,\"ERR_SOCKJS_BROKEN_BASE64\"]` (its `close` event reports 1002).",
);

/// Every failure above, for the catalogue.
pub const ALL: &[Failure] = &[
    WS_SLOW_CONSUMER,
    WS_IDLE_TIMEOUT,
    WORKER_DIED,
    SERVER_SHUTDOWN,
    SERVER_AT_CAPACITY,
    HTTP_REQUEST_TIMEOUT,
    HTTP_NOT_FOUND,
    HTTP_METHOD_NOT_ALLOWED,
    HTTP_PRECONDITION_FAILED,
    HTTP_RANGE_NOT_SATISFIABLE,
    WS_NO_ROUTE,
    WS_UPGRADE_REQUIRED,
    WS_ORIGIN_REJECTED,
    UPGRADE_TIMEOUT,
    HANDSHAKE_TIMEOUT,
    HEARTBEAT_TIMEOUT,
    GOING_AWAY,
    PROTOCOL_FLOW_CONTROL,
    PROTOCOL_FILE_SIZE,
    PROTOCOL_TEXT_MESSAGE,
    SOCKJS_BROKEN_FRAMING,
    SOCKJS_PAYLOAD_EXPECTED,
    SOCKJS_BROKEN_JSON,
    SOCKJS_CALLBACK_REQUIRED,
    SOCKJS_CALLBACK_INVALID,
    SOCKJS_MESSAGE_TOO_BIG,
    SOCKJS_BROKEN_BASE64,
];

/// Close codes are in the WebSocket range; the rest are HTTP statuses.
pub fn is_close_code(value: u16) -> bool {
    (1000..5000).contains(&value)
}
