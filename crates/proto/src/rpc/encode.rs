//! Encoding (§3, §4): every integer in its smallest width, as the spec
//! requires of encoders.
//!
//! [`encode`] writes any [`Frame`]; the `encode_*` helpers write the frames
//! of the hot paths straight from their fields, and the `*_header` ones stop
//! before the payload so the runtime can append it, or send it as its own
//! iovec, without copying it into a frame buffer first.
//!
//! Encoding writes what it is given: an empty action or a non-ASCII code is
//! written as is and rejected by the receiver ([`Frame::validate`] checks
//! for that first). Only values that cannot be written at all panic: an
//! integer above 2⁴⁸ − 1 or a string longer than its length prefix allows.

use super::frame::{frame_type, Frame, ABORT, ATTACHMENTS, FILE, LAST, PONG, REPLY, UUID};
use super::int::{width_bytes, width_code, write_min, write_uint, MAX_INTEGER};

/// Bytes an integer takes in its smallest width.
fn int_len(value: u64) -> usize {
    width_bytes(width_code(value))
}

/// Width code of an integer field, checked against the 48-bit maximum.
fn width(value: u64) -> u8 {
    assert!(value <= MAX_INTEGER, "{value} is above 2^48-1");
    width_code(value)
}

/// The `u8` length prefix of a string.
fn len_u8(s: &str) -> u8 {
    u8::try_from(s.len()).expect("string longer than 255 bytes behind a u8 length")
}

/// The `u16` length prefix of a string.
fn len_u16(s: &str) -> u16 {
    u16::try_from(s.len()).expect("string longer than 65535 bytes behind a u16 length")
}

/// Bytes of a frame's body.
fn body_len(frame: &Frame<'_>) -> usize {
    // seed + five u32 fields
    const SETTINGS: usize = 16 + 5 * 4;
    match frame {
        Frame::Hello(h) => {
            let codecs: usize = h.codecs.iter().map(|c| 1 + c.len()).sum();
            SETTINGS + 1 + codecs + h.data.len()
        }
        Frame::Welcome(w) => SETTINGS + 1 + w.codec.len() + w.data.len(),
        Frame::Message(m) => {
            int_len(m.call_id)
                + if m.uuid.is_some() { 16 } else { 0 }
                + usize::from(m.attachments > 0)
                + 1
                + m.action.len()
                + m.payload.len()
        }
        Frame::Response(r) => int_len(r.call_id) + usize::from(r.attachments > 0) + r.payload.len(),
        Frame::End { call_id } | Frame::Cancel { call_id } => int_len(*call_id),
        Frame::FastReply { call_id, code } => int_len(*call_id) + int_len(*code),
        Frame::Error(e) => {
            int_len(e.call_id) + 1 + e.code.len() + 2 + e.message.len() + e.details.len()
        }
        Frame::StreamOpen { stream_id, file } => {
            int_len(*stream_id) + file.map_or(0, |f| int_len(f.size) + 2 + f.name.len())
        }
        Frame::StreamData { stream_id, data } => int_len(*stream_id) + data.len(),
        Frame::StreamEnd { stream_id, abort } => {
            int_len(*stream_id) + abort.map_or(0, |a| 1 + a.code.len() + a.message.len())
        }
        Frame::Credit {
            stream_id,
            increment,
        } => int_len(*stream_id) + int_len(*increment),
        Frame::Stop { stream_id, code } => int_len(*stream_id) + 1 + code.len(),
        Frame::Heartbeat { .. } => 0,
        Frame::GoAway {
            last_call_id,
            code,
            message,
        } => int_len(*last_call_id) + 1 + code.len() + message.len(),
    }
}

/// Bytes of a frame whose body is `body_len` bytes.
fn frame_len(body_len: usize) -> usize {
    2 + int_len(body_len as u64) + body_len
}

/// Bytes [`encode`] writes for `frame`.
pub fn encoded_len(frame: &Frame<'_>) -> usize {
    frame_len(body_len(frame))
}

