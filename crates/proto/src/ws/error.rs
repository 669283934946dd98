//! The one error type of the WebSocket layer. Every variant maps to a stable
//! string code (surfaced to JavaScript) and to the close code the connection
//! must be failed with (RFC 6455 §7.4.1).

use std::fmt;

use super::close::{
    INVALID_PAYLOAD as CLOSE_INVALID_PAYLOAD, MESSAGE_TOO_BIG as CLOSE_MESSAGE_TOO_BIG,
    PROTOCOL_ERROR as CLOSE_PROTOCOL_ERROR,
};

/// Why the decoder failed the connection. After any of these the connection
/// must be closed with [`ProtocolError::close_code`]; the decoder ignores
/// further input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtocolError {
    /// A reserved opcode (3-7, 0xB-0xF); carries the opcode.
    InvalidOpcode(u8),
    /// A server received an unmasked frame (RFC 6455 §5.1).
    UnmaskedFrame,
    /// A client received a masked frame (RFC 6455 §5.1).
    MaskedFrame,
    /// RSV2/RSV3 set, RSV1 set without permessage-deflate, or RSV1 on a
    /// control or continuation frame (RFC 7692 §6).
    ReservedBits,
    /// A control frame with a payload longer than 125 bytes.
    ControlFrameTooBig,
    /// A control frame without FIN.
    FragmentedControl,
    /// A continuation frame with no fragmented message in progress.
    UnexpectedContinuation,
    /// A new text/binary frame while a fragmented message is in progress.
    ExpectedContinuation,
    /// The message (after reassembly and inflation) exceeds the configured
    /// maximum payload length.
    MessageTooBig,
    /// The message has more fragments than the configured maximum.
    TooManyFragments,
    /// A text message or close reason that is not valid UTF-8.
    InvalidUtf8,
    /// A close frame with a code that may not appear on the wire; carries it.
    InvalidCloseCode(u16),
    /// A close frame whose payload is exactly one byte long.
    InvalidClosePayload,
    /// A 64-bit payload length with its most significant bit set.
    InvalidLength,
    /// A compressed message that is not a valid DEFLATE stream.
    Inflate,
}

/// Every error code of the WebSocket layer: `(code, close code, description)`.
/// Kept in sync with `docs/errors.md` by a test in the workspace and with the
/// enum by the tests below.
pub const ALL_ERROR_CODES: &[(&str, u16, &str)] = &[
    (
        "ERR_WS_INVALID_OPCODE",
        CLOSE_PROTOCOL_ERROR,
        "A frame used a reserved opcode.",
    ),
    (
        "ERR_WS_UNMASKED_FRAME",
        CLOSE_PROTOCOL_ERROR,
        "A client sent an unmasked frame.",
    ),
    (
        "ERR_WS_MASKED_FRAME",
        CLOSE_PROTOCOL_ERROR,
        "A server sent a masked frame.",
    ),
    (
        "ERR_WS_RESERVED_BITS",
        CLOSE_PROTOCOL_ERROR,
        "A frame set reserved bits that no negotiated extension defines.",
    ),
    (
        "ERR_WS_CONTROL_FRAME_TOO_BIG",
        CLOSE_PROTOCOL_ERROR,
        "A control frame carried more than 125 bytes.",
    ),
    (
        "ERR_WS_FRAGMENTED_CONTROL",
        CLOSE_PROTOCOL_ERROR,
        "A control frame was fragmented.",
    ),
    (
        "ERR_WS_UNEXPECTED_CONTINUATION",
        CLOSE_PROTOCOL_ERROR,
        "A continuation frame arrived with no fragmented message in progress.",
    ),
    (
        "ERR_WS_EXPECTED_CONTINUATION",
        CLOSE_PROTOCOL_ERROR,
        "A new data frame arrived while a fragmented message was in progress.",
    ),
    (
        "ERR_WS_MESSAGE_TOO_BIG",
        CLOSE_MESSAGE_TOO_BIG,
        "A message exceeded the maximum payload length.",
    ),
    (
        "ERR_WS_TOO_MANY_FRAGMENTS",
        CLOSE_MESSAGE_TOO_BIG,
        "A message exceeded the maximum number of fragments.",
    ),
    (
        "ERR_WS_INVALID_UTF8",
        CLOSE_INVALID_PAYLOAD,
        "A text message or close reason was not valid UTF-8.",
    ),
    (
        "ERR_WS_INVALID_CLOSE_CODE",
        CLOSE_PROTOCOL_ERROR,
        "A close frame carried an invalid close code.",
    ),
    (
        "ERR_WS_INVALID_CLOSE_PAYLOAD",
        CLOSE_PROTOCOL_ERROR,
        "A close frame payload was one byte long.",
    ),
    (
        "ERR_WS_INVALID_LENGTH",
        CLOSE_PROTOCOL_ERROR,
        "A 64-bit payload length had its most significant bit set.",
    ),
    (
        "ERR_WS_INFLATE",
        CLOSE_INVALID_PAYLOAD,
        "A compressed message was not a valid DEFLATE stream.",
    ),
];

