//! Frame encoding (RFC 6455 §5.2). Servers send unmasked frames; clients mask
//! with a key the caller supplies, because randomness is I/O as far as this
//! crate is concerned.
//!
//! The runtime frames a published message once and shares the bytes among
//! all recipients, so [`write_frame`] reserves header and payload in a single
//! allocation and copies the payload exactly once.

use crate::ws::close::MAX_REASON_LEN;
use crate::ws::frame::{apply_mask, OpCode, MAX_HEADER_LEN};

/// Length of the header for a payload of `payload_len` bytes.
pub fn header_len(payload_len: u64, masked: bool) -> usize {
    let len_bytes = match payload_len {
        0..=125 => 0,
        126..=0xFFFF => 2,
        _ => 8,
    };
    2 + len_bytes + if masked { 4 } else { 0 }
}

/// Writes a frame header into `out` and returns its length.
///
/// `payload_len` must be below 2^63 (RFC 6455 §5.2); lengths that large
/// cannot exist in memory, so this is only debug-asserted.
pub fn encode_header(
    fin: bool,
    rsv1: bool,
    opcode: OpCode,
    payload_len: u64,
    mask: Option<[u8; 4]>,
    out: &mut [u8; MAX_HEADER_LEN],
) -> usize {
    debug_assert!(payload_len >> 63 == 0, "payload length must fit in 63 bits");
    out[0] = (u8::from(fin) << 7) | (u8::from(rsv1) << 6) | opcode.as_u8();
    let mask_bit = if mask.is_some() { 0x80 } else { 0 };
    let mut at = match payload_len {
        0..=125 => {
            out[1] = mask_bit | payload_len as u8;
            2
        }
        126..=0xFFFF => {
            out[1] = mask_bit | 126;
            out[2..4].copy_from_slice(&(payload_len as u16).to_be_bytes());
            4
        }
        _ => {
            out[1] = mask_bit | 127;
            out[2..10].copy_from_slice(&payload_len.to_be_bytes());
            10
        }
    };
    if let Some(key) = mask {
        out[at..at + 4].copy_from_slice(&key);
        at += 4;
    }
    at
}

/// Total length of a frame carrying `payload_len` bytes.
pub fn frame_len(payload_len: usize, masked: bool) -> usize {
    header_len(payload_len as u64, masked) + payload_len
}

/// Appends one frame to `out`: header, then the payload (masked when `mask`
/// is given). Reserves the exact space first, so `out` grows at most once.
pub fn write_frame(
    out: &mut Vec<u8>,
    fin: bool,
    rsv1: bool,
    opcode: OpCode,
    payload: &[u8],
    mask: Option<[u8; 4]>,
) {
    let mut header = [0u8; MAX_HEADER_LEN];
    let n = encode_header(fin, rsv1, opcode, payload.len() as u64, mask, &mut header);
    out.reserve(n + payload.len());
    out.extend_from_slice(&header[..n]);
    let start = out.len();
    out.extend_from_slice(payload);
    if let Some(key) = mask {
        apply_mask(&mut out[start..], key, 0);
    }
}

/// A complete, unfragmented, uncompressed frame in a new buffer of exactly
/// the right size.
pub fn frame(opcode: OpCode, payload: &[u8], mask: Option<[u8; 4]>) -> Vec<u8> {
    let mut out = Vec::with_capacity(frame_len(payload.len(), mask.is_some()));
    write_frame(&mut out, true, false, opcode, payload, mask);
    out
}

/// A close payload: the code, then `reason` truncated on a character boundary
/// so the whole fits the 125-byte control-frame limit.
///
/// The code is written as given; callers pick it from the valid range (see
/// [`crate::ws::close::is_valid_close_code`]). Truncating instead of failing
/// keeps a long application message from turning a close into an error.
pub fn close_payload(code: u16, reason: &str) -> Vec<u8> {
    let mut end = reason.len().min(MAX_REASON_LEN);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = Vec::with_capacity(2 + end);
    out.extend_from_slice(&code.to_be_bytes());
    out.extend_from_slice(&reason.as_bytes()[..end]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        crate::test_util::hex(s)
    }

    #[test]
    fn rfc6455_examples() {
        // §5.7: unmasked "Hello", masked "Hello", unmasked ping "Hello".
        assert_eq!(
            frame(OpCode::Text, b"Hello", None),
            hex("81 05 48 65 6c 6c 6f")
        );
        assert_eq!(
            frame(OpCode::Text, b"Hello", Some([0x37, 0xfa, 0x21, 0x3d])),
            hex("81 85 37 fa 21 3d 7f 9f 4d 51 58")
        );
        assert_eq!(
            frame(OpCode::Ping, b"Hello", None),
            hex("89 05 48 65 6c 6c 6f")
        );
        // Fragments "Hel" + "lo".
        let mut out = Vec::new();
        write_frame(&mut out, false, false, OpCode::Text, b"Hel", None);
        write_frame(&mut out, true, false, OpCode::Continuation, b"lo", None);
        assert_eq!(out, hex("01 03 48 65 6c 80 02 6c 6f"));
    }

    #[test]
    fn length_encodings() {
        let f = frame(OpCode::Binary, &[0u8; 256], None);
        assert_eq!(&f[..4], &hex("82 7E 01 00")[..]);
        assert_eq!(f.len(), 4 + 256);
        let f = frame(OpCode::Binary, &vec![0u8; 65536], None);
        assert_eq!(&f[..10], &hex("82 7F 00 00 00 00 00 01 00 00")[..]);
        assert_eq!(f.len(), 10 + 65536);
        for (len, expected) in [(0u64, 2), (125, 2), (126, 4), (65535, 4), (65536, 10)] {
            assert_eq!(header_len(len, false), expected, "{len}");
            assert_eq!(header_len(len, true), expected + 4, "{len}");
            let mut buf = [0u8; MAX_HEADER_LEN];
            assert_eq!(
                encode_header(true, false, OpCode::Binary, len, None, &mut buf),
                expected
            );
        }
    }

    #[test]
    fn rsv1_and_fin_bits() {
        let mut buf = [0u8; MAX_HEADER_LEN];
        encode_header(true, true, OpCode::Text, 7, None, &mut buf);
        assert_eq!(&buf[..2], &[0xC1, 0x07]);
        encode_header(false, false, OpCode::Continuation, 0, None, &mut buf);
        assert_eq!(&buf[..2], &[0x00, 0x00]);
    }

    #[test]
    fn frame_is_allocated_exactly_once() {
        let f = frame(OpCode::Binary, &[1u8; 300], Some([1, 2, 3, 4]));
        assert_eq!(f.capacity(), f.len());
    }

    #[test]
    fn close_payload_truncates_on_char_boundary() {
        assert_eq!(close_payload(1000, "bye"), hex("03 e8 62 79 65"));
        let long = "é".repeat(100); // 200 bytes, 2 bytes per char
        let p = close_payload(1001, &long);
        assert_eq!(p.len(), 2 + 122); // 123 would split a character
        assert!(std::str::from_utf8(&p[2..]).is_ok());
        assert_eq!(close_payload(1000, &"a".repeat(200)).len(), 125);
    }
}
