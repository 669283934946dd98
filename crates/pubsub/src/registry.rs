//! The registry: who is subscribed to what, with refcounts.
//!
//! Virtual-socket operations live in `virtual_socket.rs` and fan-out in
//! `fanout.rs`; all three are `impl Registry` blocks over the state here.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::channel::Channel;
use crate::virtual_socket::VirtualSocket;
use crate::SubscriberId;

/// A subscriber's channels. Keyed by the channel's shared name.
///
/// Channel names come from clients, so they are hashed with std's randomised
/// SipHash: a fixed hash would let a client pick names that all collide.
/// Subscriber ids are allocated by the runtime, never chosen by a peer, so
/// their maps use the much cheaper Fx hash.
pub(crate) type ChannelSet = HashSet<Arc<str>>;

/// The channel registry: subscriptions, virtual sockets and fan-out planning.
///
/// A pure data structure: no I/O, no threads, no clock. The runtime wraps one
/// `Registry` in a read/write lock; every query and [`Registry::for_each_recipient`]
/// take `&self`, so many publishers can plan fan-out at once under the read
/// lock, and only membership changes need the write lock.
///
/// # Memory hygiene
/// A channel exists only while it has members, and a subscriber holds an
/// entry only while it has subscriptions: an id that unsubscribed from
/// everything costs nothing. [`Registry::check_invariants`] verifies this.
///
/// # Ids
/// Connections and virtual sockets share one id space allocated by the
/// runtime, which never reuses an id. The registry knows which ids are
/// virtual sockets (it created them); every other id is taken to be a
/// connection. The registry cannot tell a live connection from a closed one:
/// the runtime must check before subscribing an id, and must call
/// [`Registry::remove_subscriber`] when a connection closes.
#[derive(Debug, Default)]
pub struct Registry {
    /// Channel name -> members. Only non-empty channels are present.
    pub(crate) channels: HashMap<Arc<str>, Channel>,
    /// Subscriber -> the channels it is a member of. Only subscribers with at
    /// least one subscription are present.
    pub(crate) subscribers: FxHashMap<SubscriberId, ChannelSet>,
    /// Virtual socket id -> its entry (target, tag, cached resolution).
    pub(crate) virtual_sockets: FxHashMap<SubscriberId, VirtualSocket>,
    /// Target id (connection or virtual socket) -> the virtual sockets that
    /// point directly at it: the reverse edges needed to delete dependents.
    /// A set, not a Vec, because one connection may carry thousands of
    /// virtual sockets and deleting them one by one must not be quadratic.
    /// Only targets with at least one dependent are present.
    pub(crate) dependents: FxHashMap<SubscriberId, FxHashSet<SubscriberId>>,
    /// Total number of (subscriber, channel) memberships.
    pub(crate) subscriptions: usize,
    /// Whether channels gaining their first member or losing their last are
    /// logged in `changes` (see [`Registry::log_channel_changes`]).
    log_changes: bool,
    /// Those transitions, in order, until the runtime takes them.
    changes: Vec<ChannelChange>,
    /// The channels whose every join and leave is logged in `members`
    /// (see [`Registry::log_member_changes`]); none by default.
    member_filter: Option<MemberFilter>,
    members: Vec<MemberChange>,
}

/// Which channels' memberships are logged (presence: the broker mirrors
/// each member of those channels): a predicate on the channel's name.
#[derive(Clone)]
pub struct MemberFilter(pub Arc<dyn Fn(&str) -> bool + Send + Sync>);

impl std::fmt::Debug for MemberFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MemberFilter")
    }
}

/// A subscriber joined or left a channel whose memberships are logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberChange {
    /// The channel.
    pub channel: Arc<str>,
    /// The connection or virtual socket.
    pub subscriber: SubscriberId,
    /// Joined (else left).
    pub joined: bool,
}

