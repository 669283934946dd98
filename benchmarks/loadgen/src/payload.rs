//! The load-carrying payload: 16 lowercase hex digits of send time (ns since
//! the load generator started), 8 hex digits of the sending connection's
//! index (so a `channels` client tells its own reply from the broadcasts of
//! others), then `x` up to the payload size.

/// Bytes of the payload that carry data; the rest is padding.
pub const HEADER_LEN: usize = 24;
/// The smallest payload SCENARIOS.md allows.
pub const MIN_PAYLOAD: usize = 32;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// 0..15 for a hex digit (either case), 0xFF for anything else.
static UNHEX: [u8; 256] = {
    let mut t = [0xFFu8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

#[inline]
fn push_hex(out: &mut Vec<u8>, value: u64, digits: usize) {
    let mut buf = [0u8; 16];
    for (i, slot) in buf[..digits].iter_mut().enumerate() {
        *slot = HEX[((value >> (4 * (digits - 1 - i))) & 0xF) as usize];
    }
    out.extend_from_slice(&buf[..digits]);
}

/// Appends a payload of exactly `size` (>= HEADER_LEN) bytes.
#[inline]
pub fn write(out: &mut Vec<u8>, sent_ns: u64, conn: u32, size: usize) {
    push_hex(out, sent_ns, 16);
    push_hex(out, conn as u64, 8);
    out.resize(out.len() + (size - HEADER_LEN), b'x');
}

/// Parses hex digits; None when any byte is not one. The OR of all table
/// entries catches every invalid byte with one branch at the end.
#[inline]
fn parse_hex(digits: &[u8]) -> Option<u64> {
    let mut value = 0u64;
    let mut bad = 0u8;
    for &d in digits {
        let v = UNHEX[d as usize];
        bad |= v;
        value = (value << 4) | (v & 0xF) as u64;
    }
    (bad & 0x80 == 0).then_some(value)
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// Eight lowercase hex digits at once (SWAR): the per-message hot path, where
/// a digit-by-digit loop is a chain of 24 dependent steps. None when any byte
/// is not `0-9a-f` (the caller then tries the table, which also takes
/// uppercase).
#[inline]
fn parse_hex8_lower(digits: [u8; 8]) -> Option<u32> {
    // Little-endian load: the first (most significant) digit is byte 0.
    let c = u64::from_le_bytes(digits);
    // For bytes below 0x80, x + (0x80 - k) sets the byte's top bit exactly
    // when x >= k, and no carry crosses into the next byte.
    // (Bytes with the top bit set are rejected below; wrapping keeps the
    // arithmetic defined for them meanwhile.)
    let at_least = |k: u64| c.wrapping_add((0x80 - k) * ONES) & HIGH;
    let digit = at_least(0x30) & !at_least(0x3A);
    let letter = at_least(0x61) & !at_least(0x67);
    if c & HIGH != 0 || (digit | letter) != HIGH {
        return None;
    }
    // '0'..'9' -> low nibble; 'a'..'f' -> low nibble (1..6) + 9.
    let n = (c & (0x0F * ONES)) + (letter >> 7) * 9;
    // Pairs of nibbles into bytes 0, 2, 4, 6; then pairs of bytes into
    // 16-bit halves at bits 0 and 32; then the two halves.
    let p = ((n & 0x000F_000F_000F_000F) << 4) | ((n & 0x0F00_0F00_0F00_0F00) >> 8);
    let q = ((p & 0x0000_00FF_0000_00FF) << 8) | ((p & 0x00FF_0000_00FF_0000) >> 16);
    Some((((q & 0xFFFF) << 16) | ((q >> 32) & 0xFFFF)) as u32)
}

#[inline]
fn eight(bytes: &[u8]) -> [u8; 8] {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[..8]);
    b
}

/// The send time and sender of a load payload; None for anything else
/// (control messages such as `joined`).
#[inline]
pub fn parse(payload: &[u8]) -> Option<(u64, u32)> {
    if payload.len() < HEADER_LEN {
        return None;
    }
    let fast = (
        parse_hex8_lower(eight(&payload[0..8])),
        parse_hex8_lower(eight(&payload[8..16])),
        parse_hex8_lower(eight(&payload[16..24])),
    );
    if let (Some(hi), Some(lo), Some(conn)) = fast {
        return Some((((hi as u64) << 32) | lo as u64, conn));
    }
    let ts = parse_hex(&payload[..16])?;
    let conn = parse_hex(&payload[16..HEADER_LEN])? as u32;
    Some((ts, conn))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip() {
        for (ts, conn, size) in [
            (0u64, 0u32, 32usize),
            (u64::MAX, u32::MAX, 32),
            (0x0123_4567_89ab_cdef, 19_999, 100),
        ] {
            let mut out = b"prefix".to_vec();
            write(&mut out, ts, conn, size);
            let p = &out[6..];
            assert_eq!(p.len(), size);
            assert!(p[24..].iter().all(|&b| b == b'x'));
            assert_eq!(parse(p), Some((ts, conn)));
        }
    }

    #[test]
    fn layout() {
        let mut out = Vec::new();
        write(&mut out, 0x1a2b, 0xff, 32);
        assert_eq!(out, b"0000000000001a2b000000ffxxxxxxxx");
    }

    #[test]
    fn swar_matches_table() {
        // Every byte value in every position, and many random digit strings.
        let mut rng = crate::frame::XorShift::new(11);
        for pos in 0..8 {
            for b in 0..=255u8 {
                let mut d = *b"0123abcd";
                d[pos] = b;
                let want = parse_hex(&d).map(|v| v as u32);
                match parse_hex8_lower(d) {
                    Some(v) => assert_eq!(Some(v), want, "{d:?}"),
                    // Only uppercase digits leave the fast path yet are valid.
                    None => assert!(want.is_none() || b.is_ascii_uppercase(), "{d:?}"),
                }
            }
        }
        for _ in 0..10_000 {
            let v = rng.next_u64() as u32;
            let mut d = Vec::new();
            push_hex(&mut d, v as u64, 8);
            assert_eq!(parse_hex8_lower(eight(&d)), Some(v));
        }
    }

    #[test]
    fn rejects_non_hex() {
        assert_eq!(parse(b"joined"), None);
        assert_eq!(parse(b"000000000000000g00000000xxxxxxxx"), None);
        assert_eq!(parse(b"0000000000000000 0000000xxxxxxxx"), None);
        assert_eq!(parse(b"00000000000000ff0000000"), None, "too short");
        // Any bytes after the header are padding and not checked.
        assert_eq!(parse(b"00000000000000ff00000001\xff"), Some((255, 1)));
        assert_eq!(parse(b"00000000000000FF00000001"), Some((255, 1)));
    }
}
