//! Where each channel is subscribed (`Task::placed`), and bringing Redis
//! in step with what is wanted and with the map.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use tokio::io::AsyncWriteExt;
use tokio::time::Instant;

use super::super::{confirm, resp};
use super::link::{Conn, Link};
use super::Task;
use crate::slot;
use crate::subscriber::CHUNK;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Phase {
    /// `SSUBSCRIBE` sent, not confirmed.
    Joining,
    Joined,
}

/// Channels to subscribe or unsubscribe, per master and per slot: a
/// sharded command names one slot.
#[derive(Default)]
pub(super) struct PerSlot(HashMap<Arc<str>, BTreeMap<u16, Vec<Vec<u8>>>>);

impl PerSlot {
    /// `channel` (a Redis channel) at the master `addr`.
    pub(super) fn add(&mut self, addr: Arc<str>, channel: Vec<u8>) {
        let slot = slot::slot(&channel);
        self.0
            .entry(addr)
            .or_default()
            .entry(slot)
            .or_default()
            .push(channel);
    }

    /// The masters with channels here.
    pub(super) fn masters(&self) -> Vec<Arc<str>> {
        self.0.keys().cloned().collect()
    }

    /// Take `addr`'s channels out, as `verb` commands written to `out`.
    pub(super) fn write(&mut self, addr: &str, verb: &str, out: &mut Vec<u8>) {
        if let Some(slots) = self.0.remove(addr) {
            write_commands(out, verb, slots);
        }
    }
}

impl Task {
    /// Bring Redis in step with what is wanted and with the map.
    pub(super) async fn reconcile(&mut self) {
        if !self.dirty {
            return;
        }
        self.dirty = false;
        let now = Instant::now();
        // Per master, per slot: channels to subscribe and to unsubscribe.
        let mut join = PerSlot::default();
        let mut leave = PerSlot::default();
        let config = self.config.clone();
        let placed = &mut self.placed;
        self.wanted.leaving.retain(|name, at| {
            if *at > now {
                return true;
            }
            if let Some((addr, _)) = placed.remove(name) {
                leave.add(addr, config.redis_channel(name));
            }
            false
        });
        // Offsets are remembered while a channel is subscribed here, and
        // across its moves; a channel that left starts afresh.
        let wanted = &self.wanted;
        self.inbound
            .positions
            .retain(|c| wanted.channels.contains(c) || wanted.leaving.contains_key(c));
        for name in &self.wanted.channels {
            let channel = config.redis_channel(name);
            let slot = slot::slot(&channel);
            let owner = self.map.owner_addr(slot);
            if let Some((at, _)) = self.placed.get(name) {
                if Some(&**at) == owner {
                    continue;
                }
                // Subscribed at a master that no longer has the slot.
                let (at, _) = self.placed.remove(name).expect("just seen");
                leave.add(at, channel.clone());
            }
            let Some((addr, _)) = owner.and_then(|o| self.conns.get_key_value(o)) else {
                continue;
            };
            if !matches!(self.conns[addr].link, Link::Up(_)) {
                continue;
            }
            let addr = addr.clone();
            self.placed
                .insert(name.clone(), (addr.clone(), Phase::Joining));
            join.add(addr, channel);
        }
        self.place_own(&mut join, &mut leave);
        let mut failed = Vec::new();
        let mut addrs = join.masters();
        addrs.extend(leave.masters());
        for addr in addrs {
            let mut bytes = Vec::new();
            join.write(&addr, "SSUBSCRIBE", &mut bytes);
            leave.write(&addr, "SUNSUBSCRIBE", &mut bytes);
            if bytes.is_empty() {
                continue;
            }
            let Some(Conn {
                link: Link::Up(writer),
                ..
            }) = self.conns.get_mut(&addr)
            else {
                continue;
            };
            let written =
                tokio::time::timeout(self.config.connect_timeout, writer.write_all(&bytes)).await;
            if !matches!(written, Ok(Ok(()))) {
                failed.push(addr);
            }
        }
        for addr in failed {
            self.lost(&addr);
        }
        self.check_confirmed();
    }

    /// Every wanted channel whose master is connected is subscribed there:
    /// publishes waiting for their subscriptions may go. (A channel whose
    /// master is down does not hold back the others: its publishes are
    /// refused anyway.)
    fn check_confirmed(&self) {
        self.report_own();
        for name in &self.wanted.channels {
            let owner = self
                .map
                .owner_addr(slot::slot(&self.config.redis_channel(name)));
            let up = owner
                .and_then(|o| self.conns.get(o))
                .is_some_and(|c| matches!(c.link, Link::Up(_)));
            if !up {
                continue;
            }
            match self.placed.get(name) {
                Some((at, Phase::Joined)) if Some(&**at) == owner => {}
                _ => return,
            }
        }
        confirm(&self.shared.base, self.ticket);
    }
}

/// One command per slot (a sharded command names one slot), each of at
/// most `CHUNK` channels.
fn write_commands(out: &mut Vec<u8>, verb: &str, slots: BTreeMap<u16, Vec<Vec<u8>>>) {
    for channels in slots.into_values() {
        for chunk in channels.chunks(CHUNK) {
            let mut args: Vec<&[u8]> = Vec::with_capacity(chunk.len() + 1);
            args.push(verb.as_bytes());
            args.extend(chunk.iter().map(Vec::as_slice));
            resp::command(out, &args);
        }
    }
}
