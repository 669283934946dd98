//! What the runtime knows of a channel's history (docs/scale-out.md,
//! "History and recovery"): a publication's position, and the shapes of
//! the asynchronous questions a broker answers about the past. The history
//! itself lives in the broker (Redis); the runtime only carries positions
//! to protocol clients and hands answers back.

/// Where a publication sits in its channel's history: the channel's epoch
/// (random, renewed whenever the history was lost, so an offset of an
/// older epoch is never taken for one of the current) and its offset
/// (1 for the first publication of the epoch, then contiguous).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Position {
    pub epoch: u64,
    pub offset: u64,
}

impl Position {
    /// The position as a protocol publication carries it: its explicit
    /// UUID, the epoch then the offset, both big-endian, so positions of
    /// one epoch sort as their UUIDs do (docs/protocol.md §10).
    pub fn to_uuid(self) -> [u8; 16] {
        let mut uuid = [0u8; 16];
        uuid[..8].copy_from_slice(&self.epoch.to_be_bytes());
        uuid[8..].copy_from_slice(&self.offset.to_be_bytes());
        uuid
    }

    /// The epoch as JavaScript sees it: 16 lowercase hex digits (a string,
    /// since a random 64-bit number is no exact JavaScript number).
    pub fn epoch_hex(self) -> String {
        format!("{:016x}", self.epoch)
    }

    /// The epoch from its hex form.
    pub fn parse_epoch(hex: &str) -> Option<u64> {
        if hex.len() != 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u64::from_str_radix(hex, 16).ok()
    }
}

/// One publication read back from a channel's history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored {
    pub offset: u64,
    pub binary: bool,
    pub data: Vec<u8>,
}

/// A page of a channel's history: the publications after `since` (at most
/// the limit asked for, oldest first) and the channel's position now.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HistoryPage {
    /// The channel's current epoch and its last offset (0: nothing
    /// published in this epoch yet).
    pub top: Position,
    /// Whether the publications returned continue `since` exactly: same
    /// epoch, nothing trimmed in between. Always true without `since`.
    pub continuous: bool,
    pub publications: Vec<Stored>,
}

/// What a recovery did (`Bridge::recover`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Recovery {
    /// The channel's position when its history was read.
    pub top: Position,
    /// Everything after `since` was queued for the subscriber: same epoch,
    /// nothing trimmed, and no more than the limit missing. True without a
    /// `since` (a first subscription missed nothing it could know of).
    pub recovered: bool,
    /// How many publications were queued.
    pub delivered: usize,
}

/// Why a question to the broker (history, recovery, presence) got no
/// answer: reported with a stable code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueryError {
    /// No broker, or the channel has no history (`ERR_HISTORY_UNAVAILABLE`).
    NoHistory,
    /// No broker, or the channel keeps no presence
    /// (`ERR_PRESENCE_UNAVAILABLE`).
    NoPresence,
    /// The broker could not be reached in time (`ERR_BROKER_UNAVAILABLE`).
    Unavailable,
}

impl QueryError {
    pub fn code(self) -> &'static str {
        match self {
            QueryError::NoHistory => "ERR_HISTORY_UNAVAILABLE",
            QueryError::NoPresence => "ERR_PRESENCE_UNAVAILABLE",
            QueryError::Unavailable => "ERR_BROKER_UNAVAILABLE",
        }
    }
}

/// Where an answer goes: called once, on the broker's thread.
pub type Reply<T> = Box<dyn FnOnce(Result<T, QueryError>) + Send>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_and_hex_forms() {
        let p = Position {
            epoch: 0x0123_4567_89ab_cdef,
            offset: 258,
        };
        assert_eq!(
            p.to_uuid(),
            [1, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0, 0, 0, 0, 0, 0, 1, 2]
        );
        assert_eq!(p.epoch_hex(), "0123456789abcdef");
        assert_eq!(Position::parse_epoch("0123456789abcdef"), Some(p.epoch));
        assert_eq!(Position::parse_epoch("123"), None);
        assert_eq!(Position::parse_epoch("0123456789abcdeg"), None);
    }
}
