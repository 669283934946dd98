//! UUIDs of messages and responses (§6), derived from a side's 16-byte seed
//! so that both ends compute the same id without sending it.
//!
//! The derivations only touch bytes 10–15 (and, for responses, bit `0x20`
//! of byte 8), so the version nibble and the variant bits of a v4 seed
//! survive: every derived id is a valid UUID v4.

/// Bit of byte 8 that separates the response family from the message
/// family: it sits below the two variant bits, so flipping it keeps them.
const RESPONSE_BIT: u8 = 0x20;
/// Flipped in byte 8 of the seed for unnumbered messages (a third family).
const UNNUMBERED_BIT: u8 = 0x10;

/// Whether `uuid` has the v4 marks: byte 6's high nibble is `4` and byte 8's
/// top two bits are `10`.
pub fn is_v4(uuid: &[u8; 16]) -> bool {
    uuid[6] >> 4 == 4 && uuid[8] >> 6 == 0b10
}

/// Turns 16 random bytes into a seed by setting the v4 marks, as RFC 9562
/// does for random UUIDs. The runtime draws the bytes; this crate does not.
pub fn seed_from_random(mut random: [u8; 16]) -> [u8; 16] {
    random[6] = (random[6] & 0x0F) | 0x40;
    random[8] = (random[8] & 0x3F) | 0x80;
    random
}

/// Adds `n` to bytes 10–15 of `base` read as a big-endian 48-bit number,
/// modulo 2⁴⁸.
fn add48(mut base: [u8; 16], n: u64) -> [u8; 16] {
    let mut be = [0u8; 8];
    be[2..].copy_from_slice(&base[10..]);
    let sum = u64::from_be_bytes(be).wrapping_add(n) & ((1 << 48) - 1);
    base[10..].copy_from_slice(&sum.to_be_bytes()[2..]);
    base
}

/// The UUID of the MESSAGE with `call_id` from the side whose seed is
/// `seed` (unless that MESSAGE carries an explicit UUID).
pub fn message_uuid(seed: &[u8; 16], call_id: u64) -> [u8; 16] {
    add48(*seed, call_id)
}

/// The UUID of the `sequence`-th response (RESPONSE, FAST_REPLY or ERROR;
/// from 1, END frames not counted) that the side whose seed is `seed` sends.
pub fn response_uuid(seed: &[u8; 16], sequence: u64) -> [u8; 16] {
    let mut base = *seed;
    base[8] ^= RESPONSE_BIT;
    add48(base, sequence)
}

/// The UUID of the `sequence`-th unnumbered message (call id 0, from 1)
/// that the side whose seed is `seed` sends.
pub fn unnumbered_uuid(seed: &[u8; 16], sequence: u64) -> [u8; 16] {
    let mut base = *seed;
    base[8] ^= UNNUMBERED_BIT;
    add48(base, sequence)
}

/// The canonical text form: `8-4-4-4-12` lowercase hex digits.
pub fn format(uuid: &[u8; 16]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(36);
    for (i, byte) in uuid.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        s.push(char::from(HEX[usize::from(byte >> 4)]));
        s.push(char::from(HEX[usize::from(byte & 0xF)]));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: [u8; 16] = [
        0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x46, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee,
        0xff,
    ];

    #[test]
    fn derivations_follow_the_spec() {
        assert!(is_v4(&SEED));
        assert_eq!(
            format(&message_uuid(&SEED, 1)),
            "00112233-4455-4677-8899-aabbccddef00"
        );
        // Byte 8 0x88 ^ 0x20 = 0xa8: the response family.
        assert_eq!(
            format(&response_uuid(&SEED, 1)),
            "00112233-4455-4677-a899-aabbccddef00"
        );
        // Bytes 10–15 wrap modulo 2^48 without touching byte 9.
        let mut top = SEED;
        top[10..].copy_from_slice(&[0xff; 6]);
        assert_eq!(
            format(&message_uuid(&top, 2)),
            "00112233-4455-4677-8899-000000000001"
        );
        assert!(is_v4(&message_uuid(&top, 2)));
        assert!(is_v4(&response_uuid(&top, u64::MAX)));
    }

    #[test]
    fn seeds_get_the_marks() {
        let seed = seed_from_random([0xff; 16]);
        assert!(is_v4(&seed));
        assert_eq!((seed[6], seed[8]), (0x4f, 0xbf));
        assert!(is_v4(&seed_from_random([0; 16])));
        assert!(!is_v4(&[0; 16]));
    }
}