impl ProtocolError {
    /// Position of this variant's row in [`ALL_ERROR_CODES`].
    fn index(&self) -> usize {
        match self {
            ProtocolError::InvalidOpcode(_) => 0,
            ProtocolError::UnmaskedFrame => 1,
            ProtocolError::MaskedFrame => 2,
            ProtocolError::ReservedBits => 3,
            ProtocolError::ControlFrameTooBig => 4,
            ProtocolError::FragmentedControl => 5,
            ProtocolError::UnexpectedContinuation => 6,
            ProtocolError::ExpectedContinuation => 7,
            ProtocolError::MessageTooBig => 8,
            ProtocolError::TooManyFragments => 9,
            ProtocolError::InvalidUtf8 => 10,
            ProtocolError::InvalidCloseCode(_) => 11,
            ProtocolError::InvalidClosePayload => 12,
            ProtocolError::InvalidLength => 13,
            ProtocolError::Inflate => 14,
        }
    }

    /// The stable string code, e.g. `ERR_WS_INVALID_OPCODE`.
    pub fn code(&self) -> &'static str {
        ALL_ERROR_CODES[self.index()].0
    }

    /// The close code to fail the connection with: 1002, 1007 or 1009.
    pub fn close_code(&self) -> u16 {
        ALL_ERROR_CODES[self.index()].1
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtocolError::InvalidOpcode(op) => write!(f, "invalid opcode 0x{op:X}"),
            ProtocolError::InvalidCloseCode(code) => write!(f, "invalid close code {code}"),
            other => {
                let description = ALL_ERROR_CODES[other.index()].2;
                // Descriptions are sentences; Display is conventionally a
                // lowercase fragment without the full stop.
                let text = description.trim_end_matches('.');
                let mut chars = text.chars();
                if let Some(first) = chars.next() {
                    write!(f, "{}{}", first.to_lowercase(), chars.as_str())?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for ProtocolError {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// One value of every variant; adding a variant without a row fails here.
    pub(crate) fn every_variant() -> Vec<ProtocolError> {
        vec![
            ProtocolError::InvalidOpcode(3),
            ProtocolError::UnmaskedFrame,
            ProtocolError::MaskedFrame,
            ProtocolError::ReservedBits,
            ProtocolError::ControlFrameTooBig,
            ProtocolError::FragmentedControl,
            ProtocolError::UnexpectedContinuation,
            ProtocolError::ExpectedContinuation,
            ProtocolError::MessageTooBig,
            ProtocolError::TooManyFragments,
            ProtocolError::InvalidUtf8,
            ProtocolError::InvalidCloseCode(1005),
            ProtocolError::InvalidClosePayload,
            ProtocolError::InvalidLength,
            ProtocolError::Inflate,
        ]
    }

    #[test]
    fn table_and_enum_agree() {
        let variants = every_variant();
        assert_eq!(variants.len(), ALL_ERROR_CODES.len());
        let codes: HashSet<_> = variants.iter().map(|e| e.code()).collect();
        assert_eq!(codes.len(), ALL_ERROR_CODES.len(), "codes must be unique");
        for (code, close, description) in ALL_ERROR_CODES {
            assert!(code.starts_with("ERR_WS_"), "{code}");
            assert!(matches!(close, 1002 | 1007 | 1009), "{code}");
            assert!(description.ends_with('.'), "{code}");
        }
    }

    #[test]
    fn close_codes_follow_rfc() {
        assert_eq!(ProtocolError::InvalidUtf8.close_code(), 1007);
        assert_eq!(ProtocolError::Inflate.close_code(), 1007);
        assert_eq!(ProtocolError::MessageTooBig.close_code(), 1009);
        assert_eq!(ProtocolError::TooManyFragments.close_code(), 1009);
        assert_eq!(ProtocolError::MaskedFrame.close_code(), 1002);
    }

    #[test]
    fn display_is_human() {
        assert_eq!(
            ProtocolError::InvalidOpcode(0xB).to_string(),
            "invalid opcode 0xB"
        );
        assert_eq!(
            ProtocolError::InvalidCloseCode(1005).to_string(),
            "invalid close code 1005"
        );
        assert_eq!(
            ProtocolError::UnmaskedFrame.to_string(),
            "a client sent an unmasked frame"
        );
    }
}
