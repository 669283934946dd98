//! Error codes the runtime itself produces (beyond the protocol's and the
//! registry's): close reasons and HTTP rejections. Each code is sent as the
//! close reason or the start of the HTTP body, so clients can branch on it.

/// `(code, close code or HTTP status, description)`: a close code is below
/// 1100; anything else is an HTTP status.
pub const ALL_ERROR_CODES: &[(&str, u16, &str)] = &[
    ("ERR_WS_SLOW_CONSUMER", 1008, "The connection's outbound queue passed `maxBackpressure` under the `close` slow-consumer policy."),
    ("ERR_WS_IDLE_TIMEOUT", 1001, "Nothing arrived from the client for `idleTimeout`."),
    ("ERR_WORKER_DIED", 1011, "The connection's worker thread died or was replaced by the watchdog."),
    ("ERR_SERVER_SHUTDOWN", 1001, "The server shut down and the drain timeout passed before the closing handshake finished."),
    ("ERR_SERVER_AT_CAPACITY", 503, "`maxConnections` connections are open."),
    ("ERR_HTTP_REQUEST_TIMEOUT", 408, "The request head did not arrive within `handshakeTimeout`."),
    ("ERR_HTTP_NOT_FOUND", 404, "No route or static response at this path."),
    ("ERR_HTTP_METHOD_NOT_ALLOWED", 405, "A static route was asked with a method other than GET or HEAD."),
    ("ERR_WS_NO_ROUTE", 404, "An upgrade request for a path with no WebSocket route."),
    ("ERR_WS_UPGRADE_REQUIRED", 426, "A plain HTTP request for a WebSocket route."),
    ("ERR_WS_ORIGIN_REJECTED", 403, "The `Origin` is not in the route's `allowedOrigins`."),
    ("ERR_WS_BAD_EXTENSIONS", 400, "`Sec-WebSocket-Extensions` is malformed."),
    ("ERR_UPGRADE_TIMEOUT", 503, "The `upgrade` hook did not decide within `upgradeTimeout` (or its worker died)."),
    // The Switchboard protocol (docs/protocol.md §8). On a raw stream the
    // code travels in a GO_AWAY; the close code is what JavaScript's close
    // event (and a WebSocket client) sees.
    ("ERR_HANDSHAKE_TIMEOUT", 1002, "A protocol client did not complete its preface and HELLO within `handshakeTimeout`."),
    ("ERR_HEARTBEAT_TIMEOUT", 1001, "Nothing arrived on a protocol connection for twice `rpc.heartbeatInterval`."),
    ("ERR_GOING_AWAY", 1001, "Graceful GO_AWAY (server shutdown or `connection.goAway()`): no new calls; in-flight calls complete."),
    // Found by the TypeScript peer, which tracks credit and file sizes; the
    // peer that finds them sends GO_AWAY with the code and closes.
    ("ERR_PROTOCOL_FLOW_CONTROL", 1002, "Stream data beyond the credit the receiver granted (docs/protocol.md §7)."),
    ("ERR_PROTOCOL_FILE_SIZE", 1002, "A file's data did not total its declared size."),
    ("ERR_PROTOCOL_TEXT_MESSAGE", 1003, "A text message on a WebSocket that speaks the Switchboard protocol (it uses binary messages only)."),
];

/// Close codes are in the WebSocket range; the rest are HTTP statuses.
pub fn is_close_code(value: u16) -> bool {
    (1000..5000).contains(&value)
}