/// Writes type, descriptor (`bits` plus the length width) and body length.
/// Reserves nothing: [`encode`] reserves the whole frame, and the header
/// helpers must not reserve room for a payload that may be sent apart.
fn write_header(out: &mut Vec<u8>, ty: u8, bits: u8, body_len: usize) {
    let length = body_len as u64;
    let l = width(length);
    out.push(ty);
    out.push(bits | l);
    write_uint(out, length, width_bytes(l));
}

/// `A` field width code in bits 2–3.
fn a(value: u64) -> u8 {
    width(value) << 2
}

/// `B` field width code in bits 4–5.
fn b(value: u64) -> u8 {
    width(value) << 4
}

/// Sets `flag` when `on`.
fn flag(on: bool, flag: u8) -> u8 {
    if on {
        flag
    } else {
        0
    }
}

/// Appends `frame` to `out` with the smallest widths; reserves the exact
/// size first, so `out` grows at most once.
///
/// # Panics
/// When an integer is above 2⁴⁸ − 1 or a string is longer than its length
/// prefix holds (255 bytes behind a `u8`, 65535 behind a `u16`), or a HELLO
/// lists more than 255 codecs.
pub fn encode(frame: &Frame<'_>, out: &mut Vec<u8>) {
    use frame_type::*;
    let len = body_len(frame);
    out.reserve(frame_len(len));
    match frame {
        Frame::Hello(h) => {
            write_header(out, HELLO, 0, len);
            write_settings(out, &h.settings);
            out.push(u8::try_from(h.codecs.len()).expect("more than 255 codecs"));
            for codec in &h.codecs {
                out.push(len_u8(codec));
                out.extend_from_slice(codec.as_bytes());
            }
            out.extend_from_slice(h.data);
        }
        Frame::Welcome(w) => {
            write_header(out, WELCOME, 0, len);
            write_settings(out, &w.settings);
            out.push(len_u8(w.codec));
            out.extend_from_slice(w.codec.as_bytes());
            out.extend_from_slice(w.data);
        }
        Frame::Message(m) => {
            let bits = a(m.call_id)
                | flag(m.expects_reply, REPLY)
                | flag(m.uuid.is_some(), UUID)
                | flag(m.attachments > 0, ATTACHMENTS);
            write_header(out, MESSAGE, bits, len);
            write_min(out, m.call_id);
            if let Some(uuid) = &m.uuid {
                out.extend_from_slice(uuid);
            }
            if m.attachments > 0 {
                out.push(m.attachments);
            }
            out.push(len_u8(m.action));
            out.extend_from_slice(m.action.as_bytes());
            out.extend_from_slice(m.payload);
        }
        Frame::Response(r) => {
            let bits = a(r.call_id) | flag(r.last, LAST) | flag(r.attachments > 0, ATTACHMENTS);
            write_header(out, RESPONSE, bits, len);
            write_min(out, r.call_id);
            if r.attachments > 0 {
                out.push(r.attachments);
            }
            out.extend_from_slice(r.payload);
        }
        Frame::End { call_id } | Frame::Cancel { call_id } => {
            write_header(out, frame.frame_type(), a(*call_id), len);
            write_min(out, *call_id);
        }
        Frame::FastReply { call_id, code } => {
            write_header(out, FAST_REPLY, a(*call_id) | b(*code), len);
            write_min(out, *call_id);
            write_min(out, *code);
        }
        Frame::Error(e) => {
            write_header(out, ERROR, a(e.call_id), len);
            write_min(out, e.call_id);
            write_code(out, e.code);
            out.extend_from_slice(&len_u16(e.message).to_le_bytes());
            out.extend_from_slice(e.message.as_bytes());
            out.extend_from_slice(e.details);
        }
        Frame::StreamOpen { stream_id, file } => {
            let bits = a(*stream_id) | file.map_or(0, |f| FILE | b(f.size));
            write_header(out, STREAM_OPEN, bits, len);
            write_min(out, *stream_id);
            if let Some(f) = file {
                write_min(out, f.size);
                out.extend_from_slice(&len_u16(f.name).to_le_bytes());
                out.extend_from_slice(f.name.as_bytes());
            }
        }
        Frame::StreamData { stream_id, data } => {
            write_header(out, STREAM_DATA, a(*stream_id), len);
            write_min(out, *stream_id);
            out.extend_from_slice(data);
        }
        Frame::StreamEnd { stream_id, abort } => {
            write_header(
                out,
                STREAM_END,
                a(*stream_id) | flag(abort.is_some(), ABORT),
                len,
            );
            write_min(out, *stream_id);
            if let Some(abort) = abort {
                write_code(out, abort.code);
                out.extend_from_slice(abort.message.as_bytes());
            }
        }
        Frame::Credit {
            stream_id,
            increment,
        } => {
            write_header(out, CREDIT, a(*stream_id) | b(*increment), len);
            write_min(out, *stream_id);
            write_min(out, *increment);
        }
        Frame::Stop { stream_id, code } => {
            write_header(out, STOP, a(*stream_id), len);
            write_min(out, *stream_id);
            write_code(out, code);
        }
        Frame::Heartbeat { pong } => write_header(out, HEARTBEAT, flag(*pong, PONG), 0),
        Frame::GoAway {
            last_call_id,
            code,
            message,
        } => {
            write_header(out, GO_AWAY, a(*last_call_id), len);
            write_min(out, *last_call_id);
            write_code(out, code);
            out.extend_from_slice(message.as_bytes());
        }
    }
}

