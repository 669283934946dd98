//! Decoding (§3, §4): the preface, a frame's header, and whole frames with
//! every structural rule of version 1 checked.
//!
//! The decoder is stateless: it takes the bytes received so far and answers
//! "need more" (`Ok(None)`), a frame and how many bytes it used, or an
//! error. Errors are reported as soon as the bytes that show them are
//! present: an unknown type from the first byte, reserved descriptor bits
//! from the second, a too-large length before any of the body has arrived.
//! Decoders accept integers in any width that holds them (§3).

use super::error::ProtocolError;
use super::frame::{
    check_action, check_ascii, check_increment, check_settings, frame_type, reserved_bits, Abort,
    ErrorFrame, FileInfo, Frame, Hello, Message, Response, Settings, Welcome, ABORT, ATTACHMENTS,
    FILE, LAST, PONG, REPLY, UUID,
};
use super::int::{read_uint, width_bytes};
use super::{PREFACE, VERSION};

/// A frame's fixed part: type, descriptor and body length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The frame type byte (`0x01`–`0x0F`).
    pub frame_type: u8,
    /// The descriptor byte: length width, field widths and flags.
    pub descriptor: u8,
    /// Bytes of type, descriptor and length: 3, 4, 6 or 8.
    pub header_len: usize,
    /// Bytes of body that follow the header.
    pub body_len: usize,
}

impl Header {
    /// Bytes of the whole frame.
    pub fn frame_len(&self) -> usize {
        self.header_len + self.body_len
    }
}

/// Checks the peer's preface at the start of `buf`: `Ok(None)` while fewer
/// than four bytes have arrived and those match, `Ok(Some(4))` (bytes used)
/// once all four do.
///
/// Each byte is checked as soon as it is present, so a plain-HTTP or TLS
/// client is turned away on its first byte: `ERR_PROTOCOL_PREFACE` when a
/// byte of `SWB` differs, `ERR_PROTOCOL_VERSION` when the fourth is not 1.
pub fn decode_preface(buf: &[u8]) -> Result<Option<usize>, ProtocolError> {
    for (got, want) in buf.iter().zip(&PREFACE[..3]) {
        if got != want {
            return Err(ProtocolError::Preface);
        }
    }
    match buf.get(3) {
        None => Ok(None),
        Some(&VERSION) => Ok(Some(PREFACE.len())),
        Some(&other) => Err(ProtocolError::Version(other)),
    }
}

/// Reads the header at the start of `buf`, or `Ok(None)` until all of it is
/// present. Rejects an unknown type (`ERR_PROTOCOL_FRAME_TYPE`) once the
/// first byte is there, reserved descriptor bits (`ERR_PROTOCOL_MALFORMED`)
/// once the second is, and a length above `max_frame_size`
/// (`ERR_PROTOCOL_FRAME_TOO_LARGE`) once the length is, before any body.
pub fn peek_header(buf: &[u8], max_frame_size: usize) -> Result<Option<Header>, ProtocolError> {
    let Some(&ty) = buf.first() else {
        return Ok(None);
    };
    if !(frame_type::HELLO..=frame_type::GO_AWAY).contains(&ty) {
        return Err(ProtocolError::FrameType(ty));
    }
    let Some(&descriptor) = buf.get(1) else {
        return Ok(None);
    };
    if descriptor & reserved_bits(ty) != 0 {
        return Err(ProtocolError::Malformed("reserved descriptor bits set"));
    }
    // STREAM_OPEN's B is the file size width: without FILE there is no size,
    // and a nonzero width there would be a second meaning for the same frame.
    if ty == frame_type::STREAM_OPEN && descriptor & FILE == 0 && descriptor & 0x30 != 0 {
        return Err(ProtocolError::Malformed("file size width without FILE"));
    }
    let width = width_bytes(descriptor);
    let Some(length) = read_uint(&buf[2..], width) else {
        return Ok(None);
    };
    let max = u64::try_from(max_frame_size).unwrap_or(u64::MAX);
    if length > max {
        return Err(ProtocolError::FrameTooLarge {
            length,
            max: max_frame_size,
        });
    }
    Ok(Some(Header {
        frame_type: ty,
        descriptor,
        header_len: 2 + width,
        // length <= max_frame_size, a usize.
        body_len: length as usize,
    }))
}

