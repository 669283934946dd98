//! The frames of version 1 as values (§4). A [`Frame`] borrows its payloads
//! and strings from the buffer it was decoded from, so decoding copies
//! nothing; the same type is what [`super::encode`] writes.
//!
//! The shapes mirror `packages/rpc/src/codec/frames.ts`, the model the
//! TypeScript codec and the JSON test vectors share.

use super::error::ProtocolError;
use super::int::MAX_INTEGER;
use super::uuid::is_v4;
use super::MIN_FRAME_SIZE;

/// The frame type byte of each frame (§3). Type `0x00` and types above
/// `0x0F` are `ERR_PROTOCOL_FRAME_TYPE`.
pub mod frame_type {
    /// HELLO: the client's handshake.
    pub const HELLO: u8 = 0x01;
    /// WELCOME: the server's handshake.
    pub const WELCOME: u8 = 0x02;
    /// MESSAGE: a call or a one-way message.
    pub const MESSAGE: u8 = 0x03;
    /// RESPONSE: a response to the receiver's call.
    pub const RESPONSE: u8 = 0x04;
    /// END: a call has no more responses.
    pub const END: u8 = 0x05;
    /// FAST_REPLY: a final response that is just an integer.
    pub const FAST_REPLY: u8 = 0x06;
    /// ERROR: a call failed.
    pub const ERROR: u8 = 0x07;
    /// STREAM_OPEN: an attachment of the preceding MESSAGE or RESPONSE.
    pub const STREAM_OPEN: u8 = 0x08;
    /// STREAM_DATA: bytes of a stream.
    pub const STREAM_DATA: u8 = 0x09;
    /// STREAM_END: the sender closed (or aborted) a stream.
    pub const STREAM_END: u8 = 0x0A;
    /// CREDIT: the receiver grants more bytes on a stream.
    pub const CREDIT: u8 = 0x0B;
    /// STOP: the receiver no longer wants a stream.
    pub const STOP: u8 = 0x0C;
    /// CANCEL: the sender cancels its own call.
    pub const CANCEL: u8 = 0x0D;
    /// HEARTBEAT: a ping, or with PONG its answer.
    pub const HEARTBEAT: u8 = 0x0E;
    /// GO_AWAY: the sender ends the connection.
    pub const GO_AWAY: u8 = 0x0F;
}

// Descriptor flags (§3). Several share a bit: which one it is depends on the
// frame type.
pub(crate) const REPLY: u8 = 0x10;
pub(crate) const LAST: u8 = 0x10;
pub(crate) const PONG: u8 = 0x10;
pub(crate) const UUID: u8 = 0x20;
pub(crate) const ATTACHMENTS: u8 = 0x40;
pub(crate) const FILE: u8 = 0x40;
pub(crate) const ABORT: u8 = 0x40;

/// Descriptor bits a frame type does not define, which MUST be 0 (§3); the
/// length width (bits 0–1) is defined for all. STREAM_OPEN's `B` bits are
/// defined but must also be 0 without FILE; the decoder checks that apart.
pub(crate) fn reserved_bits(frame_type: u8) -> u8 {
    use frame_type::*;
    match frame_type {
        HELLO | WELCOME => 0xFC,
        MESSAGE => 0x80,
        RESPONSE => 0xA0,
        FAST_REPLY | CREDIT => 0xC0,
        STREAM_OPEN => 0x80,
        STREAM_END => 0xB0,
        HEARTBEAT => 0xEC,
        // END, ERROR, STREAM_DATA, STOP, CANCEL, GO_AWAY: only A and L.
        _ => 0xF0,
    }
}

/// Feature bit 0: streams and attachments.
pub const FEATURE_STREAMS: u32 = 1 << 0;
/// Feature bit 1: files.
pub const FEATURE_FILES: u32 = 1 << 1;
/// Feature bit 2: cancellation.
pub const FEATURE_CANCEL: u32 = 1 << 2;
/// Every feature bit version 1 defines; any other set bit is
/// `ERR_PROTOCOL_HANDSHAKE`.
pub const ALL_FEATURES: u32 = FEATURE_STREAMS | FEATURE_FILES | FEATURE_CANCEL;

