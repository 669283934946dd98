//! Virtual sockets: subscriber ids that forward to another subscriber.
//!
//! A virtual socket (WarpSocket's term) lets one connection hold several
//! independent subscription sets, e.g. one per in-page component or per
//! proxied client. It has a target (a connection or another virtual socket)
//! and an optional tag, bytes prefixed to every message it forwards, which
//! tells the receiving end which virtual socket a message came through.
//!
//! Chains compose: a message delivered via VS1 (tag t1) -> VS2 (tag t2) ->
//! connection C reaches C as `t2 ++ t1 ++ message`, each hop prefixing its
//! own tag to what it receives. A target never changes after creation, so the
//! final connection and the composed prefix are computed once, when the
//! virtual socket is created, and fan-out never walks a chain.

use bytes::{Bytes, BytesMut};

use crate::{ConnectionId, Error, Registry, SubscriberId};

/// A virtual socket's entry: what it points at and what it resolves to.
#[derive(Debug, Clone)]
pub struct VirtualSocket {
    target: SubscriberId,
    tag: Option<Bytes>,
    connection: ConnectionId,
    prefix: Option<Bytes>,
}

impl VirtualSocket {
    /// The id this virtual socket forwards to: a connection or another
    /// virtual socket. Fixed at creation.
    pub fn target(&self) -> SubscriberId {
        self.target
    }

    /// This virtual socket's own tag, as given at creation.
    pub fn tag(&self) -> Option<&Bytes> {
        self.tag.as_ref()
    }

    /// The connection at the end of the chain.
    pub fn connection(&self) -> ConnectionId {
        self.connection
    }

    /// Everything prefixed to a message delivered through this virtual socket:
    /// the tags of the whole chain, outermost (closest to the connection)
    /// first. `None` when that is empty, so callers can skip the concatenation.
    pub fn prefix(&self) -> Option<&Bytes> {
        self.prefix.as_ref()
    }
}

/// `outer ++ inner`, where `outer` is the target's composed prefix and
/// `inner` this hop's tag. Reuses an existing buffer when one side is empty:
/// `Bytes` clones are reference-count bumps, so most chains (one tag) share
/// the caller's tag allocation.
fn compose(outer: Option<&Bytes>, inner: Option<&Bytes>) -> Option<Bytes> {
    let inner = inner.filter(|b| !b.is_empty());
    match (outer, inner) {
        (None, None) => None,
        (Some(p), None) => Some(p.clone()),
        (None, Some(t)) => Some(t.clone()),
        (Some(p), Some(t)) => {
            let mut out = BytesMut::with_capacity(p.len() + t.len());
            out.extend_from_slice(p);
            out.extend_from_slice(t);
            Some(out.freeze())
        }
    }
}

impl Registry {
    /// Creates virtual socket `id` forwarding to `target`, with an optional
    /// `tag` prefixed to every message it forwards (an empty tag is the same
    /// as none).
    ///
    /// `target` may be another virtual socket or a connection. Any id that is
    /// not a virtual socket is taken to be a connection: the registry does
    /// not know which connections exist, so the runtime must check that a
    /// connection target is open (and that `id` is freshly allocated) first.
    ///
    /// Errors, checked in this order (nothing changes on error):
    /// [`Error::VirtualSocketExists`] if `id` is already a virtual socket;
    /// [`Error::VirtualSocketCycle`] if `target == id`;
    /// [`Error::VirtualSocketIdInUse`] if `id` already has subscriptions or
    /// virtual sockets pointing at it, i.e. is in use as a connection.
    pub fn create_virtual_socket(
        &mut self,
        id: SubscriberId,
        target: SubscriberId,
        tag: Option<Bytes>,
    ) -> Result<(), Error> {
        if self.virtual_sockets.contains_key(&id) {
            return Err(Error::VirtualSocketExists { id });
        }
        if target == id {
            return Err(Error::VirtualSocketCycle { id });
        }
        if self.subscribers.contains_key(&id) || self.dependents.contains_key(&id) {
            return Err(Error::VirtualSocketIdInUse { id });
        }
        let (connection, prefix) = match self.virtual_sockets.get(&target) {
            Some(t) => (t.connection, compose(t.prefix.as_ref(), tag.as_ref())),
            None => (target, compose(None, tag.as_ref())),
        };
        self.virtual_sockets.insert(
            id,
            VirtualSocket {
                target,
                tag,
                connection,
                prefix,
            },
        );
        self.dependents.entry(target).or_default().insert(id);
        Ok(())
    }

    /// Deletes virtual socket `id`, its subscriptions, and recursively every
    /// virtual socket that points at it (they would otherwise forward into
    /// nothing).
    ///
    /// With `expected_target`, the delete happens only if `id` still targets
    /// it, so a stale request cannot delete a virtual socket that was since
    /// replaced (WarpSocket's guard).
    ///
    /// Returns every deleted virtual socket id: `id` first, then its
    /// dependents in breadth-first order. Errors (nothing changes):
    /// [`Error::VirtualSocketUnknown`], [`Error::VirtualSocketTargetMismatch`].
    pub fn delete_virtual_socket(
        &mut self,
        id: SubscriberId,
        expected_target: Option<SubscriberId>,
    ) -> Result<Vec<SubscriberId>, Error> {
        let target = match self.virtual_sockets.get(&id) {
            None => return Err(Error::VirtualSocketUnknown { id }),
            Some(vs) => vs.target,
        };
        if let Some(expected) = expected_target {
            if expected != target {
                return Err(Error::VirtualSocketTargetMismatch {
                    id,
                    expected,
                    actual: target,
                });
            }
        }
        self.detach_dependent(target, id);
        let mut removed = vec![id];
        self.delete_tree(&mut removed);
        Ok(removed)
    }

