//! Frame-level vocabulary of RFC 6455 §5.2: opcodes, the parsed header, and
//! masking. Header *encoding* lives in [`crate::ws::encoder`]; deciding whether
//! a parsed header is acceptable in the current state is the decoder's job.

use crate::ws::error::ProtocolError;

/// Longest possible frame header: 2 fixed bytes, 8 bytes of extended length
/// and a 4-byte masking key (RFC 6455 §5.2).
pub const MAX_HEADER_LEN: usize = 14;

/// Largest payload a control frame may carry (RFC 6455 §5.5): control frames
/// must fit the 7-bit length field so they can be handled without buffering.
pub const MAX_CONTROL_PAYLOAD: usize = 125;

/// The opcodes RFC 6455 defines. Values 3-7 and 0xB-0xF are reserved and have
/// no variant: the decoder rejects them with [`ProtocolError::InvalidOpcode`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpCode {
    /// 0x0: a later fragment of a data message.
    Continuation,
    /// 0x1: first frame of a UTF-8 text message.
    Text,
    /// 0x2: first frame of a binary message.
    Binary,
    /// 0x8: connection close.
    Close,
    /// 0x9: ping.
    Ping,
    /// 0xA: pong.
    Pong,
}

impl OpCode {
    /// Maps the 4-bit wire value to an opcode; `None` for reserved values.
    pub fn from_u8(value: u8) -> Option<OpCode> {
        match value {
            0x0 => Some(OpCode::Continuation),
            0x1 => Some(OpCode::Text),
            0x2 => Some(OpCode::Binary),
            0x8 => Some(OpCode::Close),
            0x9 => Some(OpCode::Ping),
            0xA => Some(OpCode::Pong),
            _ => None,
        }
    }

    /// The 4-bit wire value.
    pub fn as_u8(self) -> u8 {
        match self {
            OpCode::Continuation => 0x0,
            OpCode::Text => 0x1,
            OpCode::Binary => 0x2,
            OpCode::Close => 0x8,
            OpCode::Ping => 0x9,
            OpCode::Pong => 0xA,
        }
    }

    /// Control opcodes have the high bit of the opcode nibble set (RFC 6455 §5.5).
    pub fn is_control(self) -> bool {
        self.as_u8() & 0x8 != 0
    }
}

/// A frame header as it appeared on the wire, before any state-dependent
/// validation (reserved bits, opcode, masking rule, size limits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// FIN: this is the last frame of a message.
    pub fin: bool,
    /// RSV1: "per-message compressed" when permessage-deflate is negotiated.
    pub rsv1: bool,
    /// RSV2: no extension we support defines it.
    pub rsv2: bool,
    /// RSV3: no extension we support defines it.
    pub rsv3: bool,
    /// Raw 4-bit opcode, kept raw so the decoder can report reserved values.
    pub opcode: u8,
    /// Masking key, present when the MASK bit is set.
    pub mask: Option<[u8; 4]>,
    /// Payload length in bytes.
    pub payload_len: u64,
}

impl FrameHeader {
    /// Parses a header from the start of `buf`.
    ///
    /// Returns `Ok(None)` when `buf` does not yet hold the whole header (need
    /// more bytes), or the header and its length in bytes. The only error
    /// detectable without state is a 64-bit length with its most significant
    /// bit set, which RFC 6455 §5.2 forbids.
    ///
    /// Non-minimal length encodings (e.g. 126 followed by a length below 126)
    /// are accepted: RFC 6455 asks senders for the minimal form but gives the
    /// receiver no reason to care, and rejecting them would only add a way to
    /// fail interoperability.
    pub fn parse(buf: &[u8]) -> Result<Option<(FrameHeader, usize)>, ProtocolError> {
        let [b0, b1, ..] = *buf else {
            return Ok(None);
        };
        let masked = b1 & 0x80 != 0;
        let len7 = b1 & 0x7F;
        let ext_len = match len7 {
            126 => 2,
            127 => 8,
            _ => 0,
        };
        let header_len = 2 + ext_len + if masked { 4 } else { 0 };
        if buf.len() < header_len {
            return Ok(None);
        }
        let payload_len = match len7 {
            126 => u64::from(u16::from_be_bytes([buf[2], buf[3]])),
            127 => {
                let mut be = [0u8; 8];
                be.copy_from_slice(&buf[2..10]);
                let len = u64::from_be_bytes(be);
                if len >> 63 != 0 {
                    return Err(ProtocolError::InvalidLength);
                }
                len
            }
            n => u64::from(n),
        };
        let mask = masked.then(|| {
            let at = 2 + ext_len;
            [buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]
        });
        let header = FrameHeader {
            fin: b0 & 0x80 != 0,
            rsv1: b0 & 0x40 != 0,
            rsv2: b0 & 0x20 != 0,
            rsv3: b0 & 0x10 != 0,
            opcode: b0 & 0x0F,
            mask,
            payload_len,
        };
        Ok(Some((header, header_len)))
    }
}

