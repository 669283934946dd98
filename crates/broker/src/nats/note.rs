//! The notes of the NATS number claim (`claim.rs`) as bytes, and the set
//! of numbers they carry. Pure: bytes in, values out.
//!
//! ```text
//! 0      version (1)
//! 1      kind: 1 roll-call, 2 claim, 3 held, 4 objection, 5 seen
//! kinds 1-4:
//!   2..4   number, u16 little-endian (0 in a roll-call)
//!   4..12  token, u64 little-endian (0 in an objection)
//! kind 5:
//!   2..130 a bit per number: 16 u64 little-endian, bit n % 64 of word n / 64
//! ```
//!
//! Anything else (another version or kind, another length, a number out
//! of range, node 0 seen) is refused whole (`None`).

use switchboard_runtime::ids::MAX_NODE;

/// The only version written; a note of another version is ignored.
const VERSION: u8 = 1;
/// Every note but `Seen` is this long: version, kind, number u16, token
/// u64.
const LEN: usize = 12;
/// `Seen`: version, kind, and a bit per number (16 u64).
const SEEN_LEN: usize = 2 + 8 * 16;

const ROLL_CALL: u8 = 1;
const CLAIM: u8 = 2;
const HELD: u8 = 3;
const OBJECTION: u8 = 4;
const SEEN: u8 = 5;

/// A set of node numbers: bit `n % 64` of word `n / 64`.
pub(crate) type Numbers = [u64; 16];

/// What nodes say to each other about numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Note {
    /// "Which numbers are held?" (the sender's token, to skip its echo).
    RollCall { token: u64 },
    /// "`number` is mine unless someone objects."
    Claim { number: u16, token: u64 },
    /// "`number` is held by `token`": an answer to a roll-call, and the
    /// heartbeats' proof of ownership.
    Held { number: u16, token: u64 },
    /// "`number` is taken": sent to a claimer's inbox.
    Objection { number: u16 },
    /// "These nodes were heard from within `nodeTtl`": with a holder's
    /// answer to a roll-call, in one note (one per answering node, not
    /// one per number: a roll-call among N nodes costs N answers).
    Seen { live: Numbers },
}

impl Note {
    pub(crate) fn encode(&self) -> Vec<u8> {
        if let Note::Seen { live } = self {
            let mut out = Vec::with_capacity(SEEN_LEN);
            out.extend_from_slice(&[VERSION, SEEN]);
            live.iter()
                .for_each(|w| out.extend_from_slice(&w.to_le_bytes()));
            return out;
        }
        let (kind, number, token) = match *self {
            Note::RollCall { token } => (ROLL_CALL, 0, token),
            Note::Claim { number, token } => (CLAIM, number, token),
            Note::Held { number, token } => (HELD, number, token),
            Note::Objection { number } => (OBJECTION, number, 0),
            Note::Seen { .. } => unreachable!("encoded above"),
        };
        let mut out = Vec::with_capacity(LEN);
        out.extend_from_slice(&[VERSION, kind]);
        out.extend_from_slice(&number.to_le_bytes());
        out.extend_from_slice(&token.to_le_bytes());
        out
    }

    /// A note, or `None` for anything else (another version, a number out
    /// of range, a wrong length): ignored, never half read.
    pub(crate) fn decode(bytes: &[u8]) -> Option<Note> {
        if bytes.first() != Some(&VERSION) {
            return None;
        }
        if bytes.get(1) == Some(&SEEN) && bytes.len() == SEEN_LEN {
            let mut live: Numbers = [0; 16];
            for (word, chunk) in live.iter_mut().zip(bytes[2..].chunks_exact(8)) {
                *word = u64::from_le_bytes(chunk.try_into().ok()?);
            }
            // Number 0 is no node's.
            return (live[0] & 1 == 0).then_some(Note::Seen { live });
        }
        if bytes.len() != LEN {
            return None;
        }
        let number = u16::from_le_bytes([bytes[2], bytes[3]]);
        let token = u64::from_le_bytes(bytes[4..12].try_into().ok()?);
        let numbered = (1..=MAX_NODE).contains(&number);
        match bytes[1] {
            ROLL_CALL if number == 0 => Some(Note::RollCall { token }),
            CLAIM if numbered => Some(Note::Claim { number, token }),
            HELD if numbered => Some(Note::Held { number, token }),
            OBJECTION if numbered && token == 0 => Some(Note::Objection { number }),
            _ => None,
        }
    }
}

/// Add node `n` to `set` (numbers past 1023 wrap, as ids' 10 bits do).
pub(crate) fn insert(set: &mut Numbers, n: u16) {
    set[usize::from(n / 64) % 16] |= 1 << (n % 64);
}

/// Whether node `n` is in `set`.
pub(crate) fn contains(set: &Numbers, n: u16) -> bool {
    set[usize::from(n / 64) % 16] & (1 << (n % 64)) != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_round_trip_and_strangers_are_refused() {
        let notes = [
            Note::RollCall { token: 7 },
            Note::Claim {
                number: 1,
                token: u64::MAX,
            },
            Note::Held {
                number: MAX_NODE,
                token: 3,
            },
            Note::Objection { number: 12 },
            Note::Seen { live: [0; 16] },
            Note::Seen {
                live: [u64::MAX - 1; 16],
            },
        ];
        for note in notes {
            assert_eq!(Note::decode(&note.encode()), Some(note));
        }
        let claim = Note::Claim {
            number: 5,
            token: 1,
        }
        .encode();
        let mut bad = Vec::new();
        bad.push(claim[..11].to_vec()); // cut short
        bad.push([&claim[..], &[0]].concat()); // too long
        let mut version = claim.clone();
        version[0] = 2;
        bad.push(version);
        let mut kind = claim.clone();
        kind[1] = 9;
        bad.push(kind);
        for number in [0, MAX_NODE + 1] {
            let mut out = claim.clone();
            out[2..4].copy_from_slice(&number.to_le_bytes());
            bad.push(out);
        }
        let mut roll_call = Note::RollCall { token: 1 }.encode();
        roll_call[2] = 1; // a roll-call names no number
        bad.push(roll_call);
        let mut objection = Note::Objection { number: 5 }.encode();
        objection[4] = 1; // an objection carries no token
        bad.push(objection);
        let mut seen = Note::Seen { live: [0; 16] }.encode();
        bad.push(seen[..SEEN_LEN - 1].to_vec()); // cut short
        seen[2] = 1; // node 0 seen
        bad.push(seen);
        for bytes in bad {
            assert_eq!(Note::decode(&bytes), None, "{bytes:?}");
        }
    }
}