fn write_settings(out: &mut Vec<u8>, s: &super::Settings) {
    out.extend_from_slice(&s.seed);
    for value in [
        s.max_frame_size,
        s.initial_window,
        s.max_concurrent_calls,
        s.heartbeat_ms,
        s.features,
    ] {
        out.extend_from_slice(&value.to_le_bytes());
    }
}

fn write_code(out: &mut Vec<u8>, code: &str) {
    out.push(len_u8(code));
    out.extend_from_slice(code.as_bytes());
}

/// Appends a HEARTBEAT: a ping (`0e 00 00`) or, with `pong`, its answer
/// (`0e 10 00`).
pub fn encode_heartbeat(pong: bool, out: &mut Vec<u8>) {
    out.extend_from_slice(&[frame_type::HEARTBEAT, flag(pong, PONG), 0]);
}

/// Appends a GO_AWAY. Panics as [`encode`] does.
pub fn encode_go_away(last_call_id: u64, code: &str, message: &str, out: &mut Vec<u8>) {
    let frame = Frame::GoAway {
        last_call_id,
        code,
        message,
    };
    encode(&frame, out);
}

/// Appends a FAST_REPLY. Panics as [`encode`] does.
pub fn encode_fast_reply(call_id: u64, code: u64, out: &mut Vec<u8>) {
    encode(&Frame::FastReply { call_id, code }, out);
}

/// Appends a MESSAGE without attachments, up to and including its action:
/// the `payload_len` payload bytes must follow. A channel's publication
/// with history carries its position as its explicit `uuid`
/// (docs/protocol.md §10). Panics as [`encode`] does.
pub fn encode_message_header(
    call_id: u64,
    expects_reply: bool,
    uuid: Option<&[u8; 16]>,
    action: &str,
    payload_len: usize,
    out: &mut Vec<u8>,
) {
    let uuid_len = if uuid.is_some() { 16 } else { 0 };
    let len = int_len(call_id) + uuid_len + 1 + action.len() + payload_len;
    let bits = a(call_id) | flag(expects_reply, REPLY) | flag(uuid.is_some(), UUID);
    out.reserve(frame_len(len) - payload_len);
    write_header(out, frame_type::MESSAGE, bits, len);
    write_min(out, call_id);
    if let Some(uuid) = uuid {
        out.extend_from_slice(uuid);
    }
    out.push(len_u8(action));
    out.extend_from_slice(action.as_bytes());
}

/// Appends a RESPONSE without attachments, up to its call id: the
/// `payload_len` payload bytes must follow. Panics as [`encode`] does.
pub fn encode_response_header(call_id: u64, last: bool, payload_len: usize, out: &mut Vec<u8>) {
    let len = int_len(call_id) + payload_len;
    out.reserve(frame_len(len) - payload_len);
    write_header(
        out,
        frame_type::RESPONSE,
        a(call_id) | flag(last, LAST),
        len,
    );
    write_min(out, call_id);
}