/// XORs `buf` with the masking key in place (RFC 6455 §5.3).
///
/// `offset` is how many payload bytes of the same frame were already
/// processed, so a payload split across reads unmasks correctly. Masking and
/// unmasking are the same operation.
pub fn apply_mask(buf: &mut [u8], key: [u8; 4], offset: usize) {
    // Rotate the key so that index 0 of `buf` lines up with key[offset % 4];
    // then whole 8-byte words can be XORed at once, which the compiler turns
    // into wide SIMD operations. This is the hot loop for every client frame.
    let shift = offset % 4;
    let key = [
        key[shift],
        key[(shift + 1) % 4],
        key[(shift + 2) % 4],
        key[(shift + 3) % 4],
    ];
    let word = u64::from_ne_bytes([
        key[0], key[1], key[2], key[3], key[0], key[1], key[2], key[3],
    ]);
    let mut chunks = buf.chunks_exact_mut(8);
    for chunk in &mut chunks {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(chunk);
        chunk.copy_from_slice(&(u64::from_ne_bytes(bytes) ^ word).to_ne_bytes());
    }
    // The tail starts at a multiple of 8, hence of 4: the key index restarts at 0.
    for (i, byte) in chunks.into_remainder().iter_mut().enumerate() {
        *byte ^= key[i % 4];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opcode_round_trip_and_reserved_values() {
        for v in 0u8..16 {
            match OpCode::from_u8(v) {
                Some(op) => assert_eq!(op.as_u8(), v),
                None => assert!(matches!(v, 3..=7 | 0xB..=0xF), "{v}"),
            }
        }
        assert!(OpCode::Ping.is_control());
        assert!(!OpCode::Continuation.is_control());
    }

    #[test]
    fn parses_short_medium_long_lengths() {
        let (h, n) = FrameHeader::parse(&[0x81, 0x05]).unwrap().unwrap();
        assert_eq!(
            (h.fin, h.opcode, h.payload_len, h.mask, n),
            (true, 1, 5, None, 2)
        );
        let (h, n) = FrameHeader::parse(&[0x82, 0x7E, 0x01, 0x00])
            .unwrap()
            .unwrap();
        assert_eq!((h.payload_len, n), (256, 4));
        let long = [0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0];
        let (h, n) = FrameHeader::parse(&long).unwrap().unwrap();
        assert_eq!((h.payload_len, n), (65536, 10));
        let masked = [0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d];
        let (h, n) = FrameHeader::parse(&masked).unwrap().unwrap();
        assert_eq!((h.mask, n), (Some([0x37, 0xfa, 0x21, 0x3d]), 6));
    }

    #[test]
    fn incomplete_header_needs_more() {
        let full = [0x82, 0xFF, 0, 0, 0, 0, 0, 1, 0, 0, 1, 2, 3, 4];
        for end in 0..full.len() {
            assert_eq!(FrameHeader::parse(&full[..end]).unwrap(), None, "{end}");
        }
        assert!(FrameHeader::parse(&full).unwrap().is_some());
    }

    #[test]
    fn rejects_64_bit_length_with_msb() {
        let bad = [0x82, 0x7F, 0x80, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(FrameHeader::parse(&bad), Err(ProtocolError::InvalidLength));
    }

    #[test]
    fn reserved_bits_are_reported() {
        let (h, _) = FrameHeader::parse(&[0x71, 0x00]).unwrap().unwrap();
        assert!(!h.fin && h.rsv1 && h.rsv2 && h.rsv3);
    }

    #[test]
    fn mask_matches_naive_at_every_offset() {
        let key = [0x37, 0xfa, 0x21, 0x3d];
        let data: Vec<u8> = (0..37u8).collect();
        for offset in 0..8 {
            let mut fast = data.clone();
            apply_mask(&mut fast, key, offset);
            let naive: Vec<u8> = data
                .iter()
                .enumerate()
                .map(|(i, b)| b ^ key[(i + offset) % 4])
                .collect();
            assert_eq!(fast, naive, "offset {offset}");
        }
    }

    #[test]
    fn split_masking_equals_whole() {
        let key = [1, 2, 3, 4];
        let mut whole: Vec<u8> = (0..50u8).collect();
        let mut split = whole.clone();
        apply_mask(&mut whole, key, 0);
        let (a, b) = split.split_at_mut(13);
        apply_mask(a, key, 0);
        apply_mask(b, key, 13);
        assert_eq!(whole, split);
    }
}
