//! The broker's options: every limit named, with its default and reason.

use std::borrow::Cow;
use std::time::Duration;

use crate::topology::Topology;

/// In a cluster, the end of a presence events channel's Redis name
/// (`ClusterNames`).
const EVENTS_MARK: &str = "$presence";

/// How a server reaches Redis and how it uses it.
#[derive(Clone, Debug)]
pub struct BrokerConfig {
    /// The Redis servers: one or more standalone servers
    /// (`redis://[user:password@]host:port[/db]` each), or a cluster's
    /// seeds (`crate::topology`).
    pub topology: Topology,
    /// Put in front of every channel's name in Redis, so several
    /// applications (or test runs) can share one Redis. Default
    /// `switchboard:`. In a cluster the channel's name follows in braces,
    /// `<prefix>{<channel>}` (`redis_channel`).
    pub prefix: String,
    /// How long a channel whose last local subscriber left stays
    /// subscribed in Redis. Default 1 s: a page reload or a client's
    /// reconnect subscribes again within that, and costs no
    /// UNSUBSCRIBE/SUBSCRIBE pair on the broker.
    pub unsubscribe_delay: Duration,
    /// How long one connection attempt (and the goodbye at shutdown) may
    /// take. Default 2 s: Redis answers in microseconds when it is there.
    pub connect_timeout: Duration,
    /// The longest wait between reconnection attempts; the wait starts at
    /// 50 ms and doubles. Default 2 s: a restarted Redis is found again
    /// within about that, without hammering one that is down.
    pub max_reconnect_delay: Duration,
    /// Publishes accepted and not yet written to Redis, at most; past it a
    /// publish fails with `ERR_BROKER_BACKLOG`. Default 65,536 (the queue
    /// holds the encoded messages: 64 Ki messages of 1 KiB are 64 MiB).
    pub max_pending_publishes: usize,
    /// Which channels keep a history, first match wins (empty: none).
    pub history: Vec<HistoryRule>,
    /// How long a channel's epoch and offset outlive its last publication.
    /// Default 7 days: far longer than any history, so a client coming
    /// back after its history expired learns that exactly (same epoch,
    /// offsets trimmed) instead of seeing a new epoch.
    pub history_meta_ttl: Duration,
    /// Channels (names or `*` patterns) whose members are kept in Redis
    /// for presence (empty: none).
    pub presence: Vec<String>,
    /// How long a member outlives its node's last refresh (nodes refresh
    /// every third of it). Default 30 s: a crashed node's members are gone
    /// within that; a live node refreshes its members every 10 s.
    pub presence_ttl: Duration,
    /// How often each pub/sub connection to a standalone Redis is probed
    /// end to end (`probe.rs`); zero turns probes off. Default 5 s: a
    /// silent subscription is found within 10 s, for one tiny PUBLISH per
    /// connection every 5 s.
    pub probe_interval: Duration,
    /// How long this node's number stays claimed in Redis without a
    /// heartbeat (sent every third of it), and how long the other nodes
    /// count it live after its last heartbeat. Default 10 s: three
    /// heartbeats may be lost (a Redis failover, a long pause) before the
    /// number is free again, and a node that died is known dead, and its
    /// number reusable, within that.
    pub node_ttl: Duration,
}

/// History for the channels whose name matches `pattern`.
#[derive(Clone, Debug)]
pub struct HistoryRule {
    /// A channel name, or a pattern with `*` standing for any run of
    /// characters (`chat.*`, `*`).
    pub pattern: String,
    /// The publications kept, at most.
    pub size: usize,
    /// How long the history outlives its last publication.
    pub ttl: Duration,
}