    /// Forgets subscriber `id`: called when a connection closes. Removes all
    /// its subscriptions and every virtual socket that (transitively) points
    /// at it. If `id` is itself a virtual socket it is deleted too, exactly
    /// like `delete_virtual_socket(id, None)`. Unknown ids are a no-op.
    ///
    /// Returns the deleted virtual socket ids (breadth-first; `id` first if
    /// it was one), so the runtime can notify their owners.
    pub fn remove_subscriber(&mut self, id: SubscriberId) -> Vec<SubscriberId> {
        if self.virtual_sockets.contains_key(&id) {
            // Cannot fail: the id exists and there is no guard.
            return self.delete_virtual_socket(id, None).unwrap_or_default();
        }
        self.unsubscribe_all(id, false);
        let mut removed: Vec<SubscriberId> = self
            .dependents
            .remove(&id)
            .map(|set| set.into_iter().collect())
            .unwrap_or_default();
        self.delete_tree(&mut removed);
        removed
    }

    /// Deletes the virtual sockets in `queue` and all their dependents,
    /// appending the dependents to `queue`. The roots must already be
    /// detached from their targets' dependent sets; everything below them is
    /// dropped wholesale. Iterative, so a long chain cannot overflow the stack.
    fn delete_tree(&mut self, queue: &mut Vec<SubscriberId>) {
        let mut next = 0;
        while let Some(&vs) = queue.get(next) {
            next += 1;
            if let Some(children) = self.dependents.remove(&vs) {
                queue.extend(children);
            }
            self.unsubscribe_all(vs, true);
            self.virtual_sockets.remove(&vs);
        }
    }

    /// Removes the edge `target -> child` from the reverse index.
    fn detach_dependent(&mut self, target: SubscriberId, child: SubscriberId) {
        if let Some(set) = self.dependents.get_mut(&target) {
            set.remove(&child);
            if set.is_empty() {
                self.dependents.remove(&target);
            }
        }
    }

    /// Whether `id` is a live virtual socket.
    pub fn is_virtual_socket(&self, id: SubscriberId) -> bool {
        self.virtual_sockets.contains_key(&id)
    }

    /// The virtual socket `id`, if it exists.
    pub fn virtual_socket(&self, id: SubscriberId) -> Option<&VirtualSocket> {
        self.virtual_sockets.get(&id)
    }

    /// The virtual sockets pointing directly at `target` (a connection or a
    /// virtual socket), in no particular order.
    pub fn virtual_sockets_targeting(
        &self,
        target: SubscriberId,
    ) -> impl Iterator<Item = SubscriberId> + '_ {
        self.dependents
            .get(&target)
            .into_iter()
            .flat_map(|set| set.iter().copied())
    }

    /// Number of live virtual sockets.
    pub fn virtual_socket_count(&self) -> usize {
        self.virtual_sockets.len()
    }

    /// Where a message for subscriber `id` goes: its final connection and the
    /// composed prefix. A connection (any id that is not a virtual socket)
    /// resolves to itself with no prefix. O(1): the chain was resolved at
    /// creation.
    pub fn resolve(&self, id: SubscriberId) -> (ConnectionId, Option<&Bytes>) {
        match self.virtual_sockets.get(&id) {
            Some(vs) => (vs.connection, vs.prefix.as_ref()),
            None => (id, None),
        }
    }

    /// The virtual-socket half of [`Registry::check_invariants`].
    pub(crate) fn check_virtual_sockets(&self) -> Result<(), String> {
        let mut edges = 0;
        for (id, vs) in &self.virtual_sockets {
            if !self
                .dependents
                .get(&vs.target)
                .is_some_and(|s| s.contains(id))
            {
                return Err(format!("vs {id} -> {} has no dependents edge", vs.target));
            }
            // Walk the chain from scratch; a cycle would exceed the count.
            let (mut cur, mut prefix, mut hops) = (*id, Vec::new(), 0);
            while let Some(hop) = self.virtual_sockets.get(&cur) {
                let mut p = hop.tag.as_deref().unwrap_or_default().to_vec();
                p.extend_from_slice(&prefix);
                prefix = p;
                cur = hop.target;
                hops += 1;
                if hops > self.virtual_sockets.len() {
                    return Err(format!("vs {id} is on a cycle"));
                }
            }
            let cached = vs.prefix.as_deref();
            if cur != vs.connection || cached.unwrap_or_default() != prefix.as_slice() {
                return Err(format!("vs {id} caches a stale resolution"));
            }
            if cached.is_some_and(<[u8]>::is_empty) {
                return Err(format!("vs {id} caches an empty prefix instead of None"));
            }
        }
        for (target, set) in &self.dependents {
            if set.is_empty() {
                return Err(format!("empty dependents set kept for {target}"));
            }
            for child in set {
                if self.virtual_sockets.get(child).map(|v| v.target) != Some(*target) {
                    return Err(format!("dependents edge {target} <- {child} is stale"));
                }
            }
            edges += set.len();
        }
        if edges != self.virtual_sockets.len() {
            return Err(format!(
                "{edges} dependents edges for {} virtual sockets",
                self.virtual_sockets.len()
            ));
        }
        Ok(())
    }
}
