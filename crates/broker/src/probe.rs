//! Probes of a pub/sub connection (docs/scale-out.md, "Failure
//! handling"): a subscription can go silent while its connection looks
//! alive (a failover behind a proxy, a server that lost its subscriptions),
//! and nothing in the protocol says so. So each node subscribes, on each
//! pub/sub connection, to a channel of its own, and every `probe_interval`
//! publishes a token there through its query connection. A token that has
//! not come back by the next probe means the subscription is silent: the
//! connection is dropped, and the node reconnects, subscribes again and
//! fills its history channels' gaps, as after any lost connection.

use std::time::Duration;

use crate::history::Reader;
use crate::BrokerConfig;

/// The probe of one pub/sub connection.
pub(crate) struct Probe {
    /// The Redis channel: `<prefix>$probe:<node>`.
    channel: Vec<u8>,
    /// The token sent and not yet back.
    outstanding: Option<u64>,
    next: u64,
}

/// The subscription went silent: the connection must be made again.
pub(crate) struct Silent;

impl Probe {
    pub(crate) fn new(config: &BrokerConfig, node: u64) -> Self {
        Self {
            channel: config.redis_channel(&format!("$probe:{node:016x}")),
            outstanding: None,
            next: 1,
        }
    }

    pub(crate) fn channel(&self) -> &[u8] {
        &self.channel
    }

    /// How often to probe; `None` when probes are off.
    pub(crate) fn interval(config: &BrokerConfig) -> Option<Duration> {
        (!config.probe_interval.is_zero()).then_some(config.probe_interval)
    }

    /// A message on `redis_channel`: whether it was a probe (and taken).
    pub(crate) fn received(&mut self, redis_channel: &[u8], payload: &[u8]) -> bool {
        if redis_channel != self.channel.as_slice() {
            return false;
        }
        if std::str::from_utf8(payload)
            .ok()
            .and_then(|t| t.parse().ok())
            == self.outstanding
        {
            self.outstanding = None;
        }
        true
    }

    /// The connection was made again: nothing is outstanding on it.
    pub(crate) fn reset(&mut self) {
        self.outstanding = None;
    }

    /// Time to probe: `Silent` if the last token never came back, else
    /// send the next one. A token that cannot be sent (the query connection
    /// is down) proves nothing about the subscription and is not counted.
    pub(crate) async fn tick(&mut self, reader: &Reader, timeout: Duration) -> Result<(), Silent> {
        if self.outstanding.is_some() {
            return Err(Silent);
        }
        let Some(mut connection) = reader.connection().await else {
            return Ok(());
        };
        let token = self.next;
        self.next += 1;
        let mut publish = redis::cmd("PUBLISH");
        publish.arg(&self.channel).arg(token.to_string());
        match tokio::time::timeout(timeout, publish.query_async::<i64>(&mut connection)).await {
            Ok(Ok(_)) => self.outstanding = Some(token),
            _ => reader.lost().await,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_back_clears_the_probe_and_others_are_not_probes() {
        let config = BrokerConfig::new("redis://x");
        let mut probe = Probe::new(&config, 0xab);
        assert_eq!(probe.channel(), b"switchboard:$probe:00000000000000ab");
        probe.outstanding = Some(7);
        assert!(!probe.received(b"switchboard:room", b"7"));
        assert_eq!(probe.outstanding, Some(7));
        // An old token (from before a reconnect) leaves the new one waiting.
        assert!(probe.received(probe.channel.clone().as_slice(), b"6"));
        assert_eq!(probe.outstanding, Some(7));
        assert!(probe.received(probe.channel.clone().as_slice(), b"7"));
        assert_eq!(probe.outstanding, None);
    }
}
