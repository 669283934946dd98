//! The questions the runtime asks the broker that wait on Redis: who is
//! in a channel (`presence`), a channel's history, and a recovery. Each
//! answers through a reply callback from the broker's thread, so no
//! caller's thread waits.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use switchboard_runtime::history::{HistoryPage, QueryError, Recovery, Reply};
use switchboard_runtime::presence::Presence;
use switchboard_runtime::Position;

use crate::history::Source;
use crate::presence::{self, PresenceCommand};
use crate::{Broker, Engine, HistoryRule, Shared};

impl Broker {
    /// Who is in `channel`, as this node's subscriptions of this moment
    /// see it (`Bridge::presence`).
    pub(crate) fn read_presence(&self, channel: &str, reply: Reply<Presence>) {
        let Some(presence) = &self.presence else {
            return reply(Err(QueryError::NoPresence));
        };
        if !self.config.presence_of(channel) {
            return reply(Err(QueryError::NoPresence));
        }
        // This node's subscriptions of this moment (the caller's own, just
        // made, included) are in effect before the read.
        let (shared, events) = match &self.engine {
            Engine::Sharded { shards, route, .. } => (
                shards[route.pick(channel)].shared.clone(),
                shards[route.pick(&presence::events_channel(channel))]
                    .shared
                    .clone(),
            ),
            // One set of tickets for every master.
            Engine::Cluster(cluster) => {
                let shared = cluster.shared().base.clone();
                (shared.clone(), shared)
            }
            Engine::Nats(_) => return reply(Err(QueryError::NoPresence)),
        };
        let (ticket, events_ticket) = (
            shared.requested.load(Ordering::Acquire),
            events.requested.load(Ordering::Acquire),
        );
        let subscribed = Box::pin(async move {
            shared.subscribed(ticket).await;
            events.subscribed(events_ticket).await;
        });
        let read = presence::Read {
            channel: channel.to_owned(),
            reply,
            subscribed,
        };
        if let Err(refused) = presence.commands.send(PresenceCommand::Read(read)) {
            if let PresenceCommand::Read(read) = refused.0 {
                (read.reply)(Err(QueryError::Unavailable));
            }
        }
    }

    /// `channel`'s history (`Bridge::history`).
    pub(crate) fn read_history(
        &self,
        channel: &str,
        since: Option<Position>,
        limit: usize,
        reply: Reply<HistoryPage>,
    ) {
        let Some((reader, _, _)) = self.history_source(channel) else {
            return reply(Err(QueryError::NoHistory));
        };
        let channel = channel.to_owned();
        self.runtime.spawn(async move {
            reply(reader.read_page(&channel, since, limit).await);
        });
    }

    /// Replay to `subscriber` what it missed (`Bridge::recover`).
    pub(crate) fn replay(
        &self,
        subscriber: u64,
        channel: &str,
        since: Option<Position>,
        limit: usize,
        reply: Reply<Recovery>,
    ) {
        let Some((reader, shared, rule)) = self.history_source(channel) else {
            return reply(Err(QueryError::NoHistory));
        };
        // The subscription the caller just made is covered by the ticket
        // of this moment: once Redis confirmed it, whatever the history
        // read misses reaches the subscriber live.
        let ticket = shared.requested.load(Ordering::Acquire);
        let limit = limit.min(rule.size);
        let server = self.server.clone();
        let (channel, timeout) = (channel.to_owned(), self.config.connect_timeout);
        self.runtime.spawn(async move {
            if tokio::time::timeout(timeout, shared.subscribed(ticket))
                .await
                .is_err()
            {
                return reply(Err(QueryError::Unavailable));
            }
            let Some(since) = since else {
                // Nothing to recover: the answer is the position to come
                // back with.
                let page = reader.read_page(&channel, None, 1).await;
                return reply(page.map(|page| Recovery {
                    top: page.top,
                    recovered: true,
                    delivered: 0,
                }));
            };
            let page = match reader.read_page(&channel, Some(since), limit).await {
                Ok(page) => page,
                Err(error) => return reply(Err(error)),
            };
            let reached = page.publications.last().map_or(since.offset, |p| p.offset);
            let recovered = page.continuous && reached >= page.top.offset;
            let mut delivered = 0;
            // Only a whole recovery is delivered: a client that could not
            // recover reloads its state, and older pieces would only
            // mislead it.
            if let (true, Some(server)) = (recovered, server.upgrade()) {
                switchboard_runtime::cork();
                for publication in &page.publications {
                    let position = Position {
                        epoch: page.top.epoch,
                        offset: publication.offset,
                    };
                    let data = &publication.data;
                    if server.deliver_to(subscriber, &channel, data, publication.binary, position) {
                        delivered += 1;
                    }
                }
                switchboard_runtime::uncork();
            }
            reply(Ok(Recovery {
                top: page.top,
                recovered,
                delivered,
            }))
        });
    }

    /// Where `channel`'s history is read, the subscription tickets a
    /// recovery waits for, and its rule; none when the channel keeps no
    /// history.
    fn history_source(&self, channel: &str) -> Option<(Source, Arc<Shared>, &HistoryRule)> {
        let rule = self.config.history_of(channel)?;
        match &self.engine {
            Engine::Sharded { shards, route, .. } => {
                let shard = &shards[route.pick(channel)];
                let source: Source = shard.reader.clone();
                Some((source, shard.shared.clone(), rule))
            }
            Engine::Cluster(cluster) => {
                let source: Source = cluster.reader.clone();
                Some((source, cluster.shared().base.clone(), rule))
            }
            Engine::Nats(_) => None,
        }
    }
}
