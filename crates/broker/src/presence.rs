//! Presence in Redis (docs/scale-out.md, "Presence"): who is in a channel,
//! on every node.
//!
//! A presence channel has two keys, hash-tagged with the channel like its
//! history: a hash `<prefix>{<channel>}:presence` (member id → the info
//! its app gave it, JSON text) and a sorted set
//! `<prefix>{<channel>}:presence-expiry` (member id → when it expires, in
//! Redis's milliseconds). Each node writes only its own members: it joins
//! them as the registry logs them, refreshes them all every third of
//! `presence_ttl`, and removes them when they leave. A node that stops
//! (crash, SIGKILL, partition) stops refreshing: its members expire, and
//! the next node to look (a read, or its own refresh of the channel)
//! removes them. Joins and leaves, including those of expired members, are
//! published as JSON on the channel `$presence:<channel>`, from inside the
//! scripts (`presence_scripts`), so every node's subscribers of that
//! channel see each exactly once. Where the scripts run is the store's
//! business (`presence_store`): a standalone server, or in a cluster the
//! channel's slot's master (the events channel shares that slot).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use switchboard_pubsub::MemberChange;
use switchboard_runtime::history::{QueryError, Reply};
use switchboard_runtime::presence::{Member, Presence};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::nodes::Nodes;
use crate::presence_scripts::{self, Scripts};
use crate::presence_store::{Call, Store};
use crate::{wire, BrokerConfig};

/// The channel that carries a presence channel's joins and leaves.
pub const EVENTS_PREFIX: &str = "$presence:";

/// The info of a member whose app gave none.
const NO_INFO: &[u8] = b"null";

/// Info set for an id that is in no presence channel is kept this long
/// (the app usually sets it just before subscribing), then dropped, so ids
/// that never join cannot grow the map.
const UNJOINED_INFO_KEPT: Duration = Duration::from_secs(60);

/// What the presence task is told.
pub(crate) enum PresenceCommand {
    Members(Vec<MemberChange>),
    Read(Read),
    Info(u64, Vec<u8>),
    Shutdown,
}

/// A presence read, answered in turn with this node's writes.
pub(crate) struct Read {
    pub(crate) channel: String,
    pub(crate) reply: Reply<Presence>,
    /// Resolves once this node's subscriptions made before the read are
    /// in effect in Redis.
    pub(crate) subscribed: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>,
}

/// Joins and leaves of this node's members, written to Redis in order.
pub(crate) struct Task {
    config: Arc<BrokerConfig>,
    store: Box<dyn Store>,
    scripts: &'static Scripts,
    head: Vec<u8>,
    /// This node's members, per presence channel.
    local: HashMap<Arc<str>, HashSet<u64>>,
    /// Presence channels whose events channel has subscribers here: this
    /// node sweeps them too, so their expired members' leaves reach those
    /// subscribers even when no member is left on any live node.
    watched: HashMap<Arc<str>, usize>,
    /// Per member id: its info, how many presence channels it is in, and
    /// when the info was set.
    infos: HashMap<u64, (Vec<u8>, usize, Instant)>,
    /// The nodes' view (`nodes.rs`), when the topology has nodes: members
    /// of a node that goes from the view (and whose key is gone, as the
    /// store tells) are evicted without waiting for their expiry.
    nodes: Option<Arc<Nodes>>,
    /// The live nodes at the last look.
    live: HashSet<u16>,
}

impl Task {
    pub(crate) fn new(
        config: Arc<BrokerConfig>,
        store: Box<dyn Store>,
        node: u64,
        nodes: Option<Arc<Nodes>>,
    ) -> Self {
        Self {
            nodes,
            live: HashSet::new(),
            scripts: presence_scripts::scripts(config.braced()),
            config,
            store,
            head: wire::head(node, false, None, false),
            local: HashMap::new(),
            watched: HashMap::new(),
            infos: HashMap::new(),
        }
    }

    pub(crate) async fn run(mut self, mut commands: mpsc::UnboundedReceiver<PresenceCommand>) {
        let every = self.config.presence_ttl / 3;
        let mut refresh = tokio::time::interval_at(Instant::now() + every, every);
        refresh.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // Look at the nodes as often as they heartbeat.
        let look = (self.config.node_ttl / 3).max(Duration::from_millis(100));
        let mut nodes = tokio::time::interval_at(Instant::now() + look, look);
        nodes.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // A command taken while batching joins and leaves, handled next.
        let mut held: Option<PresenceCommand> = None;
        loop {
            let command = match held.take() {
                Some(command) => Some(command),
                None => tokio::select! {
                    command = commands.recv() => command,
                    _ = refresh.tick() => {
                        self.refresh().await;
                        continue;
                    }
                    _ = nodes.tick(), if self.nodes.is_some() => {
                        self.evict_gone().await;
                        continue;
                    }
                },
            };
            match command {
                Some(PresenceCommand::Members(changes)) => {
                    let mut batch = changes;
                    // Every join and leave already queued: one round of writes.
                    loop {
                        match commands.try_recv() {
                            Ok(PresenceCommand::Members(more)) => batch.extend(more),
                            Ok(other) => {
                                held = Some(other);
                                break;
                            }
                            Err(_) => break,
                        }
                    }
                    self.apply(batch).await;
                }
                Some(PresenceCommand::Info(id, info)) => self.set_info(id, info).await,
                Some(PresenceCommand::Read(read)) => self.read(read).await,
                Some(PresenceCommand::Shutdown) | None => return self.goodbye().await,
            }
        }
    }

