//! Reading histories in a cluster: the read script (`crate::history`) at
//! the master of the channel's slot, on a command connection per master
//! kept for reads (a slow read never holds up a publish), following the
//! cluster as the publisher does: `-MOVED` (the slot moved: there, and the
//! map is read again), `-ASK` (mid-migration, the keys are gone already:
//! `ASKING` and there, once), `-TRYAGAIN` (mid-migration, keys split: a
//! moment later), `-NOSCRIPT` (a new master: load the script, again). A
//! read changes nothing but a missing epoch, so sending it again is safe.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionLike, MultiplexedConnection};
use switchboard_runtime::history::{HistoryPage, QueryError};
use switchboard_runtime::Position;

use super::redirect::Redirect;
use super::{command_connection, ClusterShared};
use crate::history::{self, Epochs, HistorySource, PageFuture};
use crate::{slot, BrokerConfig};

/// Steps of one read at most (a redirect, a reload, a retry each): a slot
/// moves once in a read; more means the masters disagree (mid-failover),
/// and the caller is told the history is unavailable.
const MAX_STEPS: usize = 6;
/// The wait before a read answered `TRYAGAIN` is sent again.
const TRY_AGAIN_DELAY: Duration = Duration::from_millis(10);

pub(crate) struct ClusterReader {
    shared: Arc<ClusterShared>,
    seed: redis::ConnectionInfo,
    config: Arc<BrokerConfig>,
    epochs: Arc<Epochs>,
    /// Per master (`host:port`), made on first need and dropped on failure.
    connections: tokio::sync::Mutex<HashMap<String, MultiplexedConnection>>,
}

impl ClusterReader {
    pub(crate) fn new(
        shared: Arc<ClusterShared>,
        seed: redis::ConnectionInfo,
        config: Arc<BrokerConfig>,
        epochs: Arc<Epochs>,
    ) -> Self {
        Self {
            shared,
            seed,
            config,
            epochs,
            connections: tokio::sync::Mutex::new(HashMap::new()),
        }
    }

    /// `channel`'s publications after `since` (the newest `limit` without
    /// it) and its position, from its slot's master.
    pub(crate) async fn read(
        &self,
        channel: &str,
        since: Option<Position>,
        limit: usize,
    ) -> Result<HistoryPage, QueryError> {
        let call = history::read_call(&self.config, &self.epochs, channel, since, limit);
        let slot = slot::slot(&self.config.history_keys(channel)[0]);
        let owner = self
            .shared
            .view
            .read()
            .map
            .owner_addr(slot)
            .map(str::to_owned);
        let mut addr = owner.ok_or(QueryError::Unavailable)?;
        let mut asking = false;
        // A connection that failed is replaced once: the master may have
        // restarted under it.
        let mut fresh = false;
        for _ in 0..MAX_STEPS {
            let Some(mut connection) = self.connection(&addr).await else {
                self.shared.refresh.notify_one();
                return Err(QueryError::Unavailable);
            };
            let mut pipe = redis::pipe();
            if asking {
                pipe.cmd("ASKING");
            }
            pipe.add_command(call.clone());
            let count = if asking { 2 } else { 1 };
            let answers = connection.req_packed_commands(&pipe, 0, count);
            let answer = match tokio::time::timeout(self.config.connect_timeout, answers).await {
                Ok(Ok(mut answers)) if answers.len() == count => answers.pop(),
                _ => None,
            };
            let Some(answer) = answer else {
                self.connections.lock().await.remove(&addr);
                if fresh {
                    self.shared.refresh.notify_one();
                    return Err(QueryError::Unavailable);
                }
                fresh = true;
                continue;
            };
            let redis::Value::ServerError(error) = answer else {
                return history::parse(answer, since, limit).ok_or(QueryError::Unavailable);
            };
            asking = false;
            match Redirect::of(&error) {
                Redirect::Moved { addr: to, .. } => {
                    addr = to;
                    self.shared.refresh.notify_one();
                }
                Redirect::Ask { addr: to } => {
                    addr = to;
                    asking = true;
                }
                Redirect::TryAgain => tokio::time::sleep(TRY_AGAIN_DELAY).await,
                Redirect::NoScript => {
                    if !history::load_read_script(&mut connection).await {
                        return Err(QueryError::Unavailable);
                    }
                }
                Redirect::Refused => return Err(QueryError::Unavailable),
            }
        }
        Err(QueryError::Unavailable)
    }

    async fn connection(&self, addr: &str) -> Option<MultiplexedConnection> {
        let mut connections = self.connections.lock().await;
        if let Some(connection) = connections.get(addr) {
            return Some(connection.clone());
        }
        let connection = command_connection(&self.seed, addr, &self.config).await?;
        // Masters that left the map are forgotten with the next new one.
        let masters = self.shared.view.read().map.nodes.clone();
        connections.retain(|known, _| masters.contains(known));
        connections.insert(addr.to_string(), connection.clone());
        Some(connection)
    }
}

impl HistorySource for ClusterReader {
    fn read_page<'a>(
        &'a self,
        channel: &'a str,
        since: Option<Position>,
        limit: usize,
    ) -> PageFuture<'a> {
        Box::pin(self.read(channel, since, limit))
    }
}
