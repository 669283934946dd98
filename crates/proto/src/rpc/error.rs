//! The one error type of the wire protocol: the connection errors of
//! `docs/protocol.md` §8 that a codec or [`super::SequenceCheck`] can detect
//! without the state of calls and streams. Each maps to a stable string code
//! (sent in GO_AWAY and surfaced to JavaScript) and to a WebSocket close code.

use std::fmt;

/// WebSocket close code for a protocol error (RFC 6455 §7.4.1).
const CLOSE_PROTOCOL_ERROR: u16 = 1002;
/// WebSocket close code for a message too big to process.
const CLOSE_MESSAGE_TOO_BIG: u16 = 1009;

/// Why a peer's bytes were rejected. After any of these the connection must
/// end: send GO_AWAY with [`ProtocolError::code`] if possible, then close (over
/// WebSocket with [`ProtocolError::ws_close_code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtocolError {
    /// The first three bytes are not `SWB`.
    Preface,
    /// The preface's version byte is not one we speak; carries it.
    Version(u8),
    /// The first frame is not HELLO / WELCOME, a handshake frame came later,
    /// or a handshake field is invalid; carries what was wrong.
    Handshake(&'static str),
    /// The client offered no codec the server speaks.
    Codec,
    /// A frame type this version does not define; carries it.
    FrameType(u8),
    /// A frame's `length` is above the receiver's `maxFrameSize`.
    FrameTooLarge {
        /// The announced body length.
        length: u64,
        /// The receiver's limit.
        max: usize,
    },
    /// A body whose fields do not fit, a reserved bit set, an empty action,
    /// bad UTF-8 or ASCII, a zero count; carries what was wrong.
    Malformed(&'static str),
    /// A MESSAGE whose call id does not increase (or a response or CANCEL
    /// naming a call id never used, found by the connection layer).
    CallId {
        /// The offending id.
        call_id: u64,
        /// The last valid id before it.
        last: u64,
    },
    /// A STREAM_OPEN whose stream id does not increase (or data for a stream
    /// that is not open, or CREDIT or STOP for one never opened, found by
    /// the connection layer).
    StreamId {
        /// The offending id.
        stream_id: u64,
        /// The last valid id before it.
        last: u64,
    },
    /// A STREAM_OPEN that does not directly follow its MESSAGE or RESPONSE,
    /// or another frame where a STREAM_OPEN was due; carries which.
    Sequence(&'static str),
    /// A frame that uses a feature the handshake did not put in effect (a
    /// plain STREAM_OPEN without streams, one with FILE without files, a
    /// CANCEL without cancellation); carries which.
    Feature(&'static str),
}

/// Every error code of the wire protocol that this module reports:
/// `(code, WebSocket close code, description)`. The connection-level codes
/// of §8 that need call or stream state (`ERR_PROTOCOL_FLOW_CONTROL`,
/// `ERR_PROTOCOL_FILE_SIZE`, timeouts, go-away) belong to the layer that
/// detects them.
pub const ALL_ERROR_CODES: &[(&str, u16, &str)] = &[
    (
        "ERR_PROTOCOL_PREFACE",
        CLOSE_PROTOCOL_ERROR,
        "The peer's first bytes were not the Switchboard preface.",
    ),
    (
        "ERR_PROTOCOL_VERSION",
        CLOSE_PROTOCOL_ERROR,
        "The peer speaks a protocol version this side does not.",
    ),
    (
        "ERR_PROTOCOL_HANDSHAKE",
        CLOSE_PROTOCOL_ERROR,
        "The first frame was not HELLO or WELCOME, a handshake frame came later, or its fields were invalid.",
    ),
    (
        "ERR_PROTOCOL_CODEC",
        CLOSE_PROTOCOL_ERROR,
        "The peers have no codec in common.",
    ),
    (
        "ERR_PROTOCOL_FRAME_TYPE",
        CLOSE_PROTOCOL_ERROR,
        "A frame had an unknown type.",
    ),
    (
        "ERR_PROTOCOL_FRAME_TOO_LARGE",
        CLOSE_MESSAGE_TOO_BIG,
        "A frame body exceeded the receiver's maximum frame size (or a HELLO or WELCOME body the 65,536-byte handshake limit).",
    ),
    (
        "ERR_PROTOCOL_MALFORMED",
        CLOSE_PROTOCOL_ERROR,
        "A frame's fields did not fit its body, set reserved bits or held invalid values.",
    ),
    (
        "ERR_PROTOCOL_CALL_ID",
        CLOSE_PROTOCOL_ERROR,
        "A call id did not increase, or a response or CANCEL named a call id never used.",
    ),
    (
        "ERR_PROTOCOL_STREAM_ID",
        CLOSE_PROTOCOL_ERROR,
        "A stream id did not increase, data arrived for a stream that is not open, or CREDIT or STOP named a stream never opened.",
    ),
    (
        "ERR_PROTOCOL_SEQUENCE",
        CLOSE_PROTOCOL_ERROR,
        "Attachments did not immediately follow their message or response.",
    ),
    (
        "ERR_PROTOCOL_FEATURE",
        CLOSE_PROTOCOL_ERROR,
        "A frame used a feature (streams, files, cancellation) that the handshake did not put in effect.",
    ),
];

impl ProtocolError {
    /// Position of this variant's row in [`ALL_ERROR_CODES`].
    fn index(&self) -> usize {
        match self {
            ProtocolError::Preface => 0,
            ProtocolError::Version(_) => 1,
            ProtocolError::Handshake(_) => 2,
            ProtocolError::Codec => 3,
            ProtocolError::FrameType(_) => 4,
            ProtocolError::FrameTooLarge { .. } => 5,
            ProtocolError::Malformed(_) => 6,
            ProtocolError::CallId { .. } => 7,
            ProtocolError::StreamId { .. } => 8,
            ProtocolError::Sequence(_) => 9,
            ProtocolError::Feature(_) => 10,
        }
    }

    /// The stable string code, e.g. `ERR_PROTOCOL_MALFORMED`.
    pub fn code(&self) -> &'static str {
        ALL_ERROR_CODES[self.index()].0
    }

    /// The WebSocket close code: 1009 for an oversized frame, else 1002.
    pub fn ws_close_code(&self) -> u16 {
        ALL_ERROR_CODES[self.index()].1
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtocolError::Preface => f.write_str("the peer did not start with the SWB preface"),
            ProtocolError::Version(v) => write!(f, "unsupported protocol version {v}"),
            ProtocolError::Handshake(why) => write!(f, "invalid handshake: {why}"),
            ProtocolError::Codec => f.write_str("no codec in common"),
            ProtocolError::FrameType(t) => write!(f, "unknown frame type 0x{t:02x}"),
            ProtocolError::FrameTooLarge { length, max } => {
                write!(f, "frame body of {length} bytes exceeds the limit of {max}")
            }
            ProtocolError::Malformed(why) => write!(f, "malformed frame: {why}"),
            ProtocolError::CallId { call_id, last } => {
                write!(f, "call id {call_id} is invalid after call id {last}")
            }
            ProtocolError::StreamId { stream_id, last } => {
                write!(f, "stream id {stream_id} is invalid after stream id {last}")
            }
            ProtocolError::Sequence(why) => write!(f, "frame out of sequence: {why}"),
            ProtocolError::Feature(why) => write!(f, "feature not in effect: {why}"),
        }
    }
}

impl std::error::Error for ProtocolError {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// One value of every variant; adding a variant without a row fails here.
    fn every_variant() -> Vec<ProtocolError> {
        vec![
            ProtocolError::Preface,
            ProtocolError::Version(2),
            ProtocolError::Handshake("x"),
            ProtocolError::Codec,
            ProtocolError::FrameType(0x10),
            ProtocolError::FrameTooLarge { length: 9, max: 8 },
            ProtocolError::Malformed("x"),
            ProtocolError::CallId {
                call_id: 1,
                last: 1,
            },
            ProtocolError::StreamId {
                stream_id: 1,
                last: 1,
            },
            ProtocolError::Sequence("x"),
            ProtocolError::Feature("x"),
        ]
    }

    #[test]
    fn table_and_enum_agree() {
        let variants = every_variant();
        assert_eq!(variants.len(), ALL_ERROR_CODES.len());
        let codes: HashSet<_> = variants.iter().map(|e| e.code()).collect();
        assert_eq!(codes.len(), ALL_ERROR_CODES.len(), "codes must be unique");
        for (code, close, description) in ALL_ERROR_CODES {
            assert!(code.starts_with("ERR_PROTOCOL_"), "{code}");
            assert!(matches!(close, 1002 | 1009), "{code}");
            assert!(description.ends_with('.'), "{code}");
        }
        // No code is shared with the other layers of the crate.
        for (code, _, _) in crate::ws::ALL_ERROR_CODES
            .iter()
            .chain(crate::http::ALL_ERROR_CODES)
        {
            assert!(!codes.contains(code), "{code}");
        }
    }

    #[test]
    fn close_codes_and_display() {
        let big = ProtocolError::FrameTooLarge {
            length: 2000,
            max: 1024,
        };
        assert_eq!(big.ws_close_code(), 1009);
        assert_eq!(big.code(), "ERR_PROTOCOL_FRAME_TOO_LARGE");
        assert_eq!(
            big.to_string(),
            "frame body of 2000 bytes exceeds the limit of 1024"
        );
        assert_eq!(
            ProtocolError::Malformed("empty action").ws_close_code(),
            1002
        );
        assert_eq!(
            ProtocolError::FrameType(0x10).to_string(),
            "unknown frame type 0x10"
        );
        assert_eq!(
            ProtocolError::Malformed("empty action").to_string(),
            "malformed frame: empty action"
        );
    }
}