    /// Answer a read in turn with this node's writes: everything this
    /// node's members did before it is in Redis first, and so is this
    /// node's subscription to the channels subscribed before it (its events
    /// too), so events after the read reach this node.
    async fn read(&self, read: Read) {
        let Read {
            channel,
            reply,
            subscribed,
        } = read;
        if tokio::time::timeout(self.config.connect_timeout, subscribed)
            .await
            .is_err()
        {
            return reply(Err(QueryError::Unavailable));
        }
        reply(self.read_members(&channel).await);
    }

    async fn apply(&mut self, changes: Vec<MemberChange>) {
        let mut writes = Vec::with_capacity(changes.len());
        for change in changes {
            if let Some(channel) = change.channel.strip_prefix(EVENTS_PREFIX) {
                let channel: Arc<str> = Arc::from(channel);
                let count = self.watched.entry(channel.clone()).or_default();
                match change.joined {
                    true => *count += 1,
                    false => *count = count.saturating_sub(1),
                }
                if *count == 0 {
                    self.watched.remove(&channel);
                }
                continue;
            }
            let members = self.local.entry(change.channel.clone()).or_default();
            if change.joined {
                if members.insert(change.subscriber) {
                    self.counted(change.subscriber, 1);
                    writes.push(Write::Join(change.channel, change.subscriber));
                }
            } else if members.remove(&change.subscriber) {
                if members.is_empty() {
                    self.local.remove(&change.channel);
                }
                self.counted(change.subscriber, -1);
                writes.push(Write::Leave(change.channel, change.subscriber));
            }
        }
        self.write(writes).await;
    }

    /// Keep a member's count of presence channels; its info goes with its
    /// last one.
    fn counted(&mut self, id: u64, delta: isize) {
        let entry = self
            .infos
            .entry(id)
            .or_insert_with(|| (NO_INFO.to_vec(), 0, Instant::now()));
        entry.1 = entry.1.saturating_add_signed(delta);
        if entry.1 == 0 && delta < 0 {
            self.infos.remove(&id);
        }
    }

    async fn set_info(&mut self, id: u64, info: Vec<u8>) {
        let count = self.infos.get(&id).map_or(0, |e| e.1);
        self.infos.insert(id, (info, count, Instant::now()));
        // Members already in channels show the new info from now on.
        let writes: Vec<Write> = self
            .local
            .iter()
            .filter(|(_, members)| members.contains(&id))
            .map(|(channel, _)| Write::Join(channel.clone(), id))
            .collect();
        self.write(writes).await;
    }

    /// Every member again, with a new expiry, and the channels swept of
    /// other nodes' expired members.
    async fn refresh(&mut self) {
        let now = Instant::now();
        self.infos
            .retain(|_, (_, count, at)| *count > 0 || now.duration_since(*at) < UNJOINED_INFO_KEPT);
        let mut writes = Vec::new();
        for (channel, members) in &self.local {
            writes.push(Write::Sweep(channel.clone()));
            writes.extend(members.iter().map(|&id| Write::Join(channel.clone(), id)));
        }
        let watched_only = self.watched.keys().filter(|c| !self.local.contains_key(*c));
        writes.extend(watched_only.map(|channel| Write::Sweep(channel.clone())));
        self.write(writes).await;
    }

