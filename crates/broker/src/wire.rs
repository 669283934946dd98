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
//!        with bit 2; messages of before batches, still read from old
//!        histories)
//! ..     payload
//! ```
//!
//! A channel with history publishes **batches**: a run of one node's
//! consecutive publications to the channel, appended and published by one
//! call of the history script as one pub/sub message and one stream entry,
//! so Redis runs one `XADD` and one `PUBLISH` per run instead of one each
//! per publication (docs/scale-out.md, "History and recovery"):
//!
//! ```text
//! 0      version (1)
//! 1      flags: bit 3 (a batch), nothing else
//! 2..10  the channel's epoch, u64 big-endian (as the meta hash stores it)
//! 10..18 the first publication's offset, u64 big-endian; the others
//!        follow one by one
//! ..     per publication: its length, u32 little-endian, then the
//!        publication as a plain message (above, without bit 2)
//! ```
//!
//! The script writes the epoch and the first offset (only Redis knows
//! them); this node frames the rest (`frame`).
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
const BATCH: u8 = 8;
const HEADER: usize = 10;
/// What precedes a batch's publications: version, flags, epoch, offset.
const BATCH_HEADER: usize = 18;

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

/// The first two bytes of a batch, before the epoch and offset the history
/// script writes.
pub fn batch_head() -> [u8; 2] {
    [VERSION, BATCH]
}

/// Append one publication (a plain message, `encode`) to a batch's body.
pub fn frame(body: &mut Vec<u8>, message: &[u8]) {
    // A publication never nears 4 GiB: the servers' payload limits are
    // far below it, and Redis takes at most 512 MB in one argument.
    let length = u32::try_from(message.len()).unwrap_or(u32::MAX);
    body.extend_from_slice(&length.to_le_bytes());
    body.extend_from_slice(message);
}

/// The publications in what came from Redis: one plain message, or a
/// batch's publications with their positions, in order. `None` for
/// anything that is not wholly understood (another program's traffic on
/// the same channel, a newer node): a batch is checked through before its
/// first publication is handed out, so it is never delivered half.
pub fn messages(bytes: &[u8]) -> Option<Messages<'_>> {
    if bytes.get(1) != Some(&BATCH) {
        return decode(bytes).map(|message| Messages::One(Some(message)));
    }
    let (head, body) = bytes.split_first_chunk::<BATCH_HEADER>()?;
    if head[0] != VERSION {
        return None;
    }
    let epoch = u64::from_be_bytes(head[2..10].try_into().ok()?);
    let first = u64::from_be_bytes(head[10..18].try_into().ok()?);
    // A run has one publication at least.
    if body.is_empty() {
        return None;
    }
    let mut check = Batch {
        epoch,
        next: first,
        rest: body,
    };
    while !check.rest.is_empty() {
        check.next()?;
    }
    Some(Messages::Batch(Batch {
        epoch,
        next: first,
        rest: body,
    }))
}

/// What `messages` found.
pub enum Messages<'a> {
    One(Option<Message<'a>>),
    Batch(Batch<'a>),
}

/// The publications of a batch not yet handed out.
pub struct Batch<'a> {
    epoch: u64,
    next: u64,
    rest: &'a [u8],
}

impl<'a> Batch<'a> {
    /// The next publication, `None` at the end or at a flaw.
    fn next(&mut self) -> Option<Message<'a>> {
        let (length, rest) = self.rest.split_first_chunk::<4>()?;
        let length = u32::from_le_bytes(*length) as usize;
        if rest.len() < length {
            return None;
        }
        let (item, rest) = rest.split_at(length);
        let mut message = decode(item).filter(|m| m.position.is_none())?;
        message.position = Some(Position {
            epoch: self.epoch,
            offset: self.next,
        });
        self.next = self.next.checked_add(1)?;
        self.rest = rest;
        Some(message)
    }
}

impl<'a> Iterator for Messages<'a> {
    type Item = Message<'a>;

    fn next(&mut self) -> Option<Message<'a>> {
        match self {
            Messages::One(message) => message.take(),
            Messages::Batch(batch) => batch.next(),
        }
    }
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
pub(crate) mod tests {
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

    /// A batch as the history script assembles it: the head, the epoch as
    /// stored, the first offset, the framed publications.
    pub(crate) fn batch(epoch: u64, first: u64, publications: &[Vec<u8>]) -> Vec<u8> {
        let mut bytes = batch_head().to_vec();
        bytes.extend_from_slice(&epoch.to_be_bytes());
        bytes.extend_from_slice(&first.to_be_bytes());
        for publication in publications {
            frame(&mut bytes, publication);
        }
        bytes
    }

    #[test]
    fn batches_hand_out_their_publications_in_order() {
        let publications = [
            encode(7, false, None, b"a"),
            encode(7, true, Some(42), b"bc"),
            encode(7, false, None, b""),
        ];
        let bytes = batch(0xfeed, 300, &publications);
        assert_eq!(&bytes[..2], &[1, 8]);
        assert_eq!(&bytes[18..22], &[11, 0, 0, 0]);
        let out: Vec<Message<'_>> = messages(&bytes).unwrap().collect();
        let at = |offset| {
            Some(Position {
                epoch: 0xfeed,
                offset,
            })
        };
        assert_eq!(
            out,
            [
                Message {
                    origin: 7,
                    binary: false,
                    exclude: None,
                    position: at(300),
                    payload: b"a"
                },
                Message {
                    origin: 7,
                    binary: true,
                    exclude: Some(42),
                    position: at(301),
                    payload: b"bc"
                },
                Message {
                    origin: 7,
                    binary: false,
                    exclude: None,
                    position: at(302),
                    payload: b""
                },
            ]
        );
        // A plain message is one publication.
        let plain = encode(1, false, None, b"x");
        assert_eq!(messages(&plain).unwrap().count(), 1);
    }

    #[test]
    fn a_flawed_batch_is_refused_whole() {
        let good = batch(
            1,
            1,
            &[encode(7, false, None, b"ab"), encode(7, false, None, b"c")],
        );
        // Cut inside a publication: nothing is handed out, not even the
        // first. (Cut between two, it is a batch of the first: Redis
        // hands out messages whole, so no count is kept.)
        let boundary = 18 + 4 + 12;
        for cut in 2..good.len() {
            match messages(&good[..cut]) {
                Some(batch) => assert_eq!((cut, batch.count()), (boundary, 1)),
                None => assert_ne!(cut, boundary),
            }
        }
        // A publication that claims a position of its own.
        let mut positioned = head(7, false, None, true);
        positioned.extend_from_slice(&[0; 16]);
        assert!(messages(&batch(1, 1, &[positioned])).is_none());
        // A batch inside a batch, a newer version, an empty publication.
        assert!(messages(&batch(1, 1, std::slice::from_ref(&good))).is_none());
        let mut newer = good.clone();
        newer[0] = 2;
        assert!(messages(&newer).is_none());
        assert!(messages(&batch(1, 1, &[Vec::new()])).is_none());
        // Offsets that would pass u64::MAX.
        let two = [encode(7, false, None, b""), encode(7, false, None, b"")];
        assert!(messages(&batch(1, u64::MAX, &two)).is_none());
    }
}