/// A channel came into existence or went away: the transitions a node
/// mirrors in a broker (subscribe on the first local member, unsubscribe
/// after the last). The registry only records them; whoever holds the
/// registry's lock takes them and does the I/O, so the registry stays pure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChannelChange {
    /// The channel got its first member.
    Created(Arc<str>),
    /// The channel lost its last member.
    Removed(Arc<str>),
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `delta` to the refcount of `subscriber`'s membership in `channel`
    /// (WarpSocket's `subscribe(socketId, channel, delta)`).
    ///
    /// - A non-member with `delta > 0` becomes a member with count `delta`.
    /// - A member whose count drops to 0 or below stops being a member.
    /// - `delta == 0` never changes anything, and a negative `delta` on a
    ///   non-member is a no-op: refcounts never go negative, so a stray
    ///   unsubscribe cannot cancel a later subscribe.
    /// - Counts saturate at `u32::MAX`.
    ///
    /// Returns whether membership changed (joined or left); a count change
    /// alone returns `false`.
    pub fn subscribe(&mut self, subscriber: SubscriberId, channel: &str, delta: i32) -> bool {
        if delta == 0 {
            return false;
        }
        let is_virtual = self.virtual_sockets.contains_key(&subscriber);
        match self.channels.get_mut(channel) {
            Some(ch) => match ch.adjust(subscriber, delta) {
                Some(true) => false,
                Some(false) => {
                    ch.remove(subscriber, is_virtual);
                    let emptied = ch.is_empty();
                    self.after_leave(subscriber, channel, emptied);
                    true
                }
                None if delta > 0 => {
                    ch.insert(subscriber, delta.unsigned_abs(), is_virtual);
                    let name = ch.name.clone();
                    self.after_join(subscriber, name);
                    true
                }
                None => false,
            },
            None if delta > 0 => {
                let name: Arc<str> = Arc::from(channel);
                let mut ch = Channel::new(name.clone());
                ch.insert(subscriber, delta.unsigned_abs(), is_virtual);
                self.channels.insert(name.clone(), ch);
                self.log(|| ChannelChange::Created(name.clone()));
                self.after_join(subscriber, name);
                true
            }
            None => false,
        }
    }

    /// [`Registry::subscribe`] for many subscribers and one channel, applied
    /// in order (a repeated id is applied twice). Returns the ids whose
    /// membership changed, in input order: the ids to notify.
    pub fn subscribe_many(
        &mut self,
        subscribers: &[SubscriberId],
        channel: &str,
        delta: i32,
    ) -> Vec<SubscriberId> {
        // Looping over `subscribe` re-hashes the channel name per id; that is
        // a few ns next to the membership updates themselves, and keeps one
        // code path for the refcount rules.
        subscribers
            .iter()
            .copied()
            .filter(|&id| self.subscribe(id, channel, delta))
            .collect()
    }

    /// Removes `subscriber` from `channel` whatever its refcount (uWS's
    /// `unsubscribe`). Returns whether it was a member.
    pub fn unsubscribe(&mut self, subscriber: SubscriberId, channel: &str) -> bool {
        let Some(ch) = self.channels.get_mut(channel) else {
            return false;
        };
        let is_virtual = self.virtual_sockets.contains_key(&subscriber);
        if !ch.remove(subscriber, is_virtual) {
            return false;
        }
        let emptied = ch.is_empty();
        self.after_leave(subscriber, channel, emptied);
        true
    }

    /// Makes every member of `from` a member of `to` (WarpSocket's
    /// `copySubscriptions`). New members get refcount 1; subscribers already
    /// in `to` keep their count untouched, so copying twice is idempotent.
    /// Returns the newly subscribed ids. Copying a channel onto itself, or
    /// from an empty channel, does nothing.
    pub fn copy_subscriptions(&mut self, from: &str, to: &str) -> Vec<SubscriberId> {
        if from == to {
            return Vec::new();
        }
        // Snapshot the source: `to` may be created below, which can move
        // entries of the channel map while we would still be reading `from`.
        let sources: Vec<SubscriberId> = self.subscribers_of(from).to_vec();
        sources
            .into_iter()
            .filter(|&id| !self.is_subscribed(id, to) && self.subscribe(id, to, 1))
            .collect()
    }

    /// Removes every subscription of `subscriber`. Returns how many there
    /// were. Does not touch virtual sockets (see `remove_subscriber`).
    pub(crate) fn unsubscribe_all(&mut self, subscriber: SubscriberId, is_virtual: bool) -> usize {
        let Some(names) = self.subscribers.remove(&subscriber) else {
            return 0;
        };
        for name in &names {
            self.log_member(name, Some(name), subscriber, false);
            let now_empty = match self.channels.get_mut(name) {
                Some(ch) => {
                    ch.remove(subscriber, is_virtual);
                    ch.is_empty()
                }
                None => false,
            };
            if now_empty {
                self.channels.remove(name);
                self.log(|| ChannelChange::Removed(name.clone()));
            }
        }
        self.subscriptions -= names.len();
        names.len()
    }

    /// Starts (or stops) logging [`ChannelChange`]s. Off by default: a
    /// server without a broker should not pay for a log nobody reads.
    /// Stopping drops what was logged.
    pub fn log_channel_changes(&mut self, on: bool) {
        self.log_changes = on;
        if !on {
            self.changes = Vec::new();
        }
    }

    /// The channel transitions logged since the last call, oldest first.
    /// A channel may appear created and removed several times: the log
    /// keeps every transition, so the reader sees them in the order they
    /// happened under the lock.
    pub fn take_channel_changes(&mut self) -> Vec<ChannelChange> {
        std::mem::take(&mut self.changes)
    }

    fn log(&mut self, change: impl FnOnce() -> ChannelChange) {
        if self.log_changes {
            self.changes.push(change());
        }
    }

    /// Starts logging every join and leave of the channels `filter`
    /// accepts (or stops, with `None`, dropping what was logged). Off by
    /// default: one branch per membership change when off.
    pub fn log_member_changes(&mut self, filter: Option<MemberFilter>) {
        self.member_filter = filter;
        if self.member_filter.is_none() {
            self.members = Vec::new();
        }
    }

    /// The joins and leaves logged since the last call, oldest first.
    pub fn take_member_changes(&mut self) -> Vec<MemberChange> {
        std::mem::take(&mut self.members)
    }

    fn log_member(
        &mut self,
        channel: &str,
        name: Option<&Arc<str>>,
        subscriber: SubscriberId,
        joined: bool,
    ) {
        let Some(filter) = &self.member_filter else {
            return;
        };
        if (filter.0)(channel) {
            let channel = name.cloned().unwrap_or_else(|| Arc::from(channel));
            self.members.push(MemberChange {
                channel,
                subscriber,
                joined,
            });
        }
    }

    /// Subscriber-side bookkeeping after `subscriber` joined a channel.
    fn after_join(&mut self, subscriber: SubscriberId, name: Arc<str>) {
        self.log_member(&name, Some(&name), subscriber, true);
        self.subscribers.entry(subscriber).or_default().insert(name);
        self.subscriptions += 1;
    }

    /// Bookkeeping after `subscriber` left `channel`: drops the channel if it
    /// `emptied` and the subscriber's entry if that was its last channel.
    fn after_leave(&mut self, subscriber: SubscriberId, channel: &str, emptied: bool) {
        self.log_member(channel, None, subscriber, false);
        if emptied {
            if let Some(ch) = self.channels.remove(channel) {
                self.log(|| ChannelChange::Removed(ch.name));
            }
        }
        if let Some(set) = self.subscribers.get_mut(&subscriber) {
            set.remove(channel);
            if set.is_empty() {
                self.subscribers.remove(&subscriber);
            }
        }
        self.subscriptions -= 1;
    }

    /// Whether `subscriber` is a member of `channel` (uWS's `isSubscribed`).
    pub fn is_subscribed(&self, subscriber: SubscriberId, channel: &str) -> bool {
        self.channels
            .get(channel)
            .is_some_and(|ch| ch.contains(subscriber))
    }

    /// The refcount of `subscriber` in `channel`; 0 if not a member.
    pub fn refcount(&self, subscriber: SubscriberId, channel: &str) -> u32 {
        self.channels
            .get(channel)
            .map_or(0, |ch| ch.count(subscriber))
    }

    /// How many subscribers `channel` has (uWS's `numSubscribers`).
    pub fn subscriber_count(&self, channel: &str) -> usize {
        self.channels.get(channel).map_or(0, Channel::len)
    }

    /// Whether `channel` has any subscriber (WarpSocket's `hasSubscriptions`).
    pub fn has_subscriptions(&self, channel: &str) -> bool {
        // Empty channels are removed, so presence is enough.
        self.channels.contains_key(channel)
    }

    /// The members of `channel`, in no particular order (empty if none).
    /// A slice because that is how they are stored: no iterator adaptor, no
    /// copy.
    pub fn subscribers_of(&self, channel: &str) -> &[SubscriberId] {
        self.channels.get(channel).map_or(&[], Channel::members)
    }

    /// The channels `subscriber` is a member of, in no particular order
    /// (uWS's `getTopics`).
    pub fn channels_of(&self, subscriber: SubscriberId) -> impl Iterator<Item = &str> + '_ {
        self.subscribers
            .get(&subscriber)
            .into_iter()
            .flat_map(|set| set.iter().map(|name| &**name))
    }

    /// How many channels `subscriber` is a member of.
    pub fn channel_count_of(&self, subscriber: SubscriberId) -> usize {
        self.subscribers.get(&subscriber).map_or(0, HashSet::len)
    }

    /// All channels with at least one subscriber, in no particular order.
    pub fn channels(&self) -> impl Iterator<Item = &str> + '_ {
        self.channels.keys().map(|name| &**name)
    }

    /// Number of channels with at least one subscriber.
    pub fn channel_count(&self) -> usize {
        self.channels.len()
    }

    /// Total number of (subscriber, channel) memberships.
    pub fn subscription_count(&self) -> usize {
        self.subscriptions
    }

    /// Number of distinct ids with at least one subscription.
    pub fn subscriber_total(&self) -> usize {
        self.subscribers.len()
    }

    /// Verifies every internal invariant, returning a description of the
    /// first one broken. O(size of the registry): for tests, the fuzzer and
    /// debug assertions in the runtime, not for production paths.
    ///
    /// Checked: both sides of each membership agree; no empty channel, no
    /// subscriber entry without channels, no empty dependents set; the
    /// counters match; each channel's positions and virtual-member count are
    /// right; each virtual socket's dependents edge exists and its cached
    /// connection and prefix equal a fresh walk of its chain.
    pub fn check_invariants(&self) -> Result<(), String> {
        let is_virtual = |id| self.virtual_sockets.contains_key(&id);
        let mut memberships = 0;
        for (name, ch) in &self.channels {
            if ch.is_empty() {
                return Err(format!("empty channel {name:?} kept"));
            }
            if ch.name != *name {
                return Err(format!("channel {name:?} stores name {:?}", ch.name));
            }
            ch.check(is_virtual)?;
            for &id in ch.members() {
                if !self.subscribers.get(&id).is_some_and(|s| s.contains(name)) {
                    return Err(format!("{id} in {name:?} but not in its channel set"));
                }
            }
            memberships += ch.len();
        }
        let mut listed = 0;
        for (id, set) in &self.subscribers {
            if set.is_empty() {
                return Err(format!("subscriber {id} kept with no channels"));
            }
            for name in set {
                if !self.is_subscribed(*id, name) {
                    return Err(format!("{id} lists {name:?} but is not a member"));
                }
            }
            listed += set.len();
        }
        if memberships != self.subscriptions || listed != self.subscriptions {
            return Err(format!(
                "subscription count {} but channels hold {memberships} and subscribers {listed}",
                self.subscriptions
            ));
        }
        self.check_virtual_sockets()
    }
}