impl BrokerConfig {
    /// The defaults above for one standalone Redis at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        Self::with_topology(Topology::Sharded(vec![url.into()]))
    }

    /// The defaults above for the given servers.
    pub fn with_topology(topology: Topology) -> Self {
        // NATS separates a subject's tokens with `.`: `switchboard.` makes
        // the prefix a token of its own (`switchboard.>` in permissions).
        let prefix = match topology {
            Topology::Nats(_) => "switchboard.",
            _ => "switchboard:",
        };
        Self {
            topology,
            prefix: prefix.into(),
            unsubscribe_delay: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(2),
            max_reconnect_delay: Duration::from_secs(2),
            max_pending_publishes: 65_536,
            history: Vec::new(),
            history_meta_ttl: Duration::from_secs(7 * 24 * 3600),
            presence: Vec::new(),
            presence_ttl: Duration::from_secs(30),
            probe_interval: Duration::from_secs(5),
            node_ttl: Duration::from_secs(10),
        }
    }

    /// The history rule of `channel`, if it keeps one.
    pub(crate) fn history_of(&self, channel: &str) -> Option<&HistoryRule> {
        self.history
            .iter()
            .find(|r| glob_matches(&r.pattern, channel))
    }

    /// Whether `channel` keeps presence. A presence events channel never
    /// does (its subscribers would have events of their own, and so on).
    pub(crate) fn presence_of(&self, channel: &str) -> bool {
        !channel.starts_with(crate::presence::EVENTS_PREFIX)
            && self.presence.iter().any(|p| glob_matches(p, channel))
    }

    /// Whether the registry logs `channel`'s joins and leaves: a presence
    /// channel's (its members), or its events channel's (the servers
    /// watching it sweep it).
    pub(crate) fn presence_logged(&self, channel: &str) -> bool {
        match channel.strip_prefix(crate::presence::EVENTS_PREFIX) {
            Some(watched) => self.presence_of(watched),
            None => self.presence_of(channel),
        }
    }

    /// The keys of `channel`'s presence: members' infos and expiries.
    pub(crate) fn presence_keys(&self, channel: &str) -> [Vec<u8>; 2] {
        self.tagged_keys(channel, ":presence", ":presence-expiry")
    }

    /// The keys of `channel`'s history: its stream and its meta hash
    /// (epoch and last offset). Both carry the hash tag `{<channel>}`, so a
    /// cluster keeps them in one slot and one script can touch both.
    pub(crate) fn history_keys(&self, channel: &str) -> [Vec<u8>; 2] {
        self.tagged_keys(channel, ":history", ":meta")
    }

    /// `<prefix>{<channel>}<suffix>` for two suffixes: keys of one slot
    /// (in a cluster, `<prefix>{<tag>}<mark><suffix>`, `cluster_tag`).
    fn tagged_keys(&self, channel: &str, first: &str, second: &str) -> [Vec<u8>; 2] {
        let (tag, mark) = match self.braced() {
            true => cluster_tag(channel),
            false => (channel, ""),
        };
        let key = |suffix: &str| {
            let mut key = Vec::with_capacity(self.prefix.len() + channel.len() + 24);
            key.extend_from_slice(self.prefix.as_bytes());
            key.push(b'{');
            key.extend_from_slice(tag.as_bytes());
            key.push(b'}');
            key.extend_from_slice(mark.as_bytes());
            key.extend_from_slice(suffix.as_bytes());
            key
        };
        [key(first), key(second)]
    }

    /// A cluster: channels (and the nodes' names) carry a hash tag.
    pub(crate) fn braced(&self) -> bool {
        matches!(self.topology, Topology::Cluster(_))
    }

    /// The Redis channel that carries `channel`: `<prefix><channel>`, or
    /// in a cluster `<prefix>{<channel>}`, so the channel's slot is the
    /// slot of its name alone (a hash tag), the slot its history keys
    /// (`<prefix>{<channel>}:...`) will share. A name that holds a `}`
    /// ends the tag early; every node computes the same slot from the same
    /// name, so that changes which slot, not whether nodes agree.
    ///
    /// In a cluster a presence events channel, `$presence:<c>`, is
    /// `<prefix>{<c>}$presence`: in the slot of `c`, whose presence
    /// scripts publish on it (a script touches one slot).
    pub(crate) fn redis_channel(&self, channel: &str) -> Vec<u8> {
        let mut name = Vec::with_capacity(self.prefix.len() + channel.len() + 2);
        name.extend_from_slice(self.prefix.as_bytes());
        if self.braced() {
            let (tag, mark) = cluster_tag(channel);
            name.push(b'{');
            name.extend_from_slice(tag.as_bytes());
            name.push(b'}');
            name.extend_from_slice(mark.as_bytes());
        } else {
            name.extend_from_slice(channel.as_bytes());
        }
        name
    }

    /// The channel a Redis channel carries, if it is one of ours. (In a
    /// cluster a user channel's name ends with `}` and an events
    /// channel's with `}$presence`: neither is taken for the other.)
    pub(crate) fn channel_of<'a>(&self, redis_channel: &'a [u8]) -> Option<Cow<'a, str>> {
        let name = redis_channel.strip_prefix(self.prefix.as_bytes())?;
        if !self.braced() {
            return std::str::from_utf8(name).ok().map(Cow::Borrowed);
        }
        let name = name.strip_prefix(b"{")?;
        if let Some(channel) = name.strip_suffix(b"}") {
            return std::str::from_utf8(channel).ok().map(Cow::Borrowed);
        }
        let watched = name
            .strip_suffix(EVENTS_MARK.as_bytes())?
            .strip_suffix(b"}")?;
        let watched = std::str::from_utf8(watched).ok()?;
        Some(Cow::Owned(crate::presence::events_channel(watched)))
    }
}

