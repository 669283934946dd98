//! Close frame payloads (RFC 6455 §5.5.1, §7.4): a 2-byte code followed by a
//! UTF-8 reason, both optional together.

use crate::ws::error::ProtocolError;
use crate::ws::frame::MAX_CONTROL_PAYLOAD;

/// 1000: normal closure.
pub const NORMAL: u16 = 1000;
/// 1001: the endpoint is going away (server shutdown, page navigation).
pub const GOING_AWAY: u16 = 1001;
/// 1002: the peer broke the protocol; every framing error uses it.
pub const PROTOCOL_ERROR: u16 = 1002;
/// 1007: a message's data was inconsistent with its type (bad UTF-8, bad
/// compressed data).
pub const INVALID_PAYLOAD: u16 = 1007;
/// 1008: a message violated the application's policy.
pub const POLICY_VIOLATION: u16 = 1008;
/// 1009: a message was too big (or had too many fragments) to process.
pub const MESSAGE_TOO_BIG: u16 = 1009;
/// 1011: the server hit an unexpected condition.
pub const INTERNAL_ERROR: u16 = 1011;
/// 1012: the service is restarting.
pub const SERVICE_RESTART: u16 = 1012;
/// 1013: try again later (e.g. overloaded).
pub const TRY_AGAIN_LATER: u16 = 1013;

/// Longest close reason in bytes: the control-frame limit minus the 2-byte code.
pub const MAX_REASON_LEN: usize = MAX_CONTROL_PAYLOAD - 2;

/// A validated close frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CloseFrame<'a> {
    /// The status code, `None` when the payload was empty.
    pub code: Option<u16>,
    /// The reason; empty when absent.
    pub reason: &'a str,
}

/// Whether `code` may appear in a close frame on the wire.
///
/// Valid are 1000-1003, 1007-1014 (registered with IANA; 1012-1014 after
/// RFC 6455 was published) and 3000-4999 (libraries and applications).
/// 1004 is reserved, 1005/1006/1015 are reserved for local use and must never
/// be sent, everything else is unassigned.
pub fn is_valid_close_code(code: u16) -> bool {
    matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999)
}

/// Parses and validates a close payload (already unmasked).
///
/// A one-byte payload, a code [`is_valid_close_code`] rejects, or a reason
/// that is not UTF-8 fail the connection. The last maps to
/// [`ProtocolError::InvalidUtf8`] (close code 1007), as RFC 6455 §8.1 treats
/// any non-UTF-8 text the same way.
pub fn parse_close_payload(payload: &[u8]) -> Result<CloseFrame<'_>, ProtocolError> {
    match payload {
        [] => Ok(CloseFrame {
            code: None,
            reason: "",
        }),
        [_] => Err(ProtocolError::InvalidClosePayload),
        [hi, lo, reason @ ..] => {
            let code = u16::from_be_bytes([*hi, *lo]);
            if !is_valid_close_code(code) {
                return Err(ProtocolError::InvalidCloseCode(code));
            }
            let reason = std::str::from_utf8(reason).map_err(|_| ProtocolError::InvalidUtf8)?;
            Ok(CloseFrame {
                code: Some(code),
                reason,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_code_table() {
        let valid = [
            1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 3999,
            4000, 4999,
        ];
        let invalid = [
            0, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535,
        ];
        for code in valid {
            assert!(is_valid_close_code(code), "{code}");
            let payload = code.to_be_bytes();
            assert_eq!(parse_close_payload(&payload).unwrap().code, Some(code));
        }
        for code in invalid {
            assert!(!is_valid_close_code(code), "{code}");
            let payload = code.to_be_bytes();
            assert_eq!(
                parse_close_payload(&payload),
                Err(ProtocolError::InvalidCloseCode(code))
            );
        }
    }

    #[test]
    fn payload_shapes() {
        assert_eq!(
            parse_close_payload(&[]),
            Ok(CloseFrame {
                code: None,
                reason: ""
            })
        );
        assert_eq!(
            parse_close_payload(&[0x03]),
            Err(ProtocolError::InvalidClosePayload)
        );
        assert_eq!(
            parse_close_payload(b"\x03\xe8bye"),
            Ok(CloseFrame {
                code: Some(1000),
                reason: "bye"
            })
        );
        assert_eq!(
            parse_close_payload(b"\x03\xe8\xce\xba\xe1"),
            Err(ProtocolError::InvalidUtf8)
        );
    }
}
