//! The close codes and reasons a SockJS server sends, in `c[code,"reason"]`
//! frames or, on the WebSocket transports, as the WebSocket close.
//!
//! Codes follow the WebSocket ranges (RFC 6455 §7.4.2): 1000-2999 for the
//! protocol, 3000-4999 for libraries and applications. sockjs-client hands
//! the code and reason of a `c` frame to the application's `onclose`.

/// A close code with its reason text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CloseReason {
    /// The close code.
    pub code: u16,
    /// The reason, written verbatim (JSON-quoted) in the frame.
    pub reason: &'static str,
}

/// 1000 "Normal closure": the application closed the session without
/// naming a code (sockjs-node's default, which sockjs-client also uses).
pub const NORMAL_CLOSURE: CloseReason = CloseReason {
    code: 1000,
    reason: "Normal closure",
};

/// 1002 "Connection interrupted": sent to a receiving request on a session
/// whose previous receiving request was aborted by the network, since
/// frames may have been lost (`HandlingClose.test_abort_xhr_polling`
/// accepts this or a fresh open frame).
pub const CONNECTION_INTERRUPTED: CloseReason = CloseReason {
    code: 1002,
    reason: "Connection interrupted",
};

/// 2010 "Another connection still open": sent, followed by the end of the
/// response, to a second receiving request on a session that already has
/// one (`Protocol.test_simpleSession`, `HandlingClose.test_close_request`).
/// The session itself stays open.
pub const ANOTHER_CONNECTION_STILL_OPEN: CloseReason = CloseReason {
    code: 2010,
    reason: "Another connection still open",
};

/// 3000 "Go away!": not a protocol rule but the reason the test suite's
/// `close` service closes every session with (`Protocol.test_closeSession`
/// and others expect `c[3000,"Go away!"]`); a conformance server uses it.
pub const GO_AWAY: CloseReason = CloseReason {
    code: 3000,
    reason: "Go away!",
};

/// 3000 "Broken framing.": the WebSocket close sockjs-node sends when a
/// client message on the SockJS WebSocket transport is not valid JSON (see
/// [`super::parse_websocket_message`]). The suite only checks that the
/// connection ends.
pub const BROKEN_FRAMING: CloseReason = CloseReason {
    code: 3000,
    reason: "Broken framing.",
};

/// 3000 "No response from heartbeat": the WebSocket close sockjs-node sends
/// when a WebSocket ping it sent in place of a heartbeat frame went
/// unanswered for 10 s.
pub const NO_RESPONSE_FROM_HEARTBEAT: CloseReason = CloseReason {
    code: 3000,
    reason: "No response from heartbeat",
};
