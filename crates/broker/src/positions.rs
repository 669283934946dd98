//! What a node remembers of each history channel it is subscribed to: the
//! last position it delivered (docs/scale-out.md, "Gaps between Redis and
//! a server"), so that it notices a gap in the offsets coming from pub/sub
//! and drops what a gap repair delivered already (`inbound.rs`).

use std::collections::HashMap;
use std::sync::Arc;

use switchboard_runtime::Position;

/// What a node does with a positioned message arriving from pub/sub.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admit {
    /// The next one (or the first seen, or of a new epoch): deliver it.
    Deliver,
    /// Delivered already (a gap repair fetched it): drop it.
    Duplicate,
    /// Offsets after this one are missing: fetch them after `since`, then
    /// deliver this one.
    Gap { since: Position },
}

/// The last offset this node delivered on each of its history channels.
#[derive(Default)]
pub(crate) struct Positions {
    last: HashMap<Arc<str>, Position>,
}

impl Positions {
    /// Decide about a message at `position` on `channel`. A delivered
    /// message is recorded by `delivered`.
    pub(crate) fn admit(&self, channel: &str, position: Position) -> Admit {
        match self.last.get(channel) {
            Some(last) if last.epoch == position.epoch => {
                if position.offset <= last.offset {
                    Admit::Duplicate
                } else if position.offset == last.offset + 1 {
                    Admit::Deliver
                } else {
                    Admit::Gap { since: *last }
                }
            }
            // First seen here, or the history was lost and began again:
            // nothing to repair from.
            _ => Admit::Deliver,
        }
    }

    pub(crate) fn delivered(&mut self, channel: &str, position: Position) {
        match self.last.get_mut(channel) {
            Some(last) => *last = position,
            None => {
                self.last.insert(Arc::from(channel), position);
            }
        }
    }

    /// The last position delivered on `channel`.
    pub(crate) fn last(&self, channel: &str) -> Option<Position> {
        self.last.get(channel).copied()
    }

    /// The channels tracked and their last delivered positions.
    pub(crate) fn all(&self) -> Vec<(Arc<str>, Position)> {
        self.last.iter().map(|(c, p)| (c.clone(), *p)).collect()
    }

    /// Forget the channels this node no longer subscribes to.
    pub(crate) fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.last.retain(|channel, _| keep(channel));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(epoch: u64, offset: u64) -> Position {
        Position { epoch, offset }
    }

    #[test]
    fn positions_admit_in_order_and_spot_gaps() {
        let mut positions = Positions::default();
        assert_eq!(positions.admit("c", at(1, 5)), Admit::Deliver);
        positions.delivered("c", at(1, 5));
        assert_eq!(positions.admit("c", at(1, 6)), Admit::Deliver);
        assert_eq!(positions.admit("c", at(1, 5)), Admit::Duplicate);
        assert_eq!(
            positions.admit("c", at(1, 9)),
            Admit::Gap { since: at(1, 5) }
        );
        // A new epoch starts over.
        assert_eq!(positions.admit("c", at(2, 1)), Admit::Deliver);
        positions.retain(|c| c != "c");
        assert!(positions.all().is_empty());
    }
}
