//! The cluster's subscription side: one task for the whole cluster.
//!
//! It keeps, apart from any connection, what this node wants (`Wanted`, as
//! for one Redis: a channel is subscribed with its first local subscriber
//! and unsubscribed `unsubscribe_delay` after its last one left), the slot
//! map, and where each channel is subscribed (`placed`). One pub/sub
//! connection per master; each has a reader task that parses what arrives
//! and hands it here, so everything about subscriptions happens on this
//! task, in order. After every change it reconciles: a channel wanted and
//! not subscribed at its slot's master is subscribed there (one
//! `SSUBSCRIBE` per slot, since one command may name one slot only; all of
//! a master's in one write); a channel subscribed elsewhere, or due to
//! leave, is unsubscribed.
//!
//! Following the cluster:
//! - `-MOVED` to an `SSUBSCRIBE`: the slot moved; the map is read again
//!   and the slot's channels are subscribed at the new master.
//! - a `sunsubscribe` this node did not ask for: Redis dropped the
//!   subscription because the slot moved away (migration, or a master that
//!   became a replica); the same.
//! - a lost pub/sub connection: the master may have failed; its channels
//!   are unplaced, the map is read again until a replica has taken over,
//!   and they are subscribed at the new master. The old master is retried
//!   with back-off while the map still names it.
//! - a periodic refresh of the map catches what nobody reported.
//!
//! Messages published while a channel moves, before it is subscribed at
//! its new master, do not reach this node through pub/sub, which keeps
//! nothing; on a channel with history they are read from it
//! (`crate::inbound`): when the channel is subscribed again, and whenever
//! a message's offset skips ahead.
//!
//! Files: this one, the task and its loop; `refresh`, the slot map (when
//! it is read, reading it, a new one); `link`, the pub/sub connection to
//! each master; `placement`, where each channel is subscribed and
//! bringing Redis in step with what is wanted; `own`, this node's own
//! channels (`crate::nodes`), placed the same way.

mod link;
mod own;
mod placement;
mod refresh;

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use switchboard_runtime::Server;
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::map::SlotMap;
use super::resp::Event;
use super::{confirm, ClusterReader, ClusterShared};
use crate::inbound::Inbound;
use crate::subscriber::Wanted;
use crate::{slot, BrokerConfig, Command};
use link::{Conn, Link};
use placement::{PerSlot, Phase};
use refresh::REFRESH_INTERVAL;

/// Events from the reader tasks waiting for this task, at most: past it a
/// reader stops reading, and Redis holds the rest (its pub/sub output
/// buffer limit applies).
const EVENTS: usize = 4096;

pub(crate) struct Setup {
    pub(crate) shared: Arc<ClusterShared>,
    pub(crate) seed: redis::ConnectionInfo,
    pub(crate) seeds: Vec<String>,
    pub(crate) config: Arc<BrokerConfig>,
    pub(crate) node: u64,
    pub(crate) server: Weak<Server>,
    /// Reads histories, to fill gaps and catch channels up.
    pub(crate) reader: Arc<ClusterReader>,
    pub(crate) commands: mpsc::UnboundedReceiver<Command>,
    pub(crate) publisher: tokio::task::JoinHandle<()>,
}

/// What the helper tasks report.
enum Input {
    /// A reply on a master's pub/sub connection (`generation` tells a
    /// current connection from one already replaced).
    Reply {
        addr: Arc<str>,
        generation: u64,
        event: Event,
    },
    /// That connection ended.
    Closed { addr: Arc<str>, generation: u64 },
    /// A connection attempt succeeded (the writing half) or failed.
    Connected {
        addr: Arc<str>,
        generation: u64,
        writer: Option<OwnedWriteHalf>,
    },
    /// A read of the map: the map, or none if no node answered.
    Map(Option<SlotMap>),
}

