//! Fan-out planning: which connections receive a publish, with which prefix.
//!
//! The registry only plans; the runtime owns the write queues and calls
//! `for_each_recipient` under its read lock, enqueueing one shared `Bytes`
//! per recipient. Planning therefore takes `&self` and allocates nothing on
//! the common paths, so many publishers can plan at once.

use bytes::Bytes;

use crate::channel::Channel;
use crate::{ConnectionId, Registry, SubscriberId};

/// One destination of a publish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target<'a> {
    /// Every subscriber of the channel (none if it has no subscribers).
    Channel(&'a str),
    /// One subscriber: a virtual socket, or any other id, which is passed
    /// through as a connection (the registry cannot know connections; the
    /// runtime drops messages for ids that are not open).
    Subscriber(SubscriberId),
}

/// Up to this many targets are deduplicated without any allocation, by
/// checking each candidate against the targets listed before it (one hash
/// probe per earlier channel). Beyond it that check grows quadratic, so the
/// ids are collected, sorted and deduplicated instead. Publishes to more
/// than a handful of channels at once are rare.
pub const INLINE_TARGETS: usize = 8;

/// A target looked up once per call.
#[derive(Clone, Copy)]
enum Resolved<'r> {
    Channel(&'r Channel),
    Subscriber(SubscriberId),
}

impl Resolved<'_> {
    fn contains(self, id: SubscriberId) -> bool {
        match self {
            Resolved::Channel(ch) => ch.contains(id),
            Resolved::Subscriber(s) => s == id,
        }
    }

    /// Whether both name the same recipient set, so the second can be skipped
    /// outright rather than member by member.
    fn same(self, other: Resolved<'_>) -> bool {
        match (self, other) {
            (Resolved::Channel(a), Resolved::Channel(b)) => std::ptr::eq(a, b),
            (Resolved::Subscriber(a), Resolved::Subscriber(b)) => a == b,
            _ => false,
        }
    }
}