/// Decodes the frame at the start of `buf`: `Ok(None)` until it is complete,
/// then the frame (borrowing from `buf`) and the number of bytes it used.
/// Bytes after it are left for the next call.
pub fn decode(
    buf: &[u8],
    max_frame_size: usize,
) -> Result<Option<(Frame<'_>, usize)>, ProtocolError> {
    let Some(header) = peek_header(buf, max_frame_size)? else {
        return Ok(None);
    };
    let Some(body) = buf.get(header.header_len..header.frame_len()) else {
        return Ok(None);
    };
    let frame = decode_body(header.frame_type, header.descriptor, body)?;
    Ok(Some((frame, header.frame_len())))
}

/// Reads a body's fields in order; any field that runs past the end of the
/// body is `ERR_PROTOCOL_MALFORMED`.
struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn bytes(&mut self, n: usize) -> Result<&'a [u8], ProtocolError> {
        if self.buf.len() < n {
            return Err(ProtocolError::Malformed(
                "field runs past the end of the body",
            ));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    /// An integer whose width code is `code`.
    fn uint(&mut self, code: u8) -> Result<u64, ProtocolError> {
        let width = width_bytes(code);
        let value = read_uint(self.bytes(width)?, width).unwrap_or_default();
        Ok(value)
    }

    fn u8(&mut self) -> Result<u8, ProtocolError> {
        Ok(self.bytes(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, ProtocolError> {
        let b = self.bytes(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Result<u32, ProtocolError> {
        let b = self.bytes(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn utf8(&mut self, n: usize, why: &'static str) -> Result<&'a str, ProtocolError> {
        let bytes = self.bytes(n)?;
        std::str::from_utf8(bytes).map_err(|_| ProtocolError::Malformed(why))
    }

    /// A code behind a `u8` length: 1–255 printable ASCII bytes.
    fn code(&mut self, why: &'static str) -> Result<&'a str, ProtocolError> {
        let n = self.u8()?;
        check_ascii(self.bytes(usize::from(n))?, why)
    }

    fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.buf)
    }

    /// The last field was read: any byte left over is an error, so that one
    /// frame has one encoding (apart from integer widths) and version 2 can
    /// give new fields a flag instead of being half-understood.
    fn finish(self) -> Result<(), ProtocolError> {
        if !self.buf.is_empty() {
            return Err(ProtocolError::Malformed("bytes after the last field"));
        }
        Ok(())
    }

    fn settings(&mut self) -> Result<Settings, ProtocolError> {
        let mut seed = [0u8; 16];
        seed.copy_from_slice(self.bytes(16)?);
        let settings = Settings {
            seed,
            max_frame_size: self.u32()?,
            initial_window: self.u32()?,
            max_concurrent_calls: self.u32()?,
            heartbeat_ms: self.u32()?,
            features: self.u32()?,
        };
        check_settings(&settings)?;
        Ok(settings)
    }
}

/// Decodes a body whose header (type, reserved bits) was already checked.
fn decode_body(ty: u8, d: u8, body: &[u8]) -> Result<Frame<'_>, ProtocolError> {
    use frame_type::*;
    let a = (d >> 2) & 3;
    let b = (d >> 4) & 3;
    let mut r = Reader { buf: body };
    let frame = match ty {
        HELLO => {
            let settings = r.settings()?;
            let count = r.u8()?;
            let codecs = (0..count)
                .map(|_| r.code("codec name is not 1-255 printable ASCII bytes"))
                .collect::<Result<Vec<_>, _>>()?;
            Frame::Hello(Hello {
                settings,
                codecs,
                data: r.rest(),
            })
        }
        WELCOME => {
            let settings = r.settings()?;
            let codec = r.code("codec name is not 1-255 printable ASCII bytes")?;
            Frame::Welcome(Welcome {
                settings,
                codec,
                data: r.rest(),
            })
        }
        MESSAGE => {
            let call_id = r.uint(a)?;
            let uuid = if d & UUID != 0 {
                let mut uuid = [0u8; 16];
                uuid.copy_from_slice(r.bytes(16)?);
                Some(uuid)
            } else {
                None
            };
            let attachments = attachment_count(&mut r, d)?;
            let n = r.u8()?;
            let action = check_action(r.bytes(usize::from(n))?)?;
            Frame::Message(Message {
                call_id,
                expects_reply: d & REPLY != 0,
                uuid,
                attachments,
                action,
                payload: r.rest(),
            })
        }
        RESPONSE => {
            let call_id = r.uint(a)?;
            let attachments = attachment_count(&mut r, d)?;
            Frame::Response(Response {
                call_id,
                last: d & LAST != 0,
                attachments,
                payload: r.rest(),
            })
        }
        END => Frame::End {
            call_id: r.uint(a)?,
        },
        FAST_REPLY => Frame::FastReply {
            call_id: r.uint(a)?,
            code: r.uint(b)?,
        },
        ERROR => {
            let call_id = r.uint(a)?;
            let code = r.code("error code is not 1-255 printable ASCII bytes")?;
            let n = r.u16()?;
            let message = r.utf8(usize::from(n), "error message is not UTF-8")?;
            Frame::Error(ErrorFrame {
                call_id,
                code,
                message,
                details: r.rest(),
            })
        }
        STREAM_OPEN => {
            let stream_id = r.uint(a)?;
            let file = if d & FILE != 0 {
                let size = r.uint(b)?;
                let n = r.u16()?;
                let name = r.utf8(usize::from(n), "file name is not UTF-8")?;
                Some(FileInfo { size, name })
            } else {
                None
            };
            Frame::StreamOpen { stream_id, file }
        }
        STREAM_DATA => Frame::StreamData {
            stream_id: r.uint(a)?,
            data: r.rest(),
        },
        STREAM_END => {
            let stream_id = r.uint(a)?;
            let abort = if d & ABORT != 0 {
                let code = r.code("abort code is not 1-255 printable ASCII bytes")?;
                let n = r.buf.len();
                let message = r.utf8(n, "abort message is not UTF-8")?;
                Some(Abort { code, message })
            } else {
                None
            };
            Frame::StreamEnd { stream_id, abort }
        }
        CREDIT => {
            let stream_id = r.uint(a)?;
            let increment = r.uint(b)?;
            check_increment(increment)?;
            Frame::Credit {
                stream_id,
                increment,
            }
        }
        STOP => Frame::Stop {
            stream_id: r.uint(a)?,
            code: r.code("stop code is not 1-255 printable ASCII bytes")?,
        },
        CANCEL => Frame::Cancel {
            call_id: r.uint(a)?,
        },
        HEARTBEAT => Frame::Heartbeat {
            pong: d & PONG != 0,
        },
        GO_AWAY => {
            let last_call_id = r.uint(a)?;
            let code = r.code("go-away code is not 1-255 printable ASCII bytes")?;
            let n = r.buf.len();
            let message = r.utf8(n, "go-away message is not UTF-8")?;
            Frame::GoAway {
                last_call_id,
                code,
                message,
            }
        }
        // peek_header rejected every other type.
        _ => return Err(ProtocolError::FrameType(ty)),
    };
    r.finish()?;
    Ok(frame)
}

/// The attachment count of a MESSAGE or RESPONSE: present only with the
/// ATTACHMENTS flag, and then at least 1 (no flag is how to say none).
fn attachment_count(r: &mut Reader<'_>, d: u8) -> Result<u8, ProtocolError> {
    if d & ATTACHMENTS == 0 {
        return Ok(0);
    }
    match r.u8()? {
        0 => Err(ProtocolError::Malformed("zero attachment count")),
        n => Ok(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::hex;

    const MAX: usize = 16 * 1024 * 1024;

    fn code(bytes: &str, max: usize) -> &'static str {
        decode(&hex(bytes), max).unwrap_err().code()
    }

    /// Decodes `bytes` (hex) and compares the frame and the bytes used.
    fn decodes_to(bytes: &str, want: Frame<'_>, used: usize) {
        let buf = hex(bytes);
        assert_eq!(decode(&buf, MAX), Ok(Some((want, used))), "{bytes}");
    }

    #[test]
    fn worked_examples_of_section_9() {
        let call = Frame::Message(Message {
            call_id: 5,
            expects_reply: true,
            uuid: None,
            attachments: 0,
            action: "add",
            payload: &[1, 2],
        });
        decodes_to("03 10 07 05 03 61 64 64 01 02", call, 10);
        let response = Frame::Response(Response {
            call_id: 5,
            last: true,
            attachments: 0,
            payload: &[3],
        });
        decodes_to("04 10 02 05 03", response, 5);
        let fast = Frame::FastReply {
            call_id: 5,
            code: 300,
        };
        decodes_to("06 10 03 05 2c 01", fast, 6);
        // Only the first frame is decoded; the ping after it is left.
        decodes_to("0e 10 00 0e 00 00", Frame::Heartbeat { pong: true }, 3);
    }

    #[test]
    fn every_proper_prefix_needs_more() {
        let call = hex("03 10 07 05 03 61 64 64 01 02");
        for n in 0..call.len() {
            assert_eq!(decode(&call[..n], MAX), Ok(None), "{n} bytes");
        }
        let header = peek_header(&call[..3], MAX).unwrap().unwrap();
        assert_eq!(
            (header.frame_type, header.header_len, header.body_len),
            (3, 3, 7)
        );
        assert_eq!(header.frame_len(), call.len());
    }

    #[test]
    fn header_errors_come_before_the_body() {
        assert_eq!(peek_header(&[0x00], MAX), Err(ProtocolError::FrameType(0)));
        assert_eq!(
            peek_header(&[0x10], MAX),
            Err(ProtocolError::FrameType(0x10))
        );
        assert_eq!(
            peek_header(&hex("0e 20"), MAX).unwrap_err().code(),
            "ERR_PROTOCOL_MALFORMED"
        );
        assert_eq!(
            peek_header(&hex("08 10"), MAX).unwrap_err().code(),
            "ERR_PROTOCOL_MALFORMED",
            "B without FILE"
        );
        // Width 2 length 0x0401 = 1025 over a 1024 limit, no body present.
        assert_eq!(
            peek_header(&hex("09 01 01 04"), 1024),
            Err(ProtocolError::FrameTooLarge {
                length: 1025,
                max: 1024
            })
        );
        assert_eq!(peek_header(&hex("09 01 01"), 1024), Ok(None));
        assert!(peek_header(&hex("09 01 00 04"), 1024).unwrap().is_some());
    }

    #[test]
    fn body_errors() {
        assert_eq!(code("05 00 00", MAX), "ERR_PROTOCOL_MALFORMED"); // no call id
        assert_eq!(code("05 00 02 01 00", MAX), "ERR_PROTOCOL_MALFORMED"); // trailing
        assert_eq!(code("03 00 02 01 00", MAX), "ERR_PROTOCOL_MALFORMED"); // empty action
        assert_eq!(code("03 40 04 01 00 01 61", MAX), "ERR_PROTOCOL_MALFORMED"); // 0 attachments
        assert_eq!(code("03 00 03 01 01 ff", MAX), "ERR_PROTOCOL_MALFORMED"); // bad UTF-8
        assert_eq!(code("0c 00 03 01 01 80", MAX), "ERR_PROTOCOL_MALFORMED"); // non-ASCII
        assert_eq!(code("0c 00 03 01 01 01", MAX), "ERR_PROTOCOL_MALFORMED"); // control
        assert_eq!(code("0c 00 04 01 02 61 20", MAX), "ERR_PROTOCOL_MALFORMED"); // space
        assert_eq!(code("0c 00 03 01 01 7f", MAX), "ERR_PROTOCOL_MALFORMED"); // DEL
        assert_eq!(code("0b 00 02 01 00", MAX), "ERR_PROTOCOL_MALFORMED"); // zero credit
        assert_eq!(code("0e 00 01 00", MAX), "ERR_PROTOCOL_MALFORMED"); // heartbeat body
    }

    #[test]
    fn non_minimal_widths_are_accepted() {
        // END with a 6-byte call id 5 and a 2-byte length.
        decodes_to(
            "05 0d 06 00 05 00 00 00 00 00",
            Frame::End { call_id: 5 },
            10,
        );
    }

    #[test]
    fn preface() {
        assert_eq!(decode_preface(b""), Ok(None));
        assert_eq!(decode_preface(b"SW"), Ok(None));
        assert_eq!(decode_preface(b"SWB\x01\x01"), Ok(Some(4)));
        assert_eq!(decode_preface(b"G"), Err(ProtocolError::Preface));
        assert_eq!(decode_preface(b"SWX"), Err(ProtocolError::Preface));
        assert_eq!(decode_preface(b"SWB\x02"), Err(ProtocolError::Version(2)));
    }
}
