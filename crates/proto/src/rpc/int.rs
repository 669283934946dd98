//! The protocol's integers (§3): unsigned, little-endian, 1, 2, 4 or 6 bytes
//! wide, the width given by a 2-bit code in the frame's descriptor.

/// Largest value an integer field holds: 2⁴⁸ − 1, exact in a JavaScript
/// number.
pub const MAX_INTEGER: u64 = (1 << 48) - 1;

/// Bytes per width code: `0` → 1, `1` → 2, `2` → 4, `3` → 6.
const WIDTHS: [usize; 4] = [1, 2, 4, 6];

/// The byte width of a 2-bit width code (only the low two bits are used).
#[inline]
pub fn width_bytes(code: u8) -> usize {
    WIDTHS[usize::from(code & 3)]
}

/// The smallest width code that holds `value`, which must be at most
/// [`MAX_INTEGER`] (larger values get code 3 and do not fit).
#[inline]
pub fn width_code(value: u64) -> u8 {
    match value {
        0..=0xFF => 0,
        0x100..=0xFFFF => 1,
        0x1_0000..=0xFFFF_FFFF => 2,
        _ => 3,
    }
}

/// Reads a little-endian unsigned integer of `width` bytes (1..=8) from the
/// start of `buf`; `None` when `buf` is shorter.
#[inline]
pub fn read_uint(buf: &[u8], width: usize) -> Option<u64> {
    let bytes = buf.get(..width)?;
    let mut le = [0u8; 8];
    le[..width].copy_from_slice(bytes);
    Some(u64::from_le_bytes(le))
}

/// Appends the low `width` bytes of `value` in little-endian order.
///
/// # Panics
/// When `value` does not fit in `width` bytes: writing it truncated would
/// send a different number, so this is a caller bug, not a peer's.
#[inline]
pub fn write_uint(out: &mut Vec<u8>, value: u64, width: usize) {
    assert!(
        width >= 8 || value >> (8 * width) == 0,
        "{value} does not fit in {width} bytes"
    );
    out.extend_from_slice(&value.to_le_bytes()[..width]);
}

/// Appends `value` in its smallest width and returns the width code used.
///
/// # Panics
/// When `value` is above [`MAX_INTEGER`].
#[inline]
pub fn write_min(out: &mut Vec<u8>, value: u64) -> u8 {
    let code = width_code(value);
    write_uint(out, value, width_bytes(code));
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_follow_the_spec() {
        assert_eq!(
            (0..4).map(width_bytes).collect::<Vec<_>>(),
            vec![1, 2, 4, 6]
        );
        assert_eq!(width_bytes(0xFD), 2, "only the low two bits count");
        for (value, code) in [
            (0, 0),
            (0xFF, 0),
            (0x100, 1),
            (0xFFFF, 1),
            (0x1_0000, 2),
            (0xFFFF_FFFF, 2),
            (0x1_0000_0000, 3),
            (MAX_INTEGER, 3),
        ] {
            assert_eq!(width_code(value), code, "{value:#x}");
        }
    }

    #[test]
    fn little_endian_round_trip() {
        let mut out = Vec::new();
        assert_eq!(write_min(&mut out, 300), 1);
        assert_eq!(out, [0x2c, 0x01]);
        out.clear();
        assert_eq!(write_min(&mut out, MAX_INTEGER), 3);
        assert_eq!(out, [0xff; 6]);
        assert_eq!(read_uint(&out, 6), Some(MAX_INTEGER));
        assert_eq!(read_uint(&[0x2c, 0x01, 0, 0], 4), Some(300));
        assert_eq!(read_uint(&[0x2c], 2), None);
    }

    #[test]
    #[should_panic(expected = "does not fit")]
    fn refuses_to_truncate() {
        write_uint(&mut Vec::new(), 256, 1);
    }
}