impl Registry {
    /// Calls `f(connection, prefix)` once for every recipient of a publish to
    /// `targets`, and returns how many calls were made.
    ///
    /// - `connection` is where to write; `prefix` is the composed tag of the
    ///   virtual-socket chain the message travels through (write
    ///   `prefix ++ message`), `None` for a direct subscription.
    /// - Each subscriber id receives at most one message per call, however
    ///   many listed channels or targets reach it.
    /// - Deduplication is by subscriber id, not by connection: a connection
    ///   subscribed both directly and through a virtual socket gets the
    ///   message twice, once plain and once tagged, because the two are
    ///   distinct recipients at the other end.
    /// - `exclude_connection` skips every recipient whose final connection is
    ///   that id, including through virtual sockets ("publish to everyone
    ///   but the sender").
    /// - Recipient order is unspecified.
    ///
    /// Allocates nothing for up to [`INLINE_TARGETS`] targets; beyond that
    /// it allocates a scratch vector per call, which
    /// [`Registry::for_each_recipient_with`] lets the caller reuse.
    pub fn for_each_recipient<F>(
        &self,
        targets: &[Target<'_>],
        exclude_connection: Option<ConnectionId>,
        f: F,
    ) -> usize
    where
        F: FnMut(ConnectionId, Option<&Bytes>),
    {
        // `Vec::new` does not allocate; the scratch is only filled past
        // INLINE_TARGETS.
        self.for_each_recipient_with(targets, exclude_connection, &mut Vec::new(), f)
    }

    /// [`Registry::for_each_recipient`] with a caller-owned `scratch` vector,
    /// used (cleared, filled, left filled) only for more than
    /// [`INLINE_TARGETS`] targets. A runtime thread can keep one in a
    /// thread-local so even those publishes stop allocating once warm.
    pub fn for_each_recipient_with<F>(
        &self,
        targets: &[Target<'_>],
        exclude_connection: Option<ConnectionId>,
        scratch: &mut Vec<SubscriberId>,
        mut f: F,
    ) -> usize
    where
        F: FnMut(ConnectionId, Option<&Bytes>),
    {
        let exclude = exclude_connection;
        match targets {
            [] => 0,
            // The hot path: one channel. No dedupe needed, members are unique.
            [Target::Channel(name)] => self
                .channels
                .get(*name)
                .map_or(0, |ch| self.emit_channel(ch, exclude, |_| false, &mut f)),
            [Target::Subscriber(id)] => usize::from(self.emit(*id, exclude, &mut f)),
            _ if targets.len() <= INLINE_TARGETS => self.emit_inline(targets, exclude, &mut f),
            _ => self.emit_sorted(targets, exclude, scratch, &mut f),
        }
    }

    /// Delivers to one subscriber unless its connection is excluded.
    #[inline]
    fn emit<F>(&self, id: SubscriberId, exclude: Option<ConnectionId>, f: &mut F) -> bool
    where
        F: FnMut(ConnectionId, Option<&Bytes>),
    {
        let (connection, prefix) = self.resolve(id);
        if exclude == Some(connection) {
            return false;
        }
        f(connection, prefix);
        true
    }

    /// Delivers to every member of `ch` for which `skip` is false.
    #[inline]
    fn emit_channel<F, S>(
        &self,
        ch: &Channel,
        exclude: Option<ConnectionId>,
        skip: S,
        f: &mut F,
    ) -> usize
    where
        F: FnMut(ConnectionId, Option<&Bytes>),
        S: Fn(SubscriberId) -> bool,
    {
        let mut sent = 0;
        if ch.virtual_members == 0 {
            // Every member is a connection: no per-member table lookup.
            for &id in ch.members() {
                if exclude != Some(id) && !skip(id) {
                    f(id, None);
                    sent += 1;
                }
            }
        } else {
            for &id in ch.members() {
                if !skip(id) && self.emit(id, exclude, f) {
                    sent += 1;
                }
            }
        }
        sent
    }

    /// Few targets: a candidate from target `i` is skipped if any target
    /// before `i` contains it, so the first target to reach an id delivers
    /// it. Lookups only; the resolved targets live on the stack.
    fn emit_inline<F>(
        &self,
        targets: &[Target<'_>],
        exclude: Option<ConnectionId>,
        f: &mut F,
    ) -> usize
    where
        F: FnMut(ConnectionId, Option<&Bytes>),
    {
        let mut resolved: [Option<Resolved<'_>>; INLINE_TARGETS] = [None; INLINE_TARGETS];
        let mut len = 0;
        for target in targets {
            let r = match *target {
                Target::Channel(name) => match self.channels.get(name) {
                    Some(ch) => Resolved::Channel(ch),
                    None => continue,
                },
                Target::Subscriber(id) => Resolved::Subscriber(id),
            };
            if !resolved[..len].iter().flatten().any(|e| e.same(r)) {
                resolved[len] = Some(r);
                len += 1;
            }
        }
        let mut sent = 0;
        for (i, r) in resolved[..len].iter().flatten().enumerate() {
            let earlier = &resolved[..i];
            let skip = |id| earlier.iter().flatten().any(|e| e.contains(id));
            sent += match *r {
                Resolved::Channel(ch) => self.emit_channel(ch, exclude, skip, f),
                Resolved::Subscriber(id) => usize::from(!skip(id) && self.emit(id, exclude, f)),
            };
        }
        sent
    }

    /// Many targets: the largest channel is delivered straight from its
    /// member list; the ids of every other target are collected, sorted and
    /// deduplicated, and delivered unless the largest channel had them. That
    /// copies and sorts only the smaller sets, never a broadcast channel.
    fn emit_sorted<F>(
        &self,
        targets: &[Target<'_>],
        exclude: Option<ConnectionId>,
        scratch: &mut Vec<SubscriberId>,
        f: &mut F,
    ) -> usize
    where
        F: FnMut(ConnectionId, Option<&Bytes>),
    {
        let channels = || {
            targets.iter().filter_map(|t| match *t {
                Target::Channel(name) => self.channels.get(name),
                Target::Subscriber(_) => None,
            })
        };
        let anchor = channels().max_by_key(|ch| ch.len());
        scratch.clear();
        for target in targets {
            match *target {
                Target::Channel(name) => match self.channels.get(name) {
                    Some(ch) if !anchor.is_some_and(|a| std::ptr::eq(a, ch)) => {
                        scratch.extend_from_slice(ch.members());
                    }
                    _ => {}
                },
                Target::Subscriber(id) => scratch.push(id),
            }
        }
        scratch.sort_unstable();
        scratch.dedup();
        let mut sent = match anchor {
            Some(ch) => self.emit_channel(ch, exclude, |_| false, f),
            None => 0,
        };
        for &id in scratch.iter() {
            if !anchor.is_some_and(|a| a.contains(id)) && self.emit(id, exclude, f) {
                sent += 1;
            }
        }
        sent
    }
}
