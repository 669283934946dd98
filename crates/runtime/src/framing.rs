//! Server-side framing of outgoing messages into shared bytes.

use bytes::{BufMut, Bytes, BytesMut};
use switchboard_proto::ws::encoder::encode_header;
use switchboard_proto::ws::frame::OpCode;

fn opcode(binary: bool) -> OpCode {
    if binary {
        OpCode::Binary
    } else {
        OpCode::Text
    }
}

/// Append one unmasked, final frame carrying `prefix ++ payload` to `out`.
fn write(out: &mut BytesMut, op: OpCode, rsv1: bool, prefix: &[u8], payload: &[u8]) {
    let len = prefix.len() + payload.len();
    let mut header = [0u8; 14];
    let header_len = encode_header(true, rsv1, op, len as u64, None, &mut header);
    out.reserve(header_len + len);
    out.put_slice(&header[..header_len]);
    out.put_slice(prefix);
    out.put_slice(payload);
}

/// One frame, header and payload in one allocation so one `Bytes` can be
/// shared by every recipient.
fn build(op: OpCode, rsv1: bool, prefix: &[u8], payload: &[u8]) -> Bytes {
    let len = prefix.len() + payload.len();
    let mut out = BytesMut::with_capacity(header_len(len) + len);
    write(&mut out, op, rsv1, prefix, payload);
    out.freeze()
}

/// Append a whole message's frame to `out` (coalescing small sends).
pub fn append_message(out: &mut BytesMut, payload: &[u8], binary: bool) {
    write(out, opcode(binary), false, &[], payload);
}

/// Frame a whole message.
pub fn frame_message(payload: &[u8], binary: bool) -> Bytes {
    build(opcode(binary), false, &[], payload)
}

/// Frame `prefix ++ payload` (a virtual socket's tag in front of a message).
pub fn frame_parts(prefix: &[u8], payload: &[u8], binary: bool) -> Bytes {
    build(opcode(binary), false, prefix, payload)
}

/// Frame a message whose payload is already compressed (RSV1 set).
pub fn frame_compressed(payload: &[u8], binary: bool) -> Bytes {
    build(opcode(binary), true, &[], payload)
}

/// A control frame (ping, pong, close) with a payload of at most 125 bytes.
pub fn frame_control(op: OpCode, payload: &[u8]) -> Bytes {
    build(op, false, &[], payload)
}

/// The header of an unmasked, final message frame carrying `len` payload
/// bytes, written into `out`; returns its length.
pub fn message_header(len: usize, binary: bool, out: &mut [u8; 14]) -> usize {
    encode_header(true, false, opcode(binary), len as u64, None, out)
}

/// Header length of an unmasked frame carrying `len` payload bytes.
pub fn header_len(len: usize) -> usize {
    switchboard_proto::ws::encoder::header_len(len as u64, false)
}

/// A SockJS message frame (`a["<prefix ++ payload>"]`, quoted as the
/// protocol requires) in one WebSocket text message, for the SockJS
/// WebSocket transport. SockJS carries text only: a binary message (or
/// bytes that are not UTF-8) has no SockJS frame, `None`.
pub fn sockjs_message(prefix: &[u8], payload: &[u8], binary: bool) -> Option<Bytes> {
    if binary {
        return None;
    }
    let text: std::borrow::Cow<'_, str> = match prefix.is_empty() {
        true => std::str::from_utf8(payload).ok()?.into(),
        false => String::from_utf8([prefix, payload].concat()).ok()?.into(),
    };
    let mut frame = Vec::with_capacity(text.len() + 8);
    switchboard_proto::sockjs::Framing::WebSocket.write_messages(&mut frame, [&*text]);
    Some(build(OpCode::Text, false, &[], &frame))
}

/// The payload of a frame built here (unmasked, its length in the header):
/// the same bytes, shared. A SockJS session on the HTTP transports takes
/// the encoded frame the WebSocket transport sends, without its header.
pub fn websocket_payload(frame: &Bytes) -> Bytes {
    let header = match frame.get(1).map(|b| b & 0x7F) {
        Some(126) => 4,
        Some(127) => 10,
        _ => 2,
    };
    frame.slice(header.min(frame.len())..)
}

/// Protocol frames carried in one SockJS message, `a["<base64>"]`
/// (docs/protocol.md, "Over SockJS"), as the HTTP transports' sessions
/// queue it (no WebSocket header: they have no WebSocket).
pub fn sockjs_carried(frames: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(switchboard_proto::sockjs::carried_len(frames.len()) + 5);
    switchboard_proto::sockjs::write_carried_message(&mut out, frames);
    Bytes::from(out)
}

/// A SockJS control frame (`o`, `h`, `c[...]`, written by `write`) in one
/// WebSocket text message.
pub fn sockjs_frame(write: impl FnOnce(&mut Vec<u8>)) -> Bytes {
    let mut frame = Vec::with_capacity(32);
    write(&mut frame);
    build(OpCode::Text, false, &[], &frame)
}