/// A channel's hash tag in a cluster and what follows the tag in its
/// names: the channel itself, or for a presence events channel
/// `$presence:<c>` the watched channel `c` and a mark, so the events
/// share `c`'s slot.
fn cluster_tag(channel: &str) -> (&str, &'static str) {
    match channel.strip_prefix(crate::presence::EVENTS_PREFIX) {
        Some(watched) => (watched, EVENTS_MARK),
        None => (channel, ""),
    }
}

/// Whether `name` matches `pattern`, where `*` stands for any run of
/// characters (none included) and everything else for itself.
pub(crate) fn glob_matches(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    // No `*`: the whole name.
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let mut parts: Vec<&str> = parts.collect();
    let Some(last) = parts.pop() else {
        return rest.is_empty();
    };
    for middle in parts {
        match rest.find(middle) {
            Some(at) => rest = &rest[at + middle.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_matches("chat", "chat"));
        assert!(!glob_matches("chat", "chats"));
        assert!(glob_matches("*", ""));
        assert!(glob_matches("*", "anything"));
        assert!(glob_matches("chat.*", "chat.lobby"));
        assert!(glob_matches("chat.*", "chat."));
        assert!(!glob_matches("chat.*", "chat"));
        assert!(glob_matches("*.prices", "eu.prices"));
        assert!(!glob_matches("*.prices", "eu.prices.x"));
        assert!(glob_matches("a*b*c", "abc"));
        assert!(glob_matches("a*b*c", "a-b-b-c"));
        assert!(!glob_matches("a*b*c", "a-c-b"));
        // The suffix may not reuse what the prefix took.
        assert!(!glob_matches("ab*ba", "aba"));
    }

    #[test]
    fn history_keys_share_a_hash_tag() {
        let config = BrokerConfig::new("redis://x");
        let [stream, meta] = config.history_keys("room");
        assert_eq!(stream, b"switchboard:{room}:history");
        assert_eq!(meta, b"switchboard:{room}:meta");
    }

    #[test]
    fn channel_names_in_redis() {
        let mut config = BrokerConfig::new("redis://x");
        assert_eq!(config.redis_channel("room"), b"switchboard:room");
        assert_eq!(
            config.channel_of(b"switchboard:room").as_deref(),
            Some("room")
        );
        assert_eq!(config.channel_of(b"other:room"), None);
        assert_eq!(
            config.redis_channel("$presence:a"),
            b"switchboard:$presence:a"
        );
        config.topology = Topology::Cluster(vec!["redis://x".into()]);
        assert_eq!(config.redis_channel("room"), b"switchboard:{room}");
        let of = |name: &[u8]| config.channel_of(name).map(|c| c.into_owned());
        assert_eq!(of(b"switchboard:{room}").as_deref(), Some("room"));
        assert_eq!(of(b"switchboard:{a}b}").as_deref(), Some("a}b"));
        assert_eq!(of(b"switchboard:room"), None);
        // A presence events channel lives in its channel's slot, beside
        // the channel's presence keys; no channel's name is taken for it.
        let events = config.redis_channel("$presence:room");
        assert_eq!(events, b"switchboard:{room}$presence");
        assert_eq!(of(&events).as_deref(), Some("$presence:room"));
        assert_eq!(crate::slot::slot(&events), crate::slot::slot(b"room"));
        let [hash, _] = config.presence_keys("room");
        assert_eq!(crate::slot::slot(&hash), crate::slot::slot(&events));
        for channel in ["room}$presence", "$presence:", "$presence:a}b", "x}", "{"] {
            let name = config.redis_channel(channel);
            assert_eq!(
                of(&name).as_deref(),
                Some(channel),
                "{channel:?} round trip"
            );
        }
        assert_ne!(config.redis_channel("room}$presence"), events);
        assert_eq!(of(b"switchboard:{room}$presenc"), None);
        assert_eq!(
            crate::slot::slot(&config.redis_channel("room")),
            crate::slot::slot(b"room")
        );
    }
}
