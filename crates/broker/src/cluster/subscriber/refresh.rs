//! The slot map: when it is read (regularly, sooner when something was
//! reported, often while degraded), reading it, and installing a new one.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::super::map::SlotMap;
use super::super::{node_info, NodeState, View};
use super::link::{Conn, Link};
use super::{Input, Task};
use crate::backoff::Backoff;

/// How often the map is read when all seems well: a change nobody
/// reported (a new master with no slot of ours yet) is seen within this.
pub(super) const REFRESH_INTERVAL: Duration = Duration::from_secs(5);
/// The shortest time between two reads of the map: a cluster whose nodes
/// disagree (mid-failover) is not asked in a loop.
const MIN_REFRESH_GAP: Duration = Duration::from_millis(100);
/// How often the map is read while a master is unreachable or a channel
/// has no master: a failover is followed within about this.
const DEGRADED_REFRESH: Duration = Duration::from_millis(250);

impl Task {
    pub(super) fn request_refresh(&mut self) {
        self.refresh_at = self.refresh_at.min(self.last_refresh + MIN_REFRESH_GAP);
    }

    fn degraded(&self) -> bool {
        !self.map.complete() || self.conns.values().any(|c| !matches!(c.link, Link::Up(_)))
    }

    /// Read the map (in a helper task) if it is due.
    pub(super) fn maybe_refresh(&mut self) {
        let now = Instant::now();
        if self.refreshing || now < self.refresh_at {
            return;
        }
        self.refreshing = true;
        self.last_refresh = now;
        // Until the answer: the next regular read.
        self.refresh_at = now + REFRESH_INTERVAL;
        // The masters known, then the seeds.
        let mut candidates: Vec<String> = self.map.nodes.clone();
        candidates.extend(self.seeds.iter().cloned());
        let (seed, timeout, inputs) = (
            self.seed.clone(),
            self.config.connect_timeout,
            self.inputs.clone(),
        );
        tokio::spawn(async move {
            let mut found = None;
            for addr in candidates {
                if let Some(map) = read_map(&seed, &addr, timeout).await {
                    found = Some(map);
                    break;
                }
            }
            let _ = inputs.send(Input::Map(found)).await;
        });
    }

    /// A read of the map ended: install what it found; read again soon
    /// while degraded.
    pub(super) fn map_read(&mut self, map: Option<SlotMap>) {
        self.refreshing = false;
        if let Some(map) = map {
            self.install(map);
        }
        if self.degraded() {
            self.refresh_at = self.refresh_at.min(self.last_refresh + DEGRADED_REFRESH);
        }
    }

    /// A new map: publish it, drop connections to nodes that are no longer
    /// masters, connect to new masters.
    fn install(&mut self, map: SlotMap) {
        // Compared with the published map, not `self.map`: a `-MOVED`
        // answer updates `self.map` at once (`SlotMap::moved`), and the
        // read that confirms it must still reach the callers (the nodes'
        // claim and heartbeat connect where the view says).
        if self.generation != 0 && map == self.shared.view.read().map {
            return;
        }
        self.generation += 1;
        let old = self.shared.view.read().clone();
        let nodes: Vec<Arc<NodeState>> = map
            .nodes
            .iter()
            .map(|addr| {
                old.nodes
                    .iter()
                    .find(|n| &n.addr == addr)
                    .cloned()
                    .unwrap_or_else(|| {
                        Arc::new(NodeState {
                            addr: addr.clone(),
                            subscribed: Default::default(),
                            writable: Default::default(),
                            epoch: Default::default(),
                        })
                    })
            })
            .collect();
        self.conns
            .retain(|addr, _| map.nodes.iter().any(|n| **n == **addr));
        self.placed
            .retain(|_, (at, _)| map.nodes.iter().any(|n| **n == **at));
        for addr in &map.nodes {
            let addr: Arc<str> = addr.as_str().into();
            if !self.conns.contains_key(&addr) {
                self.conns.insert(
                    addr,
                    Conn {
                        link: Link::Waiting(Instant::now()),
                        generation: 0,
                        backoff: Backoff::new(self.config.max_reconnect_delay),
                    },
                );
            }
        }
        let complete = map.complete();
        self.map = map.clone();
        *self.shared.view.write() = Arc::new(View {
            map,
            nodes,
            generation: self.generation,
        });
        self.shared
            .base
            .subscriber_up
            .store(complete, Ordering::Release);
        self.shared.view_changed.notify_one();
        self.retry_connections();
    }
}

/// `CLUSTER SLOTS` from the node at `addr`.
async fn read_map(seed: &redis::ConnectionInfo, addr: &str, timeout: Duration) -> Option<SlotMap> {
    let info = node_info(seed, addr)?;
    let host = match info.addr() {
        redis::ConnectionAddr::Tcp(host, _) => host.clone(),
        _ => return None,
    };
    let client = redis::Client::open(info).ok()?;
    let ask = async {
        let mut connection = client.get_multiplexed_async_connection().await.ok()?;
        let reply: redis::Value = redis::cmd("CLUSTER")
            .arg("SLOTS")
            .query_async(&mut connection)
            .await
            .ok()?;
        SlotMap::parse(&reply, &host)
    };
    tokio::time::timeout(timeout, ask).await.ok().flatten()
}
