//! One channel's member set: contiguous for fan-out, indexed for updates.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::SubscriberId;

/// Where a member sits in [`Channel::members`] and how many times it
/// subscribed. Two `u32`s keep the slot at 8 bytes: a channel cannot have
/// 2^32 members (that would be 32 GiB of ids), and a refcount saturates.
#[derive(Debug, Clone, Copy)]
struct Slot {
    pos: u32,
    count: u32,
}

/// The members of one channel.
///
/// Publishing walks `members`, a plain `Vec<SubscriberId>`: 8 bytes per
/// recipient, prefetch-friendly, no hashing. Updates go through `slots`, which
/// maps a member to its position so removal is a `swap_remove` plus one slot
/// fix-up (O(1)) rather than a linear search. The price is that member order
/// is not insertion order after a removal, which nothing relies on.
///
/// `indexmap` would give the same shape, but it stores hash + key + value per
/// entry (24 bytes) in the vector the fan-out loop walks; keeping the ids
/// alone in their own vector makes the hottest loop denser.
#[derive(Debug)]
pub(crate) struct Channel {
    /// The channel name, shared with every subscriber's channel set so the
    /// string is allocated once per channel, not once per membership.
    pub(crate) name: Arc<str>,
    members: Vec<SubscriberId>,
    slots: FxHashMap<SubscriberId, Slot>,
    /// How many members are virtual sockets. When zero (the common case) the
    /// fan-out loop can hand out ids as connections without looking each one
    /// up in the virtual-socket table. Exact because an id's kind cannot
    /// change while it is a member: a virtual socket must be created on a
    /// fresh id and loses its memberships when deleted.
    pub(crate) virtual_members: usize,
}

impl Channel {
    pub(crate) fn new(name: Arc<str>) -> Self {
        Channel {
            name,
            members: Vec::new(),
            slots: FxHashMap::default(),
            virtual_members: 0,
        }
    }

    /// The members, in storage order.
    pub(crate) fn members(&self) -> &[SubscriberId] {
        &self.members
    }

    pub(crate) fn len(&self) -> usize {
        self.members.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    pub(crate) fn contains(&self, id: SubscriberId) -> bool {
        self.slots.contains_key(&id)
    }

    /// The member's refcount, 0 for a non-member.
    pub(crate) fn count(&self, id: SubscriberId) -> u32 {
        self.slots.get(&id).map_or(0, |s| s.count)
    }

    /// Adds `delta` (positive or negative) to a member's refcount.
    /// Returns `None` for a non-member (nothing changes), otherwise whether
    /// the count is still positive. A count that drops to 0 or below is NOT
    /// removed here: the caller removes it so it can also update the
    /// subscriber side.
    pub(crate) fn adjust(&mut self, id: SubscriberId, delta: i32) -> Option<bool> {
        let slot = self.slots.get_mut(&id)?;
        let next = i64::from(slot.count) + i64::from(delta);
        if next <= 0 {
            return Some(false);
        }
        // Saturate rather than wrap: a runaway caller must not turn a huge
        // count into a small one and unsubscribe early.
        slot.count = u32::try_from(next).unwrap_or(u32::MAX);
        Some(true)
    }

    /// Inserts a non-member with a positive count.
    pub(crate) fn insert(&mut self, id: SubscriberId, count: u32, is_virtual: bool) {
        debug_assert!(count > 0 && !self.contains(id));
        let pos = u32::try_from(self.members.len()).expect("channel has 2^32 members");
        self.members.push(id);
        self.slots.insert(id, Slot { pos, count });
        if is_virtual {
            self.virtual_members += 1;
        }
    }

    /// Removes a member whatever its count. Returns whether it was one.
    pub(crate) fn remove(&mut self, id: SubscriberId, is_virtual: bool) -> bool {
        let Some(slot) = self.slots.remove(&id) else {
            return false;
        };
        let pos = slot.pos as usize;
        self.members.swap_remove(pos);
        if let Some(&moved) = self.members.get(pos) {
            // The former last member now lives at `pos`.
            if let Some(s) = self.slots.get_mut(&moved) {
                s.pos = slot.pos;
            }
        }
        if is_virtual {
            self.virtual_members -= 1;
        }
        // A channel that shrank a lot keeps its peak capacity otherwise;
        // a broadcast channel emptied by a mass disconnect should give the
        // memory back. Halving at a quarter keeps the amortised cost O(1).
        if self.members.capacity() > 64 && self.members.len() < self.members.capacity() / 4 {
            self.members.shrink_to(self.members.len() * 2);
            self.slots.shrink_to(self.members.len() * 2);
        }
        true
    }

    /// Checks the internal consistency of this channel (test/debug aid).
    pub(crate) fn check(&self, is_virtual: impl Fn(SubscriberId) -> bool) -> Result<(), String> {
        let name = &self.name;
        if self.members.len() != self.slots.len() {
            return Err(format!(
                "channel {name:?}: members and slots differ in size"
            ));
        }
        let mut virtual_members = 0;
        for (pos, &id) in self.members.iter().enumerate() {
            match self.slots.get(&id) {
                Some(s) if s.pos as usize == pos && s.count > 0 => {}
                other => {
                    return Err(format!(
                        "channel {name:?}: member {id} at {pos} has slot {other:?}"
                    ))
                }
            }
            if is_virtual(id) {
                virtual_members += 1;
            }
        }
        if virtual_members != self.virtual_members {
            return Err(format!(
                "channel {name:?}: virtual_members is {} but {virtual_members} members are virtual",
                self.virtual_members
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swap_remove_keeps_positions_consistent() {
        let mut ch = Channel::new("c".into());
        for id in 0..10 {
            ch.insert(id, 1, id.is_multiple_of(3));
        }
        assert!(ch.remove(0, true));
        assert!(ch.remove(5, false));
        assert!(!ch.remove(5, false));
        ch.check(|id| id.is_multiple_of(3)).unwrap();
        assert_eq!(ch.len(), 8);
        assert_eq!(ch.virtual_members, 3);
        // Removing the last element must not try to fix up anything.
        let last = *ch.members().last().unwrap();
        assert!(ch.remove(last, last.is_multiple_of(3)));
        ch.check(|id| id.is_multiple_of(3)).unwrap();
    }

    #[test]
    fn adjust_saturates_and_reports_drop() {
        let mut ch = Channel::new("c".into());
        assert_eq!(ch.adjust(1, 5), None);
        ch.insert(1, 1, false);
        assert_eq!(ch.adjust(1, i32::MAX), Some(true));
        assert_eq!(ch.adjust(1, i32::MAX), Some(true));
        assert_eq!(ch.count(1), u32::MAX);
        assert_eq!(ch.adjust(1, i32::MIN), Some(true));
        assert_eq!(ch.count(1), u32::MAX - (1 << 31));
        ch.insert(2, 2, false);
        assert_eq!(ch.adjust(2, -2), Some(false));
        // `adjust` leaves removal to the caller.
        assert_eq!(ch.count(2), 2);
    }

    #[test]
    fn shrinks_after_mass_removal() {
        let mut ch = Channel::new("c".into());
        for id in 0..1000 {
            ch.insert(id, 1, false);
        }
        for id in 0..995 {
            ch.remove(id, false);
        }
        assert!(ch.members.capacity() < 100);
        ch.check(|_| false).unwrap();
    }
}
