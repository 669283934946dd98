//! Where the presence task's commands run (`presence.rs`): on standalone
//! servers, the query connection of the server a channel's name picks
//! (`Servers`, here); in a cluster, the master of the channel's slot
//! (`cluster::presence`). The task builds the script calls; a store only
//! carries them, so the task needs nothing of either engine.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use switchboard_runtime::history::QueryError;

use crate::history::Reader;

/// A store's answer in the making.
pub(crate) type Pending<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One presence write: a script call on `channel`'s keys.
pub(crate) struct Call {
    pub(crate) channel: Arc<str>,
    pub(crate) command: redis::Cmd,
}

pub(crate) trait Store: Send + Sync {
    /// Run `calls`, in their order per channel, each bounded by
    /// `connect_timeout`. A failed call is not retried: the next refresh
    /// writes every member again, and a lost leave expires with the TTL.
    fn write(&self, calls: Vec<Call>) -> Pending<'_, ()>;

    /// Run the read (sweep) of `channel` and return Redis's answer; one
    /// more try on a fresh connection if the first failed.
    fn read<'a>(&'a self, channel: &'a str, command: redis::Cmd) -> Pending<'a, Answer>;

    /// Whether a node's key exists (`nodes::node_name`); `None` when that
    /// cannot be told now.
    fn exists(&self, key: Vec<u8>) -> Pending<'_, Option<bool>>;
}

pub(crate) type Answer = Result<redis::Value, QueryError>;

/// Which standalone server's query connection carries a channel's presence.
pub(crate) type Route = Arc<dyn Fn(&str) -> Arc<Reader> + Send + Sync>;

/// Standalone servers: each channel's presence on the server its name
/// picks; the nodes' keys on the home server.
pub(crate) struct Servers {
    pub(crate) route: Route,
    pub(crate) home: Arc<Reader>,
    pub(crate) timeout: std::time::Duration,
}

impl Store for Servers {
    fn write(&self, calls: Vec<Call>) -> Pending<'_, ()> {
        Box::pin(async move {
            // One pipeline per server, in order.
            let mut by_server: Vec<(Arc<Reader>, redis::Pipeline)> = Vec::new();
            for call in calls {
                let reader = (self.route)(&call.channel);
                let index = match by_server.iter().position(|(r, _)| Arc::ptr_eq(r, &reader)) {
                    Some(index) => index,
                    None => {
                        by_server.push((reader, redis::pipe()));
                        by_server.len() - 1
                    }
                };
                by_server[index].1.add_command(call.command).ignore();
            }
            for (reader, pipe) in by_server {
                let Some(mut connection) = reader.connection().await else {
                    continue;
                };
                let sent = pipe.query_async::<()>(&mut connection);
                if !matches!(tokio::time::timeout(self.timeout, sent).await, Ok(Ok(()))) {
                    reader.lost().await;
                }
            }
        })
    }

    fn read<'a>(&'a self, channel: &'a str, command: redis::Cmd) -> Pending<'a, Answer> {
        Box::pin(async move {
            let reader = (self.route)(channel);
            let command = &command;
            reader
                .retried(
                    Some(self.timeout),
                    |_| true,
                    |mut connection| async move { command.query_async(&mut connection).await },
                )
                .await
        })
    }

    fn exists(&self, key: Vec<u8>) -> Pending<'_, Option<bool>> {
        Box::pin(async move {
            let mut connection = self.home.connection().await?;
            let mut exists = redis::cmd("EXISTS");
            exists.arg(key);
            let checked = exists.query_async::<i64>(&mut connection);
            match tokio::time::timeout(self.timeout, checked).await {
                Ok(Ok(count)) => Some(count > 0),
                _ => {
                    self.home.lost().await;
                    None
                }
            }
        })
    }
}
