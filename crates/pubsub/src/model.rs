//! A naive reference model of the registry, an operation decoder and a
//! differential checker, shared by `cargo test` and the fuzz target.
//!
//! The model stores flat ordered maps and recomputes everything on demand
//! (chains are walked, recipients collected into sets), so it is easy to
//! believe and has none of the registry's indexes or caches. [`run`] decodes
//! bytes into operations, applies each to both, and after every step compares
//! the results and the whole observable state, and checks the registry's own
//! invariants. Any divergence panics, which is what the fuzzer looks for.
//!
//! Ids and channel names are drawn from small domains so that random inputs
//! collide often: re-subscribing, id reuse attempts, chains and shared
//! recipients are the interesting cases.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;

use crate::{ConnectionId, Error, Registry, SubscriberId, Target};

/// Subscriber ids used by decoded operations: `0..ID_SPACE`.
pub const ID_SPACE: u64 = 16;

/// Channel names used by decoded operations (the empty name is valid too).
pub const CHANNELS: [&str; 5] = ["", "a", "b", "news", "é"];

/// One registry operation, as decoded from fuzz input.
#[derive(Debug, Clone)]
pub enum Op {
    /// [`Registry::subscribe`].
    Subscribe(SubscriberId, &'static str, i32),
    /// [`Registry::subscribe_many`].
    SubscribeMany(Vec<SubscriberId>, &'static str, i32),
    /// [`Registry::unsubscribe`].
    Unsubscribe(SubscriberId, &'static str),
    /// [`Registry::copy_subscriptions`] (from, to).
    Copy(&'static str, &'static str),
    /// [`Registry::create_virtual_socket`] (id, target, tag).
    CreateVirtual(SubscriberId, SubscriberId, Option<Bytes>),
    /// [`Registry::delete_virtual_socket`] (id, expected target).
    DeleteVirtual(SubscriberId, Option<SubscriberId>),
    /// [`Registry::remove_subscriber`].
    Remove(SubscriberId),
    /// [`Registry::for_each_recipient`] (targets, excluded connection).
    Publish(Vec<Target<'static>>, Option<ConnectionId>),
}

/// Reads bytes, yielding zeros once the input is exhausted, so every input
/// decodes to some operation sequence.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
    fn id(&mut self) -> SubscriberId {
        u64::from(self.byte()) % ID_SPACE
    }
    fn opt_id(&mut self) -> Option<SubscriberId> {
        (self.byte() % 2 == 1).then(|| self.id())
    }
    fn channel(&mut self) -> &'static str {
        CHANNELS[usize::from(self.byte()) % CHANNELS.len()]
    }
    fn delta(&mut self) -> i32 {
        match self.byte() {
            // Rare extremes exercise saturation.
            0x7f => i32::MAX,
            0x80 => i32::MIN,
            b => i32::from(b % 7) - 3,
        }
    }
    fn tag(&mut self) -> Option<Bytes> {
        match self.byte() % 4 {
            0 => None,
            1 => Some(Bytes::new()),
            n => Some((0..n).map(|_| self.byte()).collect()),
        }
    }
}

/// Decodes `data` into operations (one opcode byte, then its arguments).
pub fn decode(data: &[u8]) -> Vec<Op> {
    let mut r = Reader(data);
    let mut ops = Vec::new();
    while !r.0.is_empty() {
        // Creation is weighted up: it needs a fresh id, and chains need
        // several in a row, so uniform weights leave few deep chains.
        let op = match r.byte() % 12 {
            0 | 1 => Op::Subscribe(r.id(), r.channel(), r.delta()),
            2 => {
                let n = r.byte() % 5;
                let ids = (0..n).map(|_| r.id()).collect();
                Op::SubscribeMany(ids, r.channel(), r.delta())
            }
            3 => Op::Unsubscribe(r.id(), r.channel()),
            4 => Op::Copy(r.channel(), r.channel()),
            5..=7 => Op::CreateVirtual(r.id(), r.id(), r.tag()),
            8 => Op::DeleteVirtual(r.id(), r.opt_id()),
            9 => Op::Remove(r.id()),
            _ => {
                // Up to 12 targets, so both dedupe strategies run
                // (the inline one and the sorted one past INLINE_TARGETS).
                let n = r.byte() % 13;
                let targets = (0..n)
                    .map(|_| match r.byte() % 2 {
                        0 => Target::Channel(r.channel()),
                        _ => Target::Subscriber(r.id()),
                    })
                    .collect();
                Op::Publish(targets, r.opt_id())
            }
        };
        ops.push(op);
    }
    ops
}

/// The naive model: flat maps, no indexes, no caches.
#[derive(Debug, Default)]
pub struct Model {
    /// (subscriber, channel) -> refcount, always > 0.
    subs: BTreeMap<(SubscriberId, &'static str), u32>,
    /// virtual socket -> (target, tag).
    vs: BTreeMap<SubscriberId, (SubscriberId, Option<Bytes>)>,
}

impl Model {
    fn subscribe(&mut self, id: SubscriberId, ch: &'static str, delta: i32) -> bool {
        let old = self.subs.get(&(id, ch)).copied().unwrap_or(0);
        let new = (i64::from(old) + i64::from(delta)).clamp(0, i64::from(u32::MAX));
        if delta == 0 || (old == 0 && delta < 0) {
            return false;
        }
        if new == 0 {
            self.subs.remove(&(id, ch));
        } else {
            self.subs
                .insert((id, ch), u32::try_from(new).unwrap_or(u32::MAX));
        }
        (old == 0) != (new == 0)
    }

    fn members(&self, ch: &str) -> Vec<SubscriberId> {
        self.subs
            .keys()
            .filter(|k| k.1 == ch)
            .map(|k| k.0)
            .collect()
    }

    fn channels_of(&self, id: SubscriberId) -> Vec<&'static str> {
        let mut v: Vec<_> = self
            .subs
            .keys()
            .filter(|k| k.0 == id)
            .map(|k| k.1)
            .collect();
        v.sort_unstable();
        v
    }

    fn copy(&mut self, from: &'static str, to: &'static str) -> Vec<SubscriberId> {
        if from == to {
            return Vec::new();
        }
        let new: Vec<_> = (self.members(from).into_iter())
            .filter(|&id| !self.subs.contains_key(&(id, to)))
            .collect();
        for &id in &new {
            self.subs.insert((id, to), 1);
        }
        new
    }

    fn create(
        &mut self,
        id: SubscriberId,
        target: SubscriberId,
        tag: Option<Bytes>,
    ) -> Result<(), Error> {
        if self.vs.contains_key(&id) {
            return Err(Error::VirtualSocketExists { id });
        }
        if target == id {
            return Err(Error::VirtualSocketCycle { id });
        }
        if self.subs.keys().any(|k| k.0 == id) || self.vs.values().any(|v| v.0 == id) {
            return Err(Error::VirtualSocketIdInUse { id });
        }
        self.vs.insert(id, (target, tag));
        Ok(())
    }

    /// Whether the chain starting at `from` passes through `id`.
    fn reaches(&self, from: SubscriberId, id: SubscriberId) -> bool {
        let mut cur = from;
        for _ in 0..=self.vs.len() {
            if cur == id {
                return true;
            }
            match self.vs.get(&cur) {
                Some(v) => cur = v.0,
                None => return false,
            }
        }
        panic!("model: cycle through {from}");
    }

    /// Deletes every virtual socket whose chain reaches `id`, and every
    /// subscription of `id` and of those; returns the deleted sockets.
    fn purge(&mut self, id: SubscriberId) -> Vec<SubscriberId> {
        let doomed: Vec<_> = self
            .vs
            .keys()
            .copied()
            .filter(|&v| self.reaches(v, id))
            .collect();
        self.subs.retain(|k, _| k.0 != id && !doomed.contains(&k.0));
        self.vs.retain(|v, _| !doomed.contains(v));
        doomed
    }

    fn delete(
        &mut self,
        id: SubscriberId,
        expected: Option<SubscriberId>,
    ) -> Result<Vec<SubscriberId>, Error> {
        let actual = self
            .vs
            .get(&id)
            .ok_or(Error::VirtualSocketUnknown { id })?
            .0;
        match expected {
            Some(expected) if expected != actual => Err(Error::VirtualSocketTargetMismatch {
                id,
                expected,
                actual,
            }),
            _ => Ok(self.purge(id)),
        }
    }

    fn resolve(&self, id: SubscriberId) -> (ConnectionId, Vec<u8>) {
        let (mut cur, mut prefix) = (id, Vec::new());
        while let Some((target, tag)) = self.vs.get(&cur) {
            // Each hop prefixes its own tag to what it received.
            prefix.splice(0..0, tag.iter().flatten().copied());
            cur = *target;
        }
        (cur, prefix)
    }

    fn publish(
        &self,
        targets: &[Target<'_>],
        exclude: Option<ConnectionId>,
    ) -> Vec<(ConnectionId, Vec<u8>)> {
        let mut ids = BTreeSet::new();
        for t in targets {
            match *t {
                Target::Channel(ch) => ids.extend(self.members(ch)),
                Target::Subscriber(id) => {
                    ids.insert(id);
                }
            }
        }
        let mut out: Vec<_> = ids
            .into_iter()
            .map(|id| self.resolve(id))
            .filter(|(conn, _)| Some(*conn) != exclude)
            .collect();
        out.sort();
        out
    }
}

/// Sorted copy, for comparing sets that come back in unspecified order.
fn sorted<T: Ord + Clone>(v: &[T]) -> Vec<T> {
    let mut v = v.to_vec();
    v.sort();
    v
}

/// Checks a returned list of deleted virtual sockets: `root` first (when
/// given), no duplicates, same set as the model's.
fn check_deleted(
    got: &[SubscriberId],
    root: Option<SubscriberId>,
    want: &[SubscriberId],
    step: &str,
) {
    if let Some(root) = root {
        assert_eq!(got.first(), Some(&root), "{step}: root not first");
    }
    let got_sorted = sorted(got);
    assert!(
        got_sorted.windows(2).all(|w| w[0] != w[1]),
        "{step}: duplicates in {got:?}"
    );
    assert_eq!(got_sorted, sorted(want), "{step}: deleted sets differ");
}

/// How often a run reached the states worth testing; lets a test assert that
/// random inputs are not trivially shallow.
#[derive(Debug, Default, Clone, Copy)]
pub struct Coverage {
    /// Membership changes (joins and leaves).
    pub membership_changes: usize,
    /// Virtual sockets created.
    pub virtual_created: usize,
    /// Virtual sockets created on top of another virtual socket.
    pub chains: usize,
    /// Deletions that took dependents along.
    pub cascades: usize,
    /// Publishes with more than [`crate::INLINE_TARGETS`] targets.
    pub sorted_publishes: usize,
    /// Deliveries through a virtual socket with a non-empty prefix.
    pub tagged_deliveries: usize,
    /// Deliveries skipped by the exclusion (model count minus registry).
    pub excluded: usize,
}

impl std::ops::AddAssign for Coverage {
    fn add_assign(&mut self, o: Coverage) {
        self.membership_changes += o.membership_changes;
        self.virtual_created += o.virtual_created;
        self.chains += o.chains;
        self.cascades += o.cascades;
        self.sorted_publishes += o.sorted_publishes;
        self.tagged_deliveries += o.tagged_deliveries;
        self.excluded += o.excluded;
    }
}

/// Applies `op` to both and compares the results.
fn apply(
    reg: &mut Registry,
    model: &mut Model,
    scratch: &mut Vec<SubscriberId>,
    op: &Op,
    step: &str,
    cov: &mut Coverage,
) {
    match op {
        Op::Subscribe(id, ch, d) => {
            let changed = reg.subscribe(*id, ch, *d);
            assert_eq!(changed, model.subscribe(*id, ch, *d), "{step}");
            cov.membership_changes += usize::from(changed);
        }
        Op::SubscribeMany(ids, ch, d) => {
            let want: Vec<_> = ids
                .iter()
                .copied()
                .filter(|&id| model.subscribe(id, ch, *d))
                .collect();
            assert_eq!(reg.subscribe_many(ids, ch, *d), want, "{step}");
            cov.membership_changes += want.len();
        }
        Op::Unsubscribe(id, ch) => {
            assert_eq!(
                reg.unsubscribe(*id, ch),
                model.subs.remove(&(*id, *ch)).is_some(),
                "{step}"
            );
        }
        Op::Copy(from, to) => {
            assert_eq!(
                sorted(&reg.copy_subscriptions(from, to)),
                model.copy(from, to),
                "{step}"
            );
        }
        Op::CreateVirtual(id, target, tag) => {
            let got = reg.create_virtual_socket(*id, *target, tag.clone());
            assert_eq!(got, model.create(*id, *target, tag.clone()), "{step}");
            if got.is_ok() {
                cov.virtual_created += 1;
                cov.chains += usize::from(model.vs.contains_key(target));
            }
        }
        Op::DeleteVirtual(id, expected) => match (
            reg.delete_virtual_socket(*id, *expected),
            model.delete(*id, *expected),
        ) {
            (Ok(got), Ok(want)) => {
                check_deleted(&got, Some(*id), &want, step);
                cov.cascades += usize::from(got.len() > 1);
            }
            (got, want) => assert_eq!(got, want, "{step}"),
        },
        Op::Remove(id) => {
            let root = model.vs.contains_key(id).then_some(*id);
            let want = model.purge(*id);
            check_deleted(&reg.remove_subscriber(*id), root, &want, step);
            cov.cascades += usize::from(want.len() > 1);
        }
        Op::Publish(targets, exclude) => {
            let want = model.publish(targets, *exclude);
            cov.sorted_publishes += usize::from(targets.len() > crate::INLINE_TARGETS);
            cov.excluded += model.publish(targets, None).len() - want.len();
            cov.tagged_deliveries += want.iter().filter(|(_, p)| !p.is_empty()).count();
            for reuse_scratch in [false, true] {
                let mut got = Vec::new();
                let push = |conn, prefix: Option<&Bytes>| {
                    got.push((conn, prefix.map_or(Vec::new(), |p| p.to_vec())))
                };
                let n = if reuse_scratch {
                    reg.for_each_recipient_with(targets, *exclude, scratch, push)
                } else {
                    reg.for_each_recipient(targets, *exclude, push)
                };
                assert_eq!(n, got.len(), "{step}: returned count");
                assert_eq!(sorted(&got), want, "{step}: recipients");
            }
        }
    }
}

/// Compares every observable of the registry with the model over the whole
/// id and channel domain, and checks the registry's invariants.
fn compare(reg: &Registry, model: &Model, step: &str) {
    if let Err(e) = reg.check_invariants() {
        panic!("{step}: invariant broken: {e}");
    }
    assert_eq!(reg.subscription_count(), model.subs.len(), "{step}");
    assert_eq!(reg.virtual_socket_count(), model.vs.len(), "{step}");
    let mut channels: Vec<&str> = model.subs.keys().map(|k| k.1).collect();
    channels.sort_unstable();
    channels.dedup();
    assert_eq!(
        sorted(&reg.channels().collect::<Vec<_>>()),
        channels,
        "{step}"
    );
    assert_eq!(reg.channel_count(), channels.len(), "{step}");
    let subscribers: BTreeSet<_> = model.subs.keys().map(|k| k.0).collect();
    assert_eq!(reg.subscriber_total(), subscribers.len(), "{step}");
    for ch in CHANNELS {
        let members = model.members(ch);
        assert_eq!(
            sorted(reg.subscribers_of(ch)),
            members,
            "{step}: members of {ch:?}"
        );
        assert_eq!(reg.subscriber_count(ch), members.len(), "{step}");
        assert_eq!(reg.has_subscriptions(ch), !members.is_empty(), "{step}");
        for id in 0..ID_SPACE {
            let count = model.subs.get(&(id, ch)).copied().unwrap_or(0);
            assert_eq!(reg.refcount(id, ch), count, "{step}: refcount {id} {ch:?}");
            assert_eq!(reg.is_subscribed(id, ch), count > 0, "{step}");
        }
    }
    for id in 0..ID_SPACE {
        let want = model.channels_of(id);
        assert_eq!(
            sorted(&reg.channels_of(id).collect::<Vec<_>>()),
            want,
            "{step}: channels of {id}"
        );
        assert_eq!(reg.channel_count_of(id), want.len(), "{step}");
        let vs = reg
            .virtual_socket(id)
            .map(|v| (v.target(), v.tag().cloned()));
        assert_eq!(
            vs,
            model.vs.get(&id).cloned(),
            "{step}: virtual socket {id}"
        );
        assert_eq!(reg.is_virtual_socket(id), vs.is_some(), "{step}");
        let (conn, prefix) = reg.resolve(id);
        assert_eq!(
            (conn, prefix.map_or(Vec::new(), |p| p.to_vec())),
            model.resolve(id),
            "{step}: resolve {id}"
        );
        let dependents: Vec<_> = model
            .vs
            .iter()
            .filter(|v| v.1 .0 == id)
            .map(|v| *v.0)
            .collect();
        assert_eq!(
            sorted(&reg.virtual_sockets_targeting(id).collect::<Vec<_>>()),
            dependents,
            "{step}"
        );
    }
}

/// Applies `ops` to a fresh registry and a fresh model, comparing after each
/// step. Panics on the first divergence, naming the step and operation.
pub fn check_ops(ops: &[Op]) -> Coverage {
    let (mut reg, mut model, mut scratch) = (Registry::new(), Model::default(), Vec::new());
    let mut cov = Coverage::default();
    for (i, op) in ops.iter().enumerate() {
        let step = format!("step {i} {op:?}");
        apply(&mut reg, &mut model, &mut scratch, op, &step, &mut cov);
        compare(&reg, &model, &step);
    }
    cov
}

/// Decodes `data` and runs [`check_ops`]: the fuzz target's body.
pub fn run(data: &[u8]) -> Coverage {
    check_ops(&decode(data))
}

/// SplitMix64: a tiny deterministic PRNG, enough to generate test inputs
/// reproducibly without a dependency.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// `len` random bytes.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64() as u8).collect()
    }
}

#[cfg(test)]
#[path = "model_tests.rs"]
mod tests;
