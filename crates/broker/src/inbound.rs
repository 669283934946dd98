//! Messages from Redis on their way to the native fan-out, each channel
//! with history kept in offset order (docs/scale-out.md, "Gaps between
//! Redis and a server"). Shared by the standalone subscriber
//! (`crate::subscriber`) and the cluster's (`crate::cluster`): both hand
//! over each message with its Redis channel, and say when a channel's
//! subscription was made again so it is caught up.

use std::sync::{Arc, Weak};

use switchboard_runtime::{Position, Server};

use crate::history::Source;
use crate::positions::{Admit, Positions};
use crate::{wire, BrokerConfig};

/// The server went away: the subscriber's task ends.
pub(crate) struct Gone;

/// Publications read from a history at a time when filling a gap.
const FILL_PAGE: usize = 500;

pub(crate) struct Inbound {
    config: Arc<BrokerConfig>,
    node: u64,
    server: Weak<Server>,
    /// Reads histories, to fill gaps.
    source: Source,
    /// The last offset delivered per history channel.
    pub(crate) positions: Positions,
}

impl Inbound {
    pub(crate) fn new(
        config: Arc<BrokerConfig>,
        node: u64,
        server: Weak<Server>,
        source: Source,
    ) -> Self {
        Self {
            config,
            node,
            server,
            source,
            positions: Positions::default(),
        }
    }

    pub(crate) fn server(&self) -> Result<Arc<Server>, Gone> {
        self.server.upgrade().ok_or(Gone)
    }

    /// Deliver what arrived on `redis_channel`: one message, or a batch of
    /// a history channel's publications (`wire.rs`). A gap in a channel's
    /// offsets is filled from its history first (rare: after a lost
    /// connection, a moved slot, a dropped message), which holds the
    /// caller up for one read. The caller corks around a batch.
    pub(crate) async fn deliver(&mut self, server: &Server, redis_channel: &[u8], payload: &[u8]) {
        let Some(channel) = self.config.channel_of(redis_channel) else {
            return;
        };
        let channel = &*channel;
        let Some(messages) = wire::messages(payload) else {
            return;
        };
        for message in messages {
            if let Some(position) = message.position {
                match self.positions.admit(channel, position) {
                    Admit::Deliver => {}
                    Admit::Duplicate => continue,
                    Admit::Gap { since } => {
                        let missing = (position.offset - since.offset - 1) as usize;
                        self.fill(server, channel, since, missing).await;
                    }
                }
                self.positions.delivered(channel, position);
            }
            // The excluded connection is one of the origin's.
            let exclude = message.exclude.filter(|_| message.origin == self.node);
            let (data, binary) = (message.payload, message.binary);
            server.deliver(channel, data, binary, exclude, message.position);
        }
    }

    /// Deliver, in order, up to `count` publications of `channel` after
    /// `since` from its history, a page at a time (a long absence must not
    /// make one reply of megabytes, nor one read outlast its timeout). If
    /// the history cannot be read the rest are skipped: live traffic goes
    /// on, and clients still see the gap in the offsets (and can recover
    /// themselves).
    async fn fill(&mut self, server: &Server, channel: &str, since: Position, count: usize) {
        let mut since = since;
        let mut left = count;
        while left > 0 {
            let want = left.min(FILL_PAGE);
            let Ok(page) = self.source.read_page(channel, Some(since), want).await else {
                return;
            };
            if page.top.epoch != since.epoch {
                return;
            }
            let read = page.publications.len();
            for publication in page.publications {
                let position = Position {
                    epoch: since.epoch,
                    offset: publication.offset,
                };
                since = position;
                if self.positions.admit(channel, position) != Admit::Deliver {
                    continue;
                }
                self.positions.delivered(channel, position);
                let data = &publication.data;
                server.deliver(channel, data, publication.binary, None, Some(position));
            }
            // The end of what is kept, or of what was asked.
            if read < want || since.offset >= page.top.offset {
                return;
            }
            left -= read;
        }
    }

    /// After (re)subscribing every channel: deliver what each history
    /// channel received while this node was not listening.
    pub(crate) async fn catch_up(&mut self) -> Result<(), Gone> {
        let server = self.server()?;
        for (channel, _) in self.positions.all() {
            switchboard_runtime::cork();
            self.catch_up_channel(&server, &channel).await;
            switchboard_runtime::uncork();
        }
        Ok(())
    }

    /// After `channel`'s subscription was made again (its slot moved, its
    /// master failed over, a connection was remade): deliver what it
    /// received meanwhile, if this node has delivered on it before. So a
    /// channel that stays quiet afterwards is complete too.
    pub(crate) async fn catch_up_channel(&mut self, server: &Server, channel: &str) {
        let Some(rule) = self.config.history_of(channel) else {
            return;
        };
        let Some(since) = self.positions.last(channel) else {
            return;
        };
        let size = rule.size;
        self.fill(server, channel, since, size).await;
    }
}
