//! Presence on a Redis Cluster (docs/scale-out.md, "Presence"): the
//! presence task's script calls at the master of each channel's slot,
//! through the cluster's query connections (`ClusterReader::query`,
//! following `MOVED`, `ASK`, `TRYAGAIN`, loading the scripts where a
//! master answers `NOSCRIPT`). A channel's two keys and its events
//! channel share its hash tag (`BrokerConfig::redis_channel`), so each
//! script stays in one slot and publishes its events with `SPUBLISH`
//! there. The nodes' keys, for the eviction of a dead node's members, are
//! asked of the nodes' slot's master.
//!
//! Every script may run twice (a connection that failed mid-reply is
//! tried once more): a join of a member already there and a leave of one
//! gone change nothing and publish nothing, a sweep or an eviction finds
//! nothing left to do.

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::future::join_all;
use tokio::time::Instant;

use super::{Cluster, ClusterReader};
use crate::nodes::Nodes;
use crate::presence_store::{Answer, Call, Pending, Store};
use crate::{presence_scripts, slot, BrokerConfig};

struct ClusterStore {
    reader: Arc<ClusterReader>,
    config: Arc<BrokerConfig>,
    scripts: Vec<&'static str>,
}

impl ClusterStore {
    /// The slot of `channel`'s presence (its keys and events channel).
    fn slot(&self, channel: &str) -> u16 {
        slot::slot(&self.config.presence_keys(channel)[0])
    }

    fn deadline(&self) -> Option<Instant> {
        Some(Instant::now() + self.config.connect_timeout)
    }
}

impl Store for ClusterStore {
    fn write(&self, calls: Vec<Call>) -> Pending<'_, ()> {
        Box::pin(async move {
            // Each channel's calls in order, as one pipeline at its
            // master, the channels side by side.
            // (A refresh writes every channel: found by a map, not a scan.)
            let mut channels: Vec<(Arc<str>, Vec<redis::Cmd>)> = Vec::new();
            let mut index: HashMap<Arc<str>, usize> = HashMap::new();
            for call in calls {
                match index.get(&call.channel) {
                    Some(&i) => channels[i].1.push(call.command),
                    None => {
                        index.insert(call.channel.clone(), channels.len());
                        channels.push((call.channel, vec![call.command]));
                    }
                }
            }
            let deadline = Instant::now() + self.config.connect_timeout;
            join_all(channels.iter().map(|(channel, commands)| {
                let slot = self.slot(channel);
                // A failure is left to the next refresh.
                self.reader
                    .write_all(slot, commands, &self.scripts, deadline)
            }))
            .await;
        })
    }

    fn read<'a>(&'a self, channel: &'a str, command: redis::Cmd) -> Pending<'a, Answer> {
        Box::pin(async move {
            let slot = self.slot(channel);
            self.reader
                .query(slot, &command, &self.scripts, self.deadline())
                .await
        })
    }

    fn exists(&self, key: Vec<u8>) -> Pending<'_, Option<bool>> {
        Box::pin(async move {
            let slot = slot::slot(&key);
            let mut exists = redis::cmd("EXISTS");
            exists.arg(key);
            match self.reader.query(slot, &exists, &[], self.deadline()).await {
                Ok(redis::Value::Int(count)) => Some(count > 0),
                _ => None,
            }
        })
    }
}

impl Cluster {
    /// Where the presence task's commands run, and the nodes' view its
    /// evictions follow.
    pub(crate) fn presence_store(
        &self,
        config: &Arc<BrokerConfig>,
    ) -> (Box<dyn Store>, Arc<Nodes>) {
        let store = ClusterStore {
            reader: self.reader.clone(),
            config: config.clone(),
            scripts: presence_scripts::scripts(true).sources(),
        };
        (Box::new(store), self.shared.base.nodes.clone())
    }
}