struct Task {
    shared: Arc<ClusterShared>,
    seed: redis::ConnectionInfo,
    seeds: Vec<String>,
    config: Arc<BrokerConfig>,
    /// Messages on their way to the fan-out, history channels in order.
    inbound: Inbound,
    map: SlotMap,
    generation: u64,
    conns: HashMap<Arc<str>, Conn>,
    /// Where each channel is subscribed.
    placed: HashMap<Arc<str>, (Arc<str>, Phase)>,
    /// This node's own channels and where they are subscribed.
    own: own::Own,
    wanted: Wanted,
    ticket: u64,
    inputs: mpsc::Sender<Input>,
    next_generation: u64,
    refreshing: bool,
    last_refresh: Instant,
    refresh_at: Instant,
    /// Something changed that may need subscribing or unsubscribing:
    /// reconciling walks every wanted channel, so batches of messages
    /// alone do not.
    dirty: bool,
}

pub(crate) async fn run(setup: Setup) {
    let (inputs, mut input_rx) = mpsc::channel(EVENTS);
    let Setup {
        shared,
        seed,
        seeds,
        config,
        node,
        server,
        reader,
        mut commands,
        publisher,
    } = setup;
    let inbound = Inbound::new(config.clone(), node, server, reader);
    let now = Instant::now();
    let mut task = Task {
        shared,
        seed,
        seeds,
        config,
        inbound,
        map: SlotMap::default(),
        generation: 0,
        conns: HashMap::new(),
        placed: HashMap::new(),
        own: own::Own::default(),
        wanted: Wanted::default(),
        ticket: 0,
        inputs,
        next_generation: 0,
        refreshing: false,
        last_refresh: now,
        refresh_at: now,
        dirty: true,
    };
    loop {
        task.maybe_refresh();
        let wake = task.next_wake();
        let shared = task.shared.clone();
        tokio::select! {
            command = commands.recv() => match command {
                Some(Command::Changes(changes, t)) => {
                    task.apply(changes, t);
                    while let Ok(command) = commands.try_recv() {
                        match command {
                            Command::Changes(more, t) => task.apply(more, t),
                            Command::Shutdown => return task.goodbye(publisher).await,
                        }
                    }
                    task.reconcile().await;
                }
                Some(Command::Shutdown) | None => return task.goodbye(publisher).await,
            },
            input = input_rx.recv() => {
                let Some(input) = input else { return };
                // What is already here goes as one batch: messages of one
                // batch to a connection leave in one write, at the uncork.
                switchboard_runtime::cork();
                let mut more = Some(input);
                let mut handled = 0;
                while let Some(input) = more.take() {
                    task.handle(input).await;
                    handled += 1;
                    if handled < 1024 {
                        more = input_rx.try_recv().ok();
                    }
                }
                switchboard_runtime::uncork();
                task.reconcile().await;
            }
            _ = shared.refresh.notified() => {
                task.request_refresh();
            }
            _ = shared.claimed.notified() => {
                task.dirty = true;
                task.reconcile().await;
            }
            _ = tokio::time::sleep_until(wake) => {
                task.dirty = true;
                task.retry_connections();
                task.reconcile().await;
            }
        }
    }
}

impl Task {
    fn apply(&mut self, changes: Vec<switchboard_pubsub::ChannelChange>, ticket: u64) {
        self.wanted.apply(changes, self.config.unsubscribe_delay);
        self.ticket = self.ticket.max(ticket);
        self.dirty = true;
    }

    /// The next moment something is due: a channel's unsubscribe, a
    /// reconnection, a read of the map.
    fn next_wake(&self) -> Instant {
        // While a read is under way its answer wakes this task.
        let mut wake = if self.refreshing {
            Instant::now() + REFRESH_INTERVAL
        } else {
            self.refresh_at
        };
        if let Some(at) = self.wanted.next_deadline() {
            wake = wake.min(at);
        }
        for conn in self.conns.values() {
            if let Link::Waiting(at) = conn.link {
                wake = wake.min(at);
            }
        }
        wake
    }

    async fn handle(&mut self, input: Input) {
        if !matches!(
            input,
            Input::Reply {
                event: Event::Message { .. },
                ..
            }
        ) {
            self.dirty = true;
        }
        match input {
            Input::Map(map) => self.map_read(map),
            Input::Connected {
                addr,
                generation,
                writer,
            } => {
                let Some(conn) = self.conns.get_mut(&addr) else {
                    return;
                };
                if conn.generation != generation {
                    return;
                }
                match writer {
                    Some(writer) => {
                        conn.link = Link::Up(writer);
                        conn.backoff.reset();
                        self.set_node(&addr, true);
                    }
                    None => self.lost(&addr),
                }
            }
            Input::Closed { addr, generation } => {
                if self
                    .conns
                    .get(&addr)
                    .is_some_and(|c| c.generation == generation)
                {
                    self.lost(&addr);
                }
            }
            Input::Reply {
                addr,
                generation,
                event,
            } => {
                if self
                    .conns
                    .get(&addr)
                    .is_none_or(|c| c.generation != generation)
                {
                    return;
                }
                self.reply(&addr, event).await;
            }
        }
    }

