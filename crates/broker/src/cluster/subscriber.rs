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

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::BytesMut;
use switchboard_runtime::Server;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::map::SlotMap;
use super::resp::{self, Event};
use super::{confirm, node_info, ClusterReader, ClusterShared, NodeState, View};
use crate::backoff::Backoff;
use crate::history::Source;
use crate::inbound::Inbound;
use crate::subscriber::{Wanted, CHUNK};
use crate::{slot, BrokerConfig, Command};

/// How often the map is read when all seems well: a change nobody
/// reported (a new master with no slot of ours yet) is seen within this.
const REFRESH_INTERVAL: Duration = Duration::from_secs(5);
/// The shortest time between two reads of the map: a cluster whose nodes
/// disagree (mid-failover) is not asked in a loop.
const MIN_REFRESH_GAP: Duration = Duration::from_millis(100);
/// How often the map is read while a master is unreachable or a channel
/// has no master: a failover is followed within about this.
const DEGRADED_REFRESH: Duration = Duration::from_millis(250);
/// Events from the reader tasks waiting for this task, at most: past it a
/// reader stops reading, and Redis holds the rest (its pub/sub output
/// buffer limit applies).
const EVENTS: usize = 4096;
/// Read buffer of a pub/sub connection; grows for a larger message.
const READ_BUFFER: usize = 64 * 1024;

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

enum Link {
    Connecting,
    Up(OwnedWriteHalf),
    /// Down; the next attempt at this time.
    Waiting(Instant),
}

struct Conn {
    link: Link,
    generation: u64,
    backoff: Backoff,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    /// `SSUBSCRIBE` sent, not confirmed.
    Joining,
    Joined,
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
    let inbound = Inbound::new(config.clone(), node, server, Source::Cluster(reader));
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

    fn request_refresh(&mut self) {
        self.refresh_at = self.refresh_at.min(self.last_refresh + MIN_REFRESH_GAP);
    }

    fn degraded(&self) -> bool {
        !self.map.complete() || self.conns.values().any(|c| !matches!(c.link, Link::Up(_)))
    }