#[cfg(test)]
mod member_log_tests {
    use super::*;

    #[test]
    fn logs_joins_and_leaves_of_filtered_channels_only() {
        let mut registry = Registry::new();
        let filter = MemberFilter(Arc::new(|c: &str| c.starts_with("p.")));
        registry.log_member_changes(Some(filter));
        registry.subscribe(1, "p.room", 1);
        registry.subscribe(1, "p.room", 1); // a count change: no join
        registry.subscribe(2, "p.room", 1);
        registry.subscribe(1, "other", 1);
        registry.subscribe(1, "p.room", -2);
        registry.subscribe(3, "p.hall", 1);
        registry.unsubscribe_all(2, false);
        registry.unsubscribe(3, "p.hall");
        let log: Vec<(String, SubscriberId, bool)> = registry
            .take_member_changes()
            .into_iter()
            .map(|c| (c.channel.to_string(), c.subscriber, c.joined))
            .collect();
        let expected = [
            ("p.room", 1, true),
            ("p.room", 2, true),
            ("p.room", 1, false),
            ("p.hall", 3, true),
            ("p.room", 2, false),
            ("p.hall", 3, false),
        ];
        let expected: Vec<(String, SubscriberId, bool)> = expected
            .iter()
            .map(|&(c, s, j)| (c.to_string(), s, j))
            .collect();
        assert_eq!(log, expected);
        assert!(registry.take_member_changes().is_empty());
        registry.log_member_changes(None);
        registry.subscribe(9, "p.room", 1);
        assert!(registry.take_member_changes().is_empty());
    }
}
