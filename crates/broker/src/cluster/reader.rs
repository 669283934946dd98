//! Queries in a cluster: history reads (the read script of
//! `crate::history`) and session commands (`crate::sessions`), each at the
//! master of its key's slot, on a command connection per master kept for
//! them (a slow read never holds up a publish), following the cluster as
//! the publisher does: `-MOVED` (the slot moved: there, and the map is
//! read again), `-ASK` (mid-migration, the key is gone already: `ASKING`
//! and there, once), `-TRYAGAIN` (mid-migration, keys split: a moment
//! later), `-NOSCRIPT` (a new master: load the scripts, again). Each of
//! these answers means the command did not run, so sending it again runs
//! it once; a connection that failed mid-command gets one more try on a
//! fresh connection, which is safe only for what may run twice (a read
//! changes nothing but a missing epoch; a session command is idempotent).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

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
    /// The address of `slot`'s master in the current map.
    fn master_of(&self, slot: u16) -> Option<String> {
        self.shared
            .view
            .read()
            .map
            .owner_addr(slot)
            .map(str::to_owned)
    }

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
        let answer = self.query(slot, &call, &[history::READ], None).await?;
        history::parse(answer, since, limit).ok_or(QueryError::Unavailable)
    }

    /// Run `call` at the master of `slot`, following the cluster, and
    /// return its answer (an error answer other than a redirect is
    /// `Unavailable`). `scripts` are loaded where Redis answers
    /// `-NOSCRIPT`. Each step waits `connect_timeout` at most, or with a
    /// `deadline` the whole query ends by then.
    pub(crate) async fn query(
        &self,
        slot: u16,
        call: &redis::Cmd,
        scripts: &[&str],
        deadline: Option<Instant>,
    ) -> Result<redis::Value, QueryError> {
        let step = |now: Instant| match deadline {
            Some(deadline) => deadline.saturating_duration_since(now),
            None => self.config.connect_timeout,
        };
        let owner = self.master_of(slot);
        let mut addr = owner.ok_or(QueryError::Unavailable)?;
        let mut asking = false;
        // A connection that failed is replaced once: the master may have
        // restarted under it.
        let mut fresh = false;
        for _ in 0..MAX_STEPS {
            let connection = tokio::time::timeout(step(Instant::now()), self.connection(&addr));
            let Ok(Some(mut connection)) = connection.await else {
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
            let answer = match tokio::time::timeout(step(Instant::now()), answers).await {
                Ok(Ok(mut answers)) if answers.len() == count => answers.pop(),
                _ => None,
            };
            let Some(answer) = answer else {
                // It may be stuck mid-reply (or the master gone): a fresh
                // one next time.
                self.connections.lock().await.remove(&addr);
                if fresh || deadline.is_some_and(|d| Instant::now() >= d) {
                    self.shared.refresh.notify_one();
                    return Err(QueryError::Unavailable);
                }
                fresh = true;
                continue;
            };
            let redis::Value::ServerError(error) = answer else {
                return Ok(answer);
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
                    for script in scripts {
                        let mut load = redis::cmd("SCRIPT");
                        load.arg("LOAD").arg(*script);
                        if load.query_async::<String>(&mut connection).await.is_err() {
                            return Err(QueryError::Unavailable);
                        }
                    }
                }
                Redirect::Refused => return Err(QueryError::Unavailable),
            }
        }
        Err(QueryError::Unavailable)
    }

    /// Run `calls`, all of `slot`, at its master as one pipeline (a
    /// refresh of a channel's members is one round trip, not one per
    /// member). From the first one answered with a redirect (which did
    /// not run, and neither did those after it: a slot moves, a script
    /// cache empties, at one moment), they go again one by one through
    /// `query`, in order. If the pipeline itself failed they all do:
    /// only for calls that may run twice. The answers are dropped, for
    /// writes whose failure the caller leaves to its next round.
    pub(crate) async fn write_all(
        &self,
        slot: u16,
        calls: &[redis::Cmd],
        scripts: &[&str],
        deadline: Instant,
    ) {
        let mut first_failed = 0;
        let owner = self.master_of(slot);
        if let Some(addr) = owner {
            let left = deadline.saturating_duration_since(Instant::now());
            if let Ok(Some(mut connection)) =
                tokio::time::timeout(left, self.connection(&addr)).await
            {
                let mut pipe = redis::pipe();
                for call in calls {
                    pipe.add_command(call.clone());
                }
                let sent = connection.req_packed_commands(&pipe, 0, calls.len());
                let left = deadline.saturating_duration_since(Instant::now());
                match tokio::time::timeout(left, sent).await {
                    Ok(Ok(answers)) if answers.len() == calls.len() => {
                        first_failed = answers
                            .iter()
                            .position(|answer| match answer {
                                redis::Value::ServerError(error) => {
                                    Redirect::of(error) != Redirect::Refused
                                }
                                _ => false,
                            })
                            .unwrap_or(calls.len());
                    }
                    _ => {
                        self.connections.lock().await.remove(&addr);
                    }
                }
            }
        }
        for call in &calls[first_failed..] {
            let _ = self.query(slot, call, scripts, Some(deadline)).await;
        }
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
