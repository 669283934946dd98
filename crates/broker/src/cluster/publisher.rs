//! The cluster's command side: every publish of this node as an
//! `SPUBLISH` to the master of its slot, pipelined per master.
//!
//! Order: one task takes a batch, sends each master its part (all masters
//! at once), and finishes the batch, `MOVED` answers included, before it
//! takes the next. A slot moves at one moment, so a master's answers for
//! one slot are some that ran followed by some `MOVED`; those are sent
//! again in their order to the new master before any later publish, and a
//! channel's publishes keep their order across the move. A `MOVED` answer
//! means the command did not run, so sending it again cannot deliver it
//! twice; a connection that failed mid-batch is not retried (it may have
//! run), and its publishes are counted as lost, as with one Redis.
//!
//! A channel with history is published by the append script
//! (`crate::history`, `EVALSHA`, its `SPUBLISH` inside), routed by the
//! same slot: its keys `<prefix>{c}:...` share the channel's hash tag. The
//! script is loaded on every new connection; a master that answers
//! `-NOSCRIPT` anyway (a flushed cache) gets it loaded and the publishes
//! again, in order, as for `MOVED` (`NOSCRIPT` means it did not run). A
//! migration that moves the keys answers `-ASK` once they are gone (sent
//! to the new master after `ASKING`) and `-TRYAGAIN` while they are split
//! (sent again a moment later): neither ran, both keep the order.
//!
//! Cost of the single task: a master that answers slowly holds back the
//! batch, and so the others, for at most `connect_timeout` (the response
//! timeout of these connections), after which its part is counted as lost.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use futures_util::future::join_all;
use redis::aio::{ConnectionLike, MultiplexedConnection};
use switchboard_runtime::stats::{self, Stats};
use tokio::sync::mpsc;

use super::redirect::Redirect;
use super::{command_connection, ClusterShared, View};
use crate::backoff::Backoff;
use crate::history::{self, Publish};
use crate::{queues, slot, BrokerConfig, Outgoing};

/// `MOVED` rounds per batch before the rest is given up as lost: a slot
/// moves once in a batch; more means the cluster's masters disagree.
const MAX_REDIRECTS: usize = 5;
/// The wait before publishes answered `-TRYAGAIN` (a migration moving a
/// slot's keys) are sent again.
const TRY_AGAIN_DELAY: std::time::Duration = std::time::Duration::from_millis(10);

struct Connection {
    connection: MultiplexedConnection,
    /// `NodeState::epoch` when it was made.
    epoch: u64,
}

pub(crate) async fn run(
    shared: Arc<ClusterShared>,
    seed: redis::ConnectionInfo,
    config: Arc<BrokerConfig>,
    stats: Arc<Stats>,
    mut queue: mpsc::Receiver<Outgoing>,
) {
    shared.base.publisher_up.store(true, Ordering::Release);
    let base = &shared.base;
    let mut connections: HashMap<String, Connection> = HashMap::new();
    // Slots seen moving (`MOVED`), until the next map says it itself.
    let mut redirects: HashMap<u16, String> = HashMap::new();
    let mut generation = 0;
    let mut batch: Vec<Outgoing> = Vec::new();
    let mut closing = false;
    let mut backoff = Backoff::new(config.max_reconnect_delay);
    // Masters the last attempt could not reach, and when to try again.
    let mut failed: HashMap<String, tokio::time::Instant> = HashMap::new();
    loop {
        let view = shared.view.read().clone();
        if view.generation != generation {
            generation = view.generation;
            redirects.clear();
            connections.retain(|addr, _| view.map.nodes.contains(addr));
            failed.retain(|addr, _| view.map.nodes.contains(addr));
        }
        // Connect to every master now (and again after a master's pub/sub
        // connection was remade), so a publish is not refused for want of
        // a connection; a master that cannot be reached is tried again
        // after a back-off, meanwhile its channels' publishes are refused.
        let mut unreachable = false;
        let now = tokio::time::Instant::now();
        for node in &view.nodes {
            if failed.get(&node.addr).is_some_and(|at| *at > now) {
                unreachable = true;
                continue;
            }
            let made = connect(&mut connections, &seed, &config, &view, &node.addr).await;
            node.writable.store(made, Ordering::Release);
            if made {
                failed.remove(&node.addr);
            } else {
                failed.insert(node.addr.clone(), now + backoff.next_delay());
                unreachable = true;
            }
        }
        if failed.is_empty() {
            backoff.reset();
        }
        let retry = failed
            .values()
            .min()
            .map_or(std::time::Duration::ZERO, |at| {
                at.saturating_duration_since(now)
            });
        if !closing {
            tokio::select! {
                biased;
                next = queue.recv() => match next {
                    Some(next) => batch.push(next),
                    None => closing = true,
                },
                _ = base.close.notified() => closing = true,
                _ = shared.view_changed.notified() => continue,
                _ = tokio::time::sleep(retry), if unreachable => continue,
            }
        }
        queues::top_up(&mut batch, &mut queue);
        if batch.is_empty() {
            if closing {
                return;
            }
            continue;
        }
        base.subscribed(queues::ticket(&batch)).await;
        let pending = std::mem::take(&mut batch)
            .into_iter()
            .map(|outgoing| Pending {
                outgoing,
                ask: None,
            })
            .collect();
        let lost = send(
            &shared,
            &seed,
            &config,
            &mut connections,
            &mut redirects,
            pending,
        )
        .await;
        if lost > 0 {
            stats::add(&stats.broker_publishes_lost, lost as u64);
        }
    }
}