    /// Evict the members of nodes gone from the view since the last look,
    /// in the channels this node has members in or watches.
    async fn evict_gone(&mut self) {
        let Some(nodes) = &self.nodes else {
            return;
        };
        let view = nodes.view(self.config.node_ttl);
        let live: HashSet<u16> = view.live.iter().copied().collect();
        let mut gone: Vec<u16> = self.live.difference(&live).copied().collect();
        gone.retain(|&n| n != view.node);
        self.live = live;
        if gone.is_empty() {
            return;
        }
        // Not hearing a node may be this node's own trouble (its pub/sub
        // connection is down): a node is gone only once its key is gone
        // too, which takes Redis a `node_ttl` without its heartbeat (or
        // its goodbye). A key that cannot be checked evicts nobody now
        // (and is checked again next time).
        let mut still = Vec::with_capacity(gone.len());
        for &n in &gone {
            let key = crate::nodes::node_name(&self.config, n);
            if self.store.exists(key).await != Some(false) {
                still.push(n);
            }
        }
        gone.retain(|n| !still.contains(n));
        // Looked at again next time, as still missing from the view.
        for n in still {
            self.live.insert(n);
        }
        if gone.is_empty() {
            return;
        }
        let channels: HashSet<Arc<str>> = self
            .local
            .keys()
            .chain(self.watched.keys())
            .cloned()
            .collect();
        let writes = channels
            .into_iter()
            .map(|channel| Write::Evict(channel, gone.clone()))
            .collect();
        self.write(writes).await;
    }

    /// Leave every channel at shutdown, so the others see the leaves now
    /// rather than after the TTL.
    async fn goodbye(mut self) {
        let writes = std::mem::take(&mut self.local)
            .into_iter()
            .flat_map(|(channel, members)| {
                members
                    .into_iter()
                    .map(move |id| Write::Leave(channel.clone(), id))
            })
            .collect();
        let _ = tokio::time::timeout(self.config.connect_timeout, self.write(writes)).await;
    }

    /// Run `writes` (in order per channel) through the store. A failed
    /// write is not retried: the next refresh writes every member again,
    /// and a lost leave expires with the TTL.
    async fn write(&self, writes: Vec<Write>) {
        if writes.is_empty() {
            return;
        }
        let calls = writes.iter().map(|write| self.call(write)).collect();
        self.store.write(calls).await;
    }

    /// The script call of a write: `EVALSHA` on the channel's two keys,
    /// with its events channel and the message head first.
    fn call(&self, write: &Write) -> Call {
        let channel = write.channel();
        let script = match write {
            Write::Join(..) => &self.scripts.join,
            Write::Leave(..) => &self.scripts.leave,
            Write::Sweep(_) => &self.scripts.sweep,
            Write::Evict(..) => &self.scripts.evict,
        };
        let mut command = self.script_call(script, channel);
        match write {
            Write::Join(_, id) => {
                let info = self.infos.get(id).map_or(NO_INFO, |e| e.0.as_slice());
                let ttl = self.config.presence_ttl.as_millis().max(1) as u64;
                command.arg(*id).arg(info).arg(ttl);
            }
            Write::Leave(_, id) => {
                command.arg(*id);
            }
            Write::Sweep(_) => {}
            Write::Evict(_, gone) => {
                for node in gone {
                    command.arg(*node);
                }
            }
        }
        Call {
            channel: channel.clone(),
            command,
        }
    }

    /// `EVALSHA <script> 2 <hash> <expiry> <events channel> <head>`, for
    /// the arguments of the write to follow.
    fn script_call(&self, script: &redis::Script, channel: &str) -> redis::Cmd {
        let [hash, expiry] = self.config.presence_keys(channel);
        let events = self.config.redis_channel(&events_channel(channel));
        let mut command = redis::cmd("EVALSHA");
        command.arg(script.get_hash()).arg(2).arg(hash).arg(expiry);
        command.arg(events).arg(&self.head);
        command
    }

    /// Who is in `channel`: its expired members swept first (their leaves
    /// published), then the rest read, in one atomic script.
    async fn read_members(&self, channel: &str) -> Result<Presence, QueryError> {
        let command = self.script_call(&self.scripts.sweep, channel);
        let answer = self.store.read(channel, command).await?;
        let pairs: Vec<(String, Vec<u8>)> =
            redis::from_redis_value(answer).map_err(|_| QueryError::Unavailable)?;
        let mut members: Vec<Member> = pairs
            .into_iter()
            .filter_map(|(id, info)| {
                Some(Member {
                    id: id.parse().ok()?,
                    info,
                })
            })
            .collect();
        members.sort_by_key(|m| m.id);
        Ok(Presence { members })
    }
}

/// One Redis write of the presence task.
enum Write {
    Join(Arc<str>, u64),
    Leave(Arc<str>, u64),
    Sweep(Arc<str>),
    /// Remove the members of these (gone) nodes.
    Evict(Arc<str>, Vec<u16>),
}

impl Write {
    fn channel(&self) -> &Arc<str> {
        match self {
            Write::Join(c, _) | Write::Leave(c, _) | Write::Sweep(c) | Write::Evict(c, _) => c,
        }
    }
}

/// The channel that carries `channel`'s joins and leaves.
pub fn events_channel(channel: &str) -> String {
    format!("{EVENTS_PREFIX}{channel}")
}
