//! This node's own channels in the cluster (`crate::nodes`): its node
//! channel and the channel every node shares, both in the nodes' slot.
//! They are placed as channels are (`placement`): subscribed at the slot's
//! master once the number is claimed, and again wherever the slot goes
//! (`-MOVED`, a `sunsubscribe` Redis sends, a lost master). Their names
//! are not UTF-8, so they are kept apart from the user channels' table.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::link::Link;
use super::placement::{PerSlot, Phase};
use super::Task;
use crate::{nodes, slot};

/// Where a channel is subscribed: the master, and how far.
type Place = Option<(Arc<str>, Phase)>;

/// Each own channel's Redis name and where it is subscribed.
#[derive(Default)]
pub(super) struct Own(Vec<(Vec<u8>, Place)>);

impl Task {
    /// Add to `join` (and `leave`) what the own channels need: none before
    /// the number is claimed.
    pub(super) fn place_own(&mut self, join: &mut PerSlot, leave: &mut PerSlot) {
        if self.own.0.is_empty() {
            let number = self.shared.base.nodes.number();
            if number == 0 {
                return;
            }
            self.own.0 = vec![
                (nodes::node_name(&self.config, number), None),
                (nodes::all_name(&self.config), None),
            ];
        }
        for (name, place) in &mut self.own.0 {
            let owner = self.map.owner_addr(slot::slot(name));
            if let Some((at, _)) = place {
                if Some(&**at) == owner {
                    continue;
                }
                leave.add(at.clone(), name.clone());
                *place = None;
            }
            let Some((addr, conn)) = owner.and_then(|o| self.conns.get_key_value(o)) else {
                continue;
            };
            if matches!(conn.link, Link::Up(_)) {
                *place = Some((addr.clone(), Phase::Joining));
                join.add(addr.clone(), name.clone());
            }
        }
    }

    /// Whether `channel` is one of this node's own; if so, what Redis said
    /// of it (`subscribed`: an `ssubscribe` confirmation, else a
    /// `sunsubscribe`) at `addr` is taken into account.
    pub(super) fn own_event(&mut self, addr: &Arc<str>, channel: &[u8], subscribed: bool) -> bool {
        let Some((_, place)) = self.own.0.iter_mut().find(|(name, _)| name == channel) else {
            return false;
        };
        match place {
            Some((at, phase)) if at == addr => match (subscribed, *phase) {
                (true, Phase::Joining) => *phase = Phase::Joined,
                // Redis dropped it: the slot moved away.
                (false, Phase::Joined) => {
                    *place = None;
                    self.request_refresh();
                }
                _ => {}
            },
            _ => {}
        }
        true
    }

    /// Forget the own channels' places that match: lost with `addr`'s
    /// connection, or `-MOVED` for the slot.
    pub(super) fn unplace_own(&mut self, lost: impl Fn(&[u8], &str, Phase) -> bool) {
        for (name, place) in &mut self.own.0 {
            if place
                .as_ref()
                .is_some_and(|(at, phase)| lost(name, at, *phase))
            {
                *place = None;
            }
        }
    }

    /// Tell the callers whether the own channels are subscribed at their
    /// master (`ClusterShared::nodes_joined`).
    pub(super) fn report_own(&self) {
        let joined = !self.own.0.is_empty()
            && self.own.0.iter().all(|(name, place)| match place {
                Some((at, Phase::Joined)) => self.map.owner_addr(slot::slot(name)) == Some(&**at),
                _ => false,
            });
        self.shared.nodes_joined.store(joined, Ordering::Release);
    }
}