/// A publish of the batch, and where an `-ASK` sent it.
struct Pending {
    outgoing: Outgoing,
    /// Sent next to this master, after `ASKING` (once).
    ask: Option<String>,
}

/// Send a batch, each master its part, in rounds until every publish ran
/// or was given up; the number given up.
async fn send(
    shared: &ClusterShared,
    seed: &redis::ConnectionInfo,
    config: &BrokerConfig,
    connections: &mut HashMap<String, Connection>,
    redirects: &mut HashMap<u16, String>,
    mut pending: Vec<Pending>,
) -> usize {
    let mut lost = 0usize;
    let mut try_again = false;
    for _ in 0..=MAX_REDIRECTS {
        if pending.is_empty() {
            break;
        }
        if std::mem::take(&mut try_again) {
            // Mid-migration: give it a moment to move the keys.
            tokio::time::sleep(TRY_AGAIN_DELAY).await;
        }
        let view = shared.view.read().clone();
        // Each master's part, in the batch's order.
        let mut parts: Vec<(String, Vec<Pending>)> = Vec::new();
        for item in pending.drain(..) {
            let slot = slot::slot(&item.outgoing.channel);
            let owner = item
                .ask
                .as_deref()
                .or_else(|| redirects.get(&slot).map(String::as_str))
                .or_else(|| view.map.owner_addr(slot));
            let Some(owner) = owner else {
                lost += 1;
                continue;
            };
            match parts.iter_mut().find(|(addr, _)| addr == owner) {
                Some((_, part)) => part.push(item),
                None => parts.push((owner.to_string(), vec![item])),
            }
        }
        let mut sends = Vec::new();
        for (addr, part) in parts {
            if !connect(connections, seed, config, &view, &addr).await {
                mark(&view, &addr, false);
                lost += part.len();
                continue;
            }
            let mut connection = connections[&addr].connection.clone();
            sends.push(async move {
                let mut pipe = redis::pipe();
                for item in &part {
                    if item.ask.is_some() {
                        pipe.cmd("ASKING");
                    }
                    let outgoing = &item.outgoing;
                    // One publish per call here (a run would share a call):
                    // the redirects are answered per command, so per publish.
                    history::publish(&mut pipe, outgoing, config, Publish::Sharded);
                }
                let count = part.len() + part.iter().filter(|p| p.ask.is_some()).count();
                let answers = connection.req_packed_commands(&pipe, 0, count).await;
                let answers = answers.ok().filter(|a| a.len() == count);
                (addr, part, answers)
            });
        }
        let mut reload = Vec::new();
        for (addr, part, answers) in join_all(sends).await {
            let Some(answers) = answers else {
                // May have run: not sent again.
                lost += part.len();
                connections.remove(&addr);
                mark(&view, &addr, false);
                shared.refresh.notify_one();
                continue;
            };
            let mut answers = answers.into_iter();
            for mut item in part {
                if item.ask.is_some() {
                    // The `+OK` of `ASKING`.
                    answers.next();
                }
                let Some(redis::Value::ServerError(error)) = answers.next() else {
                    continue;
                };
                // A slot moves at one moment, and a script is loaded at
                // one: a master's answers for one slot are some that ran,
                // then some that did not (these), which go again in order.
                match Redirect::of(&error) {
                    Redirect::Moved { slot, addr: to } => {
                        redirects.insert(slot, to);
                        item.ask = None;
                    }
                    Redirect::Ask { addr: to } => item.ask = Some(to),
                    Redirect::TryAgain => try_again = true,
                    Redirect::NoScript => {
                        if !reload.contains(&addr) {
                            reload.push(addr.clone());
                        }
                    }
                    // Refused (CLUSTERDOWN, NOPERM...): it did not run,
                    // and will not.
                    Redirect::Refused => {
                        lost += 1;
                        continue;
                    }
                }
                pending.push(item);
            }
        }
        for addr in reload {
            // A master without the script (a replica promoted, a flushed
            // cache): load it; failing that, a new connection loads it.
            let loaded = match connections.get_mut(&addr) {
                Some(c) => history::load_publish_script(&mut c.connection, config).await,
                None => false,
            };
            if !loaded {
                connections.remove(&addr);
            }
        }
        if !pending.is_empty() {
            shared.refresh.notify_one();
        }
    }
    lost + pending.len()
}

/// Make sure there is a current command connection to `addr`; whether
/// there is.
async fn connect(
    connections: &mut HashMap<String, Connection>,
    seed: &redis::ConnectionInfo,
    config: &BrokerConfig,
    view: &View,
    addr: &str,
) -> bool {
    let epoch = view
        .nodes
        .iter()
        .find(|n| n.addr == addr)
        .map(|n| n.epoch.load(Ordering::Acquire));
    if let Some(existing) = connections.get(addr) {
        if epoch.is_none() || epoch == Some(existing.epoch) {
            return true;
        }
        connections.remove(addr);
    }
    let made = async {
        let mut connection = command_connection(seed, addr, config).await?;
        history::load_publish_script(&mut connection, config)
            .await
            .then_some(connection)
    };
    match made.await {
        Some(connection) => {
            connections.insert(
                addr.to_string(),
                Connection {
                    connection,
                    epoch: epoch.unwrap_or(0),
                },
            );
            mark(view, addr, true);
            true
        }
        None => false,
    }
}

fn mark(view: &View, addr: &str, writable: bool) {
    if let Some(node) = view.nodes.iter().find(|n| n.addr == addr) {
        node.writable.store(writable, Ordering::Release);
    }
}