/// Appends a STREAM_DATA up to its stream id: the `data_len` data bytes must
/// follow. Panics as [`encode`] does.
pub fn encode_stream_data_header(stream_id: u64, data_len: usize, out: &mut Vec<u8>) {
    let len = int_len(stream_id) + data_len;
    out.reserve(frame_len(len) - data_len);
    write_header(out, frame_type::STREAM_DATA, a(stream_id), len);
    write_min(out, stream_id);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::{Message, Response};
    use crate::test_util::hex;

    fn bytes(frame: &Frame<'_>) -> Vec<u8> {
        let mut out = Vec::new();
        encode(frame, &mut out);
        assert_eq!(out.len(), encoded_len(frame));
        out
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
        assert_eq!(bytes(&call), hex("03 10 07 05 03 61 64 64 01 02"));
        let response = Frame::Response(Response {
            call_id: 5,
            last: true,
            attachments: 0,
            payload: &[3],
        });
        assert_eq!(bytes(&response), hex("04 10 02 05 03"));
        let fast = Frame::FastReply {
            call_id: 5,
            code: 300,
        };
        assert_eq!(bytes(&fast), hex("06 10 03 05 2c 01"));
        assert_eq!(bytes(&Frame::Heartbeat { pong: false }), hex("0e 00 00"));
        assert_eq!(bytes(&Frame::Heartbeat { pong: true }), hex("0e 10 00"));
    }

    #[test]
    fn helpers_match_encode() {
        let payload = vec![7u8; 300];
        let mut out = Vec::new();
        encode_message_header(70_000, false, None, "ping", payload.len(), &mut out);
        out.extend_from_slice(&payload);
        let message = Frame::Message(Message {
            call_id: 70_000,
            expects_reply: false,
            uuid: None,
            attachments: 0,
            action: "ping",
            payload: &payload,
        });
        assert_eq!(out, bytes(&message));

        out.clear();
        let position = [9u8; 16];
        encode_message_header(0, false, Some(&position), "prices", payload.len(), &mut out);
        out.extend_from_slice(&payload);
        let publication = Frame::Message(Message {
            call_id: 0,
            expects_reply: false,
            uuid: Some(position),
            attachments: 0,
            action: "prices",
            payload: &payload,
        });
        assert_eq!(out, bytes(&publication));

        out.clear();
        encode_response_header(9, false, payload.len(), &mut out);
        out.extend_from_slice(&payload);
        let response = Frame::Response(Response {
            call_id: 9,
            last: false,
            attachments: 0,
            payload: &payload,
        });
        assert_eq!(out, bytes(&response));

        out.clear();
        encode_stream_data_header(1 << 40, 2, &mut out);
        out.extend_from_slice(b"hi");
        let data = Frame::StreamData {
            stream_id: 1 << 40,
            data: b"hi",
        };
        assert_eq!(out, bytes(&data));

        out.clear();
        encode_fast_reply(1, MAX_INTEGER, &mut out);
        assert_eq!(out, hex("06 30 07 01 ff ff ff ff ff ff"));

        out.clear();
        encode_go_away(0, "ERR_GOING_AWAY", "bye", &mut out);
        let go_away = Frame::GoAway {
            last_call_id: 0,
            code: "ERR_GOING_AWAY",
            message: "bye",
        };
        assert_eq!(out, bytes(&go_away));

        out.clear();
        encode_heartbeat(true, &mut out);
        assert_eq!(out, bytes(&Frame::Heartbeat { pong: true }));
    }

    #[test]
    #[should_panic(expected = "above 2^48-1")]
    fn refuses_integers_above_48_bits() {
        encode(&Frame::End { call_id: 1 << 48 }, &mut Vec::new());
    }

    #[test]
    #[should_panic(expected = "longer than 255")]
    fn refuses_an_overlong_code() {
        let code = "E".repeat(256);
        encode_go_away(0, &code, "", &mut Vec::new());
    }
}
