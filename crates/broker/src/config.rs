//! The broker's options: every limit named, with its default and reason.

use std::time::Duration;

use crate::topology::Topology;

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
}

impl BrokerConfig {
    /// The defaults above for one standalone Redis at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        Self::with_topology(Topology::Sharded(vec![url.into()]))
    }

    /// The defaults above for the given servers.
    pub fn with_topology(topology: Topology) -> Self {
        Self {
            topology,
            prefix: "switchboard:".into(),
            unsubscribe_delay: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(2),
            max_reconnect_delay: Duration::from_secs(2),
            max_pending_publishes: 65_536,
        }
    }

    fn braced(&self) -> bool {
        matches!(self.topology, Topology::Cluster(_))
    }

    /// The Redis channel that carries `channel`: `<prefix><channel>`, or
    /// in a cluster `<prefix>{<channel>}`, so the channel's slot is the
    /// slot of its name alone (a hash tag), the slot its history keys
    /// (`<prefix>{<channel>}:...`) will share. A name that holds a `}`
    /// ends the tag early; every node computes the same slot from the same
    /// name, so that changes which slot, not whether nodes agree.
    pub(crate) fn redis_channel(&self, channel: &str) -> Vec<u8> {
        let mut name = Vec::with_capacity(self.prefix.len() + channel.len() + 2);
        name.extend_from_slice(self.prefix.as_bytes());
        if self.braced() {
            name.push(b'{');
        }
        name.extend_from_slice(channel.as_bytes());
        if self.braced() {
            name.push(b'}');
        }
        name
    }

    /// The channel a Redis channel carries, if it is one of ours.
    pub(crate) fn channel_of<'a>(&self, redis_channel: &'a [u8]) -> Option<&'a str> {
        let mut name = redis_channel.strip_prefix(self.prefix.as_bytes())?;
        if self.braced() {
            name = name.strip_prefix(b"{")?.strip_suffix(b"}")?;
        }
        std::str::from_utf8(name).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_names_in_redis() {
        let mut config = BrokerConfig::new("redis://x");
        assert_eq!(config.redis_channel("room"), b"switchboard:room");
        assert_eq!(config.channel_of(b"switchboard:room"), Some("room"));
        assert_eq!(config.channel_of(b"other:room"), None);
        config.topology = Topology::Cluster(vec!["redis://x".into()]);
        assert_eq!(config.redis_channel("room"), b"switchboard:{room}");
        assert_eq!(config.channel_of(b"switchboard:{room}"), Some("room"));
        assert_eq!(config.channel_of(b"switchboard:{a}b}"), Some("a}b"));
        assert_eq!(config.channel_of(b"switchboard:room"), None);
        assert_eq!(
            crate::slot::slot(&config.redis_channel("room")),
            crate::slot::slot(b"room")
        );
    }
}
