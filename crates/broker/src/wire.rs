//! A channel message as it travels through Redis (docs/scale-out.md,
//! "Message format"): a fixed header, then the payload as published.
//!
//! ```text
//! 0      version (1)
//! 1      flags: bit 0 binary, bit 1 an excluded connection follows,
//!        bit 2 a position follows
//! 2..10  origin node id, u64 little-endian (random per server)
//! +8     excluded connection id, u64 little-endian (only with bit 1)
//! +16    the channel's epoch then the offset, u64 big-endian each (only
//!        with bit 2; written by the history script, docs/scale-out.md)
//! ..     payload
//! ```
//!
//! The channel is not repeated inside: it is the Redis channel's name
//! without the prefix. The excluded connection means something only on the
//! origin node (`ws.publish` leaves out its sender).

use switchboard_runtime::Position;

/// The only version written; a message of another version is ignored (a
/// newer node's format), never delivered half-understood.
pub const VERSION: u8 = 1;
const BINARY: u8 = 1;
const EXCLUDE: u8 = 2;
const POSITIONED: u8 = 4;
const HEADER: usize = 10;

/// A decoded message, borrowing its payload.
#[derive(Debug, PartialEq, Eq)]
pub struct Message<'a> {
    pub origin: u64,
    pub binary: bool,
    pub exclude: Option<u64>,
    pub position: Option<Position>,
    pub payload: &'a [u8],
}

/// Encode a message: the one copy a payload makes on its way to Redis.
pub fn encode(origin: u64, binary: bool, exclude: Option<u64>, payload: &[u8]) -> Vec<u8> {
    let mut out = head(origin, binary, exclude, false);
    out.reserve(payload.len());
    out.extend_from_slice(payload);
    out
}

/// The header of a message whose position the history script appends
/// (`positioned`), or of any message: the version, flags, origin and
/// excluded connection.
pub fn head(origin: u64, binary: bool, exclude: Option<u64>, positioned: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + 8);
    let flags = if binary { BINARY } else { 0 }
        | if exclude.is_some() { EXCLUDE } else { 0 }
        | if positioned { POSITIONED } else { 0 };
    out.push(VERSION);
    out.push(flags);
    out.extend_from_slice(&origin.to_le_bytes());
    if let Some(id) = exclude {
        out.extend_from_slice(&id.to_le_bytes());
    }
    out
}

/// Decode a message; `None` for anything that is not a message of this
/// version (another program's traffic on the same channel, a newer node).
pub fn decode(bytes: &[u8]) -> Option<Message<'_>> {
    let (&version, rest) = bytes.split_first()?;
    let (&flags, rest) = rest.split_first()?;
    if version != VERSION || flags & !(BINARY | EXCLUDE | POSITIONED) != 0 {
        return None;
    }
    let (origin, rest) = u64_of(rest)?;
    let (exclude, payload) = if flags & EXCLUDE != 0 {
        let (id, rest) = u64_of(rest)?;
        (Some(id), rest)
    } else {
        (None, rest)
    };
    let (position, payload) = if flags & POSITIONED != 0 {
        let (epoch, rest) = rest.split_first_chunk::<8>()?;
        let (offset, rest) = rest.split_first_chunk::<8>()?;
        let position = Position {
            epoch: u64::from_be_bytes(*epoch),
            offset: u64::from_be_bytes(*offset),
        };
        (Some(position), rest)
    } else {
        (None, payload)
    };
    Some(Message {
        origin,
        binary: flags & BINARY != 0,
        exclude,
        position,
        payload,
    })
}

fn u64_of(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let (head, rest) = bytes.split_first_chunk::<8>()?;
    Some((u64::from_le_bytes(*head), rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let bytes = encode(7, true, Some(42), b"hi");
        assert_eq!(
            bytes,
            [1, 3, 7, 0, 0, 0, 0, 0, 0, 0, 42, 0, 0, 0, 0, 0, 0, 0, b'h', b'i']
        );
        let message = decode(&bytes).unwrap();
        assert_eq!(
            message,
            Message {
                origin: 7,
                binary: true,
                exclude: Some(42),
                position: None,
                payload: b"hi"
            }
        );
        let text = encode(u64::MAX, false, None, b"");
        assert_eq!(text.len(), 10);
        let message = decode(&text).unwrap();
        assert_eq!((message.binary, message.exclude), (false, None));
        assert!(message.payload.is_empty());
    }

    #[test]
    fn positioned_messages_carry_epoch_and_offset() {
        // As the history script builds it: the head, the epoch as stored,
        // the offset big-endian, the payload.
        let mut bytes = head(7, false, None, true);
        bytes.extend_from_slice(&0xdead_beef_u64.to_be_bytes());
        bytes.extend_from_slice(&300u64.to_be_bytes());
        bytes.extend_from_slice(b"hi");
        let message = decode(&bytes).unwrap();
        assert_eq!(
            message.position,
            Some(Position {
                epoch: 0xdead_beef,
                offset: 300
            })
        );
        assert_eq!(message.payload, b"hi");
        // A position cut short is no message.
        assert_eq!(decode(&bytes[..bytes.len() - 5]), None);
    }

    #[test]
    fn refuses_what_it_does_not_understand() {
        assert_eq!(decode(b""), None);
        assert_eq!(decode(b"hello world, plain text"), None);
        let mut newer = encode(1, false, None, b"x");
        newer[0] = 2;
        assert_eq!(decode(&newer), None);
        let mut unknown_flag = encode(1, false, None, b"x");
        unknown_flag[1] = 8;
        assert_eq!(decode(&unknown_flag), None);
        // Says an excluded id follows, but the bytes end.
        assert_eq!(decode(&[1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 1]), None);
    }
}