    /// Read the map (in a helper task) if it is due.
    fn maybe_refresh(&mut self) {
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
            Input::Map(map) => {
                self.refreshing = false;
                if let Some(map) = map {
                    self.install(map);
                }
                if self.degraded() {
                    self.refresh_at = self.refresh_at.min(self.last_refresh + DEGRADED_REFRESH);
                }
            }
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
                self.inbound.deliver(&server, &channel, &payload).await;
            }
            Event::Subscribed(channel) => {
                let Some(name) = self.config.channel_of(&channel) else {
                    return;
                };
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
                let Some(name) = self.config.channel_of(&channel) else {
                    return;
                };
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

    /// A master's pub/sub connection is gone (or could not be made).
    fn lost(&mut self, addr: &Arc<str>) {
        if let Some(conn) = self.conns.get_mut(addr) {
            conn.link = Link::Waiting(Instant::now() + conn.backoff.next_delay());
            conn.generation = 0;
        }
        self.placed.retain(|_, (at, _)| at != addr);
        self.set_node(addr, false);
        self.request_refresh();
    }

    fn set_node(&self, addr: &str, up: bool) {
        let view = self.shared.view.read();
        if let Some(node) = view.nodes.iter().find(|n| &*n.addr == addr) {
            node.subscribed.store(up, Ordering::Release);
            node.epoch.fetch_add(1, Ordering::AcqRel);
        }
        drop(view);
        self.shared.view_changed.notify_one();
    }

    /// A new map: publish it, drop connections to nodes that are no longer
    /// masters, connect to new masters.
    fn install(&mut self, map: SlotMap) {
        if map == self.map && self.generation != 0 {
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

    /// Start connection attempts that are due.
    fn retry_connections(&mut self) {
        let now = Instant::now();
        for (addr, conn) in &mut self.conns {
            let Link::Waiting(at) = conn.link else {
                continue;
            };
            if at > now {
                continue;
            }
            self.next_generation += 1;
            conn.generation = self.next_generation;
            conn.link = Link::Connecting;
            let (addr, generation) = (addr.clone(), conn.generation);
            let (seed, timeout, inputs) = (
                self.seed.clone(),
                self.config.connect_timeout,
                self.inputs.clone(),
            );
            tokio::spawn(async move {
                let opened = match node_info(&seed, &addr) {
                    Some(info) => open(&info, timeout).await,
                    None => None,
                };
                let Some((writer, reader)) = opened else {
                    let _ = inputs
                        .send(Input::Connected {
                            addr,
                            generation,
                            writer: None,
                        })
                        .await;
                    return;
                };
                let sent = inputs
                    .send(Input::Connected {
                        addr: addr.clone(),
                        generation,
                        writer: Some(writer),
                    })
                    .await;
                if sent.is_ok() {
                    read(reader, addr, generation, inputs).await;
                }
            });
        }
    }

    /// Bring Redis in step with what is wanted and with the map.
    async fn reconcile(&mut self) {
        if !self.dirty {
            return;
        }
        self.dirty = false;
        let now = Instant::now();
        // Per master, per slot: channels to subscribe and to unsubscribe.
        let mut join: HashMap<Arc<str>, BTreeMap<u16, Vec<Vec<u8>>>> = HashMap::new();
        let mut leave: HashMap<Arc<str>, BTreeMap<u16, Vec<Vec<u8>>>> = HashMap::new();
        let config = self.config.clone();
        let placed = &mut self.placed;
        self.wanted.leaving.retain(|name, at| {
            if *at > now {
                return true;
            }
            if let Some((addr, _)) = placed.remove(name) {
                let channel = config.redis_channel(name);
                let slot = slot::slot(&channel);
                leave
                    .entry(addr)
                    .or_default()
                    .entry(slot)
                    .or_default()
                    .push(channel);
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
                leave
                    .entry(at)
                    .or_default()
                    .entry(slot)
                    .or_default()
                    .push(channel.clone());
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
            join.entry(addr)
                .or_default()
                .entry(slot)
                .or_default()
                .push(channel);
        }
        let mut failed = Vec::new();
        let addrs: Vec<Arc<str>> = join.keys().chain(leave.keys()).cloned().collect();
        for addr in addrs {
            let mut bytes = Vec::new();
            if let Some(slots) = join.remove(&addr) {
                write_commands(&mut bytes, "SSUBSCRIBE", slots);
            }
            if let Some(slots) = leave.remove(&addr) {
                write_commands(&mut bytes, "SUNSUBSCRIBE", slots);
            }
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

    /// Leave at shutdown: let the publisher send what it accepted, then
    /// unsubscribe everything, each step within `connect_timeout`.
    async fn goodbye(mut self, publisher: tokio::task::JoinHandle<()>) {
        self.shared
            .base
            .subscriber_up
            .store(false, Ordering::Release);
        confirm(&self.shared.base, u64::MAX);
        let _ = tokio::time::timeout(self.config.connect_timeout, publisher).await;
        let mut leave: HashMap<Arc<str>, BTreeMap<u16, Vec<Vec<u8>>>> = HashMap::new();
        for (name, (addr, _)) in self.placed.drain() {
            let channel = self.config.redis_channel(&name);
            let slot = slot::slot(&channel);
            leave
                .entry(addr)
                .or_default()
                .entry(slot)
                .or_default()
                .push(channel);
        }
        let timeout = self.config.connect_timeout;
        let _ = tokio::time::timeout(timeout, async {
            for (addr, slots) in leave {
                let mut bytes = Vec::new();
                write_commands(&mut bytes, "SUNSUBSCRIBE", slots);
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

/// Open a pub/sub connection (and authenticate, if the URL says so).
async fn open(
    info: &redis::ConnectionInfo,
    timeout: Duration,
) -> Option<(OwnedWriteHalf, OwnedReadHalf)> {
    let redis::ConnectionAddr::Tcp(host, port) = info.addr() else {
        return None;
    };
    let connect = async {
        let stream = TcpStream::connect((host.as_str(), *port)).await.ok()?;
        stream.set_nodelay(true).ok()?;
        let (mut reader, mut writer) = stream.into_split();
        let settings = info.redis_settings();
        if let Some(password) = settings.password() {
            let mut auth = Vec::new();
            match settings.username() {
                Some(user) => resp::command(&mut auth, &["AUTH", user, password]),
                None => resp::command(&mut auth, &["AUTH", password]),
            }
            writer.write_all(&auth).await.ok()?;
            let mut buf = BytesMut::with_capacity(256);
            loop {
                if let Some((reply, _)) = resp::parse(&buf).ok()? {
                    if !matches!(reply, resp::Reply::Simple(_)) {
                        return None;
                    }
                    break;
                }
                if reader.read_buf(&mut buf).await.ok()? == 0 {
                    return None;
                }
            }
        }
        Some((writer, reader))
    };
    tokio::time::timeout(timeout, connect).await.ok().flatten()
}

/// The reader task of one pub/sub connection: parse, hand over, and say
/// when it ends.
async fn read(
    mut reader: OwnedReadHalf,
    addr: Arc<str>,
    generation: u64,
    inputs: mpsc::Sender<Input>,
) {
    let mut buf = BytesMut::with_capacity(READ_BUFFER);
    'reading: loop {
        loop {
            match resp::parse(&buf) {
                Ok(Some((reply, used))) => {
                    let _ = buf.split_to(used);
                    let event = Event::of(reply);
                    let input = Input::Reply {
                        addr: addr.clone(),
                        generation,
                        event,
                    };
                    if inputs.send(input).await.is_err() {
                        return;
                    }
                }
                Ok(None) => break,
                Err(_) => break 'reading,
            }
        }
        if buf.capacity() - buf.len() < 4096 {
            buf.reserve(READ_BUFFER);
        }
        match reader.read_buf(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
    let _ = inputs.send(Input::Closed { addr, generation }).await;
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
