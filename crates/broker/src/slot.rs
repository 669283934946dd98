//! Redis Cluster's key slots, computed as Redis does (the cluster
//! specification, "Key distribution model"): `CRC16(key) mod 16384`, where
//! only the part between the first `{` and the next `}` is hashed when that
//! part is not empty (a "hash tag"). Pure, no I/O.
//!
//! Sharded channels (`SSUBSCRIBE`, `SPUBLISH`) are placed like keys, so a
//! channel named `<prefix>{c}` lives in the slot of `c`, and so will the
//! channel's history keys (`<prefix>{c}:history`...): one slot, one node,
//! single-slot scripts.

/// Slots in a Redis Cluster.
pub const SLOTS: u16 = 16384;

/// CRC16/XMODEM (polynomial 0x1021, initial 0), the variant Redis uses.
pub fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &byte in bytes {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The part of `key` that decides its slot: the hash tag if there is a
/// non-empty one, else the whole key.
pub fn hashed_part(key: &[u8]) -> &[u8] {
    if let Some(open) = key.iter().position(|&b| b == b'{') {
        let rest = &key[open + 1..];
        if let Some(close) = rest.iter().position(|&b| b == b'}') {
            if close > 0 {
                return &rest[..close];
            }
        }
    }
    key
}

/// The slot of a key (or of a sharded channel).
pub fn slot(key: &[u8]) -> u16 {
    crc16(hashed_part(key)) % SLOTS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc16_matches_the_specification() {
        // The check value the cluster specification gives.
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(crc16(b""), 0);
    }

    #[test]
    fn slots_match_redis() {
        // Values from `CLUSTER KEYSLOT` on Redis 7.0.
        assert_eq!(slot(b"foo"), 12182);
        assert_eq!(slot(b"bar"), 5061);
        assert_eq!(slot(b"hello"), 866);
        assert_eq!(slot(b"somekey"), 11058);
    }

    #[test]
    fn hash_tags_as_redis_reads_them() {
        assert_eq!(slot(b"{user1000}.following"), slot(b"user1000"));
        assert_eq!(slot(b"switchboard:{room}"), slot(b"room"));
        assert_eq!(slot(b"switchboard:{room}:history"), slot(b"room"));
        // The first `{` and the first `}` after it.
        assert_eq!(hashed_part(b"foo{bar}{zap}"), b"bar");
        assert_eq!(hashed_part(b"foo{{bar}}zap"), b"{bar");
        // An empty tag, or none closed: the whole key.
        assert_eq!(hashed_part(b"foo{}{bar}"), b"foo{}{bar}");
        assert_eq!(hashed_part(b"foo{bar"), b"foo{bar");
        assert_eq!(hashed_part(b"}foo{"), b"}foo{");
    }

    #[test]
    fn every_slot_is_in_range() {
        for i in 0..10_000u32 {
            assert!(slot(format!("channel-{i}").as_bytes()) < SLOTS);
        }
    }
}