    async fn reply(&mut self, addr: &Arc<str>, event: Event) {
        match event {
            Event::Message { channel, payload } => {
                let Ok(server) = self.inbound.server() else {
                    return;
                };
                if crate::nodes::is_node_channel(&self.config, &channel) {
                    // Operations on this node's connections, heartbeats.
                    crate::nodes::handle(&server, &self.shared.base, &payload);
                    return;
                }
                self.inbound.deliver(&server, &channel, &payload).await;
            }
            Event::Subscribed(channel) => {
                if self.own_event(addr, &channel, true) {
                    return;
                }
                let Some(name) = self.config.channel_of(&channel) else {
                    return;
                };
                let name = &*name;
                let Some((at, phase)) = self.placed.get_mut(name) else {
                    return;
                };
                if at == addr && *phase == Phase::Joining {
                    *phase = Phase::Joined;
                    // Subscribed again (a moved slot, a failover, a new
                    // connection): what the channel's history received
                    // meanwhile, before what comes live on this
                    // connection. A channel new here has nothing to catch.
                    if let Ok(server) = self.inbound.server() {
                        self.inbound.catch_up_channel(&server, name).await;
                    }
                }
            }
            Event::Unsubscribed(channel) => {
                // Our own SUNSUBSCRIBE removed the placement when it was
                // sent; a joined channel losing its subscription is Redis
                // moving its slot away.
                if self.own_event(addr, &channel, false) {
                    return;
                }
                let Some(name) = self.config.channel_of(&channel) else {
                    return;
                };
                let name = &*name;
                if self
                    .placed
                    .get(name)
                    .is_some_and(|(at, phase)| at == addr && *phase == Phase::Joined)
                {
                    self.placed.remove(name);
                    self.request_refresh();
                }
            }
            Event::Moved { slot, addr: to } => {
                // The SSUBSCRIBEs of that slot sent here did not take.
                let config = self.config.clone();
                self.placed.retain(|name, (at, phase)| {
                    !(at == addr
                        && *phase == Phase::Joining
                        && slot::slot(&config.redis_channel(name)) == slot)
                });
                self.unplace_own(|name, at, phase| {
                    at == &**addr && phase == Phase::Joining && slot::slot(name) == slot
                });
                self.map.moved(slot, &to);
                self.request_refresh();
            }
            Event::Error(_) => {
                // Refused (NOPERM, CLUSTERDOWN...): start this master's
                // connection again after a back-off, not in a loop.
                self.lost(addr);
            }
            Event::Other => {}
        }
    }

    /// Leave at shutdown: let the publisher send what it accepted, then
    /// unsubscribe everything, each step within `connect_timeout`.
    async fn goodbye(mut self, publisher: tokio::task::JoinHandle<()>) {
        self.shared
            .base
            .subscriber_up
            .store(false, Ordering::Release);
        confirm(&self.shared.base, u64::MAX);
        let _ = tokio::time::timeout(self.config.connect_timeout, publisher).await;
        let mut leave = PerSlot::default();
        for (name, (addr, _)) in self.placed.drain() {
            leave.add(addr, self.config.redis_channel(&name));
        }
        let timeout = self.config.connect_timeout;
        let _ = tokio::time::timeout(timeout, async {
            for addr in leave.masters() {
                let mut bytes = Vec::new();
                leave.write(&addr, "SUNSUBSCRIBE", &mut bytes);
                if let Some(Conn {
                    link: Link::Up(writer),
                    ..
                }) = self.conns.get_mut(&addr)
                {
                    let _ = writer.write_all(&bytes).await;
                    let _ = writer.flush().await;
                }
            }
        })
        .await;
    }
}