/// The fields HELLO and WELCOME share: a side's seed and the limits that
/// bind its peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// 16 random bytes in UUID v4 layout: the base of this side's UUIDs.
    pub seed: [u8; 16],
    /// Largest frame body this side accepts (≥ 1024).
    pub max_frame_size: u32,
    /// Credit this side grants each stream it receives (≥ 1024).
    pub initial_window: u32,
    /// Calls from the peer this side runs at once; 0 = it accepts none.
    pub max_concurrent_calls: u32,
    /// HELLO: the interval the client wants (0 = no preference); WELCOME:
    /// the interval both sides use (0 = off).
    pub heartbeat_ms: u32,
    /// Feature bits ([`ALL_FEATURES`]).
    pub features: u32,
}

/// HELLO: the client's first frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello<'a> {
    /// Seed and limits.
    pub settings: Settings,
    /// Codec names in preference order (a HELLO is decoded once per
    /// connection, so this one list may allocate).
    pub codecs: Vec<&'a str>,
    /// Connect data (a token, for instance).
    pub data: &'a [u8],
}

/// WELCOME: the server's first frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Welcome<'a> {
    /// Seed and limits; `heartbeat_ms` and `features` are those in effect.
    pub settings: Settings,
    /// The codec chosen.
    pub codec: &'a str,
    /// Data from the server's connect hook (may be empty).
    pub data: &'a [u8],
}

/// MESSAGE: a call (`expects_reply`) or a one-way message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message<'a> {
    /// The sender's call id: from 1, strictly increasing.
    pub call_id: u64,
    /// Set: a call; clear: a one-way message that gets no answer.
    pub expects_reply: bool,
    /// An explicit UUID, or `None` for the derived one (§6).
    pub uuid: Option<[u8; 16]>,
    /// Number of STREAM_OPEN frames that follow (0 = none).
    pub attachments: u8,
    /// The action name, 1–255 bytes of UTF-8.
    pub action: &'a str,
    /// Codec-encoded payload (may be empty).
    pub payload: &'a [u8],
}

/// RESPONSE: one response to the receiver's call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response<'a> {
    /// The call answered.
    pub call_id: u64,
    /// The call's final response.
    pub last: bool,
    /// Number of STREAM_OPEN frames that follow (0 = none).
    pub attachments: u8,
    /// Codec-encoded payload (may be empty).
    pub payload: &'a [u8],
}

/// ERROR: a call failed (final).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorFrame<'a> {
    /// The call answered.
    pub call_id: u64,
    /// Printable ASCII, 1–255 bytes, conventionally `ERR_*`.
    pub code: &'a str,
    /// Human-readable, at most 65535 bytes of UTF-8.
    pub message: &'a str,
    /// Codec-encoded details; empty = none.
    pub details: &'a [u8],
}

/// What a file attachment announces up front.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileInfo<'a> {
    /// Exact number of data bytes that will follow.
    pub size: u64,
    /// File name, at most 65535 bytes of UTF-8.
    pub name: &'a str,
}

/// Why the sender aborted a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Abort<'a> {
    /// Printable ASCII, 1–255 bytes.
    pub code: &'a str,
    /// UTF-8 (may be empty).
    pub message: &'a str,
}

