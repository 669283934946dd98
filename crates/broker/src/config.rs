//! The broker's options: every limit named, with its default and reason.

use std::time::Duration;

/// How a server reaches Redis and how it uses it.
#[derive(Clone, Debug)]
pub struct BrokerConfig {
    /// `redis://[user:password@]host:port[/db]`.
    pub url: String,
    /// Put in front of every channel's name in Redis, so several
    /// applications (or test runs) can share one Redis. Default
    /// `switchboard:`.
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
    /// How long this node's number stays claimed in Redis without a
    /// heartbeat (sent every third of it), and how long the other nodes
    /// count it live after its last heartbeat. Default 10 s: three
    /// heartbeats may be lost (a Redis failover, a long pause) before the
    /// number is free again, and a node that died is known dead, and its
    /// number reusable, within that.
    pub node_ttl: Duration,
}

impl BrokerConfig {
    /// The defaults above for Redis at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            prefix: "switchboard:".into(),
            unsubscribe_delay: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(2),
            max_reconnect_delay: Duration::from_secs(2),
            max_pending_publishes: 65_536,
            node_ttl: Duration::from_secs(10),
        }
    }

    /// The Redis channel that carries `channel`.
    pub(crate) fn redis_channel(&self, channel: &str) -> Vec<u8> {
        let mut name = Vec::with_capacity(self.prefix.len() + channel.len());
        name.extend_from_slice(self.prefix.as_bytes());
        name.extend_from_slice(channel.as_bytes());
        name
    }

    /// The channel a Redis channel carries, if it is one of ours.
    pub(crate) fn channel_of<'a>(&self, redis_channel: &'a [u8]) -> Option<&'a str> {
        let name = redis_channel.strip_prefix(self.prefix.as_bytes())?;
        std::str::from_utf8(name).ok()
    }
}