/// One frame of version 1 (§4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame<'a> {
    /// `0x01`
    Hello(Hello<'a>),
    /// `0x02`
    Welcome(Welcome<'a>),
    /// `0x03`
    Message(Message<'a>),
    /// `0x04`
    Response(Response<'a>),
    /// `0x05`: the call has no more responses.
    End {
        /// The call ended.
        call_id: u64,
    },
    /// `0x06`: a final response that is just an integer.
    FastReply {
        /// The call answered.
        call_id: u64,
        /// 0 … 2⁴⁸ − 1.
        code: u64,
    },
    /// `0x07`
    Error(ErrorFrame<'a>),
    /// `0x08`: an attachment of the preceding MESSAGE or RESPONSE.
    StreamOpen {
        /// The sender's stream id: from 1, strictly increasing.
        stream_id: u64,
        /// Set for a file, `None` for a plain stream.
        file: Option<FileInfo<'a>>,
    },
    /// `0x09`
    StreamData {
        /// The stream.
        stream_id: u64,
        /// Bytes (each spends one byte of credit).
        data: &'a [u8],
    },
    /// `0x0A`
    StreamEnd {
        /// The stream, closed by this frame.
        stream_id: u64,
        /// Set when the sender gave up.
        abort: Option<Abort<'a>>,
    },
    /// `0x0B`: the data's receiver grants more bytes.
    Credit {
        /// The stream.
        stream_id: u64,
        /// Bytes granted (≥ 1).
        increment: u64,
    },
    /// `0x0C`: the data's receiver no longer wants the stream.
    Stop {
        /// The stream.
        stream_id: u64,
        /// Printable ASCII, 1–255 bytes.
        code: &'a str,
    },
    /// `0x0D`: the sender cancels its own call.
    Cancel {
        /// The call cancelled.
        call_id: u64,
    },
    /// `0x0E`
    Heartbeat {
        /// Set: the answer to a ping.
        pong: bool,
    },
    /// `0x0F`
    GoAway {
        /// Highest id of the peer's calls the sender dispatched (0 = none).
        last_call_id: u64,
        /// Printable ASCII, 1–255 bytes (`ERR_GOING_AWAY` or an `ERR_PROTOCOL_*`).
        code: &'a str,
        /// UTF-8 (may be empty).
        message: &'a str,
    },
}

impl Frame<'_> {
    /// This frame's type byte ([`frame_type`]).
    pub fn frame_type(&self) -> u8 {
        use frame_type::*;
        match self {
            Frame::Hello(_) => HELLO,
            Frame::Welcome(_) => WELCOME,
            Frame::Message(_) => MESSAGE,
            Frame::Response(_) => RESPONSE,
            Frame::End { .. } => END,
            Frame::FastReply { .. } => FAST_REPLY,
            Frame::Error(_) => ERROR,
            Frame::StreamOpen { .. } => STREAM_OPEN,
            Frame::StreamData { .. } => STREAM_DATA,
            Frame::StreamEnd { .. } => STREAM_END,
            Frame::Credit { .. } => CREDIT,
            Frame::Stop { .. } => STOP,
            Frame::Cancel { .. } => CANCEL,
            Frame::Heartbeat { .. } => HEARTBEAT,
            Frame::GoAway { .. } => GO_AWAY,
        }
    }

    /// Checks every field as the decoder would check its encoded form, so a
    /// frame that passes encodes to bytes any conforming peer decodes back to
    /// it (size limits apart). Use it on frames built from user input before
    /// [`super::encode`], which writes what it is given.
    pub fn validate(&self) -> Result<(), ProtocolError> {
        match self {
            Frame::Hello(h) => {
                check_settings(&h.settings)?;
                if h.codecs.len() > 255 {
                    return Err(ProtocolError::Malformed("more than 255 codecs"));
                }
                h.codecs.iter().try_for_each(|c| {
                    check_ascii(
                        c.as_bytes(),
                        "codec name is not 1-255 printable ASCII bytes",
                    )
                    .map(drop)
                })
            }
            Frame::Welcome(w) => {
                check_settings(&w.settings)?;
                check_ascii(
                    w.codec.as_bytes(),
                    "codec name is not 1-255 printable ASCII bytes",
                )
                .map(drop)
            }
            Frame::Message(m) => {
                check_int(m.call_id)?;
                check_action(m.action.as_bytes()).map(drop)
            }
            Frame::Response(r) => check_int(r.call_id),
            Frame::End { call_id } | Frame::Cancel { call_id } => check_int(*call_id),
            Frame::FastReply { call_id, code } => {
                check_int(*call_id)?;
                check_int(*code)
            }
            Frame::Error(e) => {
                check_int(e.call_id)?;
                check_ascii(
                    e.code.as_bytes(),
                    "error code is not 1-255 printable ASCII bytes",
                )?;
                check_u16_len(e.message, "error message longer than 65535 bytes")
            }
            Frame::StreamOpen { stream_id, file } => {
                check_int(*stream_id)?;
                match file {
                    Some(f) => {
                        check_int(f.size)?;
                        check_u16_len(f.name, "file name longer than 65535 bytes")
                    }
                    None => Ok(()),
                }
            }
            Frame::StreamData { stream_id, .. } => check_int(*stream_id),
            Frame::StreamEnd { stream_id, abort } => {
                check_int(*stream_id)?;
                match abort {
                    Some(a) => check_ascii(
                        a.code.as_bytes(),
                        "abort code is not 1-255 printable ASCII bytes",
                    )
                    .map(drop),
                    None => Ok(()),
                }
            }
            Frame::Credit {
                stream_id,
                increment,
            } => {
                check_int(*stream_id)?;
                check_int(*increment)?;
                check_increment(*increment)
            }
            Frame::Stop { stream_id, code } => {
                check_int(*stream_id)?;
                check_ascii(
                    code.as_bytes(),
                    "stop code is not 1-255 printable ASCII bytes",
                )
                .map(drop)
            }
            Frame::Heartbeat { .. } => Ok(()),
            Frame::GoAway {
                last_call_id, code, ..
            } => {
                check_int(*last_call_id)?;
                check_ascii(
                    code.as_bytes(),
                    "go-away code is not 1-255 printable ASCII bytes",
                )
                .map(drop)
            }
        }
    }
}

/// An integer field holds at most 2⁴⁸ − 1.
fn check_int(value: u64) -> Result<(), ProtocolError> {
    if value > MAX_INTEGER {
        return Err(ProtocolError::Malformed("integer above 2^48-1"));
    }
    Ok(())
}

/// A string behind a `u16` length.
fn check_u16_len(s: &str, why: &'static str) -> Result<(), ProtocolError> {
    if s.len() > usize::from(u16::MAX) {
        return Err(ProtocolError::Malformed(why));
    }
    Ok(())
}

/// CREDIT grants at least one byte: a zero grant is meaningless and would
/// let a peer spin the receiver with empty frames.
pub(crate) fn check_increment(increment: u64) -> Result<(), ProtocolError> {
    if increment == 0 {
        return Err(ProtocolError::Malformed("zero credit increment"));
    }
    Ok(())
}

/// An action name: 1–255 bytes of UTF-8.
pub(crate) fn check_action(bytes: &[u8]) -> Result<&str, ProtocolError> {
    if bytes.is_empty() {
        return Err(ProtocolError::Malformed("empty action"));
    }
    if bytes.len() > 255 {
        return Err(ProtocolError::Malformed("action longer than 255 bytes"));
    }
    std::str::from_utf8(bytes).map_err(|_| ProtocolError::Malformed("action is not UTF-8"))
}

/// Whether `code` may stand as a code or codec name (§3): 1–255 printable
/// ASCII bytes, `0x21`–`0x7E` (letters, digits, punctuation; no space, no
/// control character). Use it on codes that come from elsewhere (a close
/// reason, user input) before putting them in a frame.
pub fn is_code(code: &str) -> bool {
    is_code_bytes(code.as_bytes())
}

fn is_code_bytes(bytes: &[u8]) -> bool {
    !bytes.is_empty() && bytes.len() <= 255 && bytes.iter().all(|b| (0x21..=0x7e).contains(b))
}

/// A code or codec name: 1–255 printable ASCII bytes ([`is_code`]). `why`
/// is the error's reason, naming the field for whoever reads the log.
pub(crate) fn check_ascii<'a>(
    bytes: &'a [u8],
    why: &'static str,
) -> Result<&'a str, ProtocolError> {
    if !is_code_bytes(bytes) {
        return Err(ProtocolError::Malformed(why));
    }
    // ASCII is valid UTF-8; from_utf8 re-checks in a few cycles, no unsafe.
    std::str::from_utf8(bytes).map_err(|_| ProtocolError::Malformed(why))
}

/// The handshake's value rules (§4): v4 seed, sizes ≥ 1024, known features.
pub(crate) fn check_settings(s: &Settings) -> Result<(), ProtocolError> {
    if !is_v4(&s.seed) {
        return Err(ProtocolError::Handshake("seed lacks the UUID v4 marks"));
    }
    if s.max_frame_size < MIN_FRAME_SIZE {
        return Err(ProtocolError::Handshake("maxFrameSize below 1024"));
    }
    if s.initial_window < MIN_FRAME_SIZE {
        return Err(ProtocolError::Handshake("initialWindow below 1024"));
    }
    if s.features & !ALL_FEATURES != 0 {
        return Err(ProtocolError::Handshake("undefined feature bits"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: [u8; 16] = [0, 0, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 0];

    fn settings() -> Settings {
        Settings {
            seed: SEED,
            max_frame_size: 1024,
            initial_window: 1024,
            max_concurrent_calls: 0,
            heartbeat_ms: 0,
            features: ALL_FEATURES,
        }
    }

    #[test]
    fn validate_catches_what_the_decoder_would() {
        let message = |action| {
            Frame::Message(Message {
                call_id: 1,
                expects_reply: true,
                uuid: None,
                attachments: 0,
                action,
                payload: &[],
            })
        };
        assert_eq!(message("add").validate(), Ok(()));
        assert_eq!(
            message("").validate().unwrap_err().code(),
            "ERR_PROTOCOL_MALFORMED"
        );
        assert!(message(&"a".repeat(256)).validate().is_err());
        let credit = |increment| Frame::Credit {
            stream_id: 1,
            increment,
        };
        assert!(credit(1).validate().is_ok());
        assert!(credit(0).validate().is_err());
        assert!(credit(MAX_INTEGER + 1).validate().is_err());
        let stop = |code| Frame::Stop { stream_id: 1, code };
        assert!(stop("ERR_X").validate().is_ok());
        assert!(stop("ERR_é").validate().is_err());
        assert!(stop("").validate().is_err());
        // Printable ASCII only: no control character, no space, no DEL.
        for bad in ["a\x01", "ERR X", "ERR\x7f", "\t"] {
            assert!(stop(bad).validate().is_err(), "{bad:?}");
            assert!(!is_code(bad), "{bad:?}");
        }
        assert!(is_code("!~") && is_code(&"x".repeat(255)) && !is_code(&"x".repeat(256)));
    }

    #[test]
    fn handshake_values() {
        let hello = |s: Settings| {
            Frame::Hello(Hello {
                settings: s,
                codecs: vec!["raw"],
                data: &[],
            })
        };
        assert!(hello(settings()).validate().is_ok());
        for bad in [
            Settings {
                seed: [0; 16],
                ..settings()
            },
            Settings {
                max_frame_size: 1023,
                ..settings()
            },
            Settings {
                initial_window: 0,
                ..settings()
            },
            Settings {
                features: 8,
                ..settings()
            },
        ] {
            assert_eq!(
                hello(bad).validate().unwrap_err().code(),
                "ERR_PROTOCOL_HANDSHAKE"
            );
        }
    }

    #[test]
    fn reserved_bits_leave_defined_fields_free() {
        use frame_type::*;
        assert_eq!(reserved_bits(MESSAGE) & (REPLY | UUID | ATTACHMENTS), 0);
        assert_eq!(reserved_bits(RESPONSE) & (LAST | ATTACHMENTS), 0);
        assert_eq!(reserved_bits(RESPONSE) & UUID, UUID);
        assert_eq!(reserved_bits(STREAM_END) & ABORT, 0);
        assert_eq!(reserved_bits(STREAM_OPEN) & FILE, 0);
        assert_eq!(reserved_bits(HEARTBEAT), !PONG & 0xFC);
        for t in HELLO..=GO_AWAY {
            assert_eq!(reserved_bits(t) & 3, 0, "L is always defined");
        }
    }
}
