//! The command connection: every publish of this node, in the order they
//! were accepted, as pipelined `PUBLISH`es (or, for a channel with
//! history, calls of the script that appends and publishes).
//!
//! Order: one task, one connection, one queue; Redis runs a connection's
//! commands in order, so one node's publishes to a channel keep their order,
//! and Redis's single command stream orders every node's.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::sync::mpsc;

use switchboard_runtime::stats::{self, Stats};

use crate::backoff::Backoff;
use crate::history::{self, Publish};
use crate::queues;
use crate::{BrokerConfig, Outgoing, Shared};

pub(crate) async fn run(
    client: redis::Client,
    config: Arc<BrokerConfig>,
    shared: Arc<Shared>,
    stats: Arc<Stats>,
    mut queue: mpsc::Receiver<Outgoing>,
) {
    let mut backoff = Backoff::new(config.max_reconnect_delay);
    // A batch taken from the queue and not yet sent: it waits for the next
    // connection rather than being lost.
    let mut batch: Vec<Outgoing> = Vec::new();
    // Set at `close()`: send what was accepted, then end.
    let mut closing = false;
    loop {
        let epoch = shared.epoch.load(Ordering::Acquire);
        let connect = async {
            let mut connection = client.get_multiplexed_async_connection().await.ok()?;
            history::load_publish_script(&mut connection, &config)
                .await
                .then_some(connection)
        };
        let mut connection = match tokio::time::timeout(config.connect_timeout, connect).await {
            Ok(Some(connection)) => connection,
            _ => {
                shared.publisher_up.store(false, Ordering::Release);
                tokio::time::sleep(backoff.next_delay()).await;
                continue;
            }
        };
        shared.publisher_up.store(true, Ordering::Release);
        backoff.reset();
        loop {
            if batch.is_empty() {
                if !closing {
                    closing = queues::next(&mut batch, &mut queue, &shared).await;
                }
                queues::top_up(&mut batch, &mut queue);
                if batch.is_empty() {
                    // Closing, and everything accepted was sent.
                    return;
                }
            }
            // Wait until the subscriptions made before these publishes are
            // confirmed (`Shared::requested`).
            shared.subscribed(queues::ticket(&batch)).await;
            if shared.epoch.load(Ordering::Acquire) != epoch {
                // The pub/sub connection was lost or remade since this one
                // was opened: Redis may have restarted, and a command
                // connection learns that only by failing a command. Open a
                // fresh one before sending, so the batch is not lost.
                break;
            }
            let mut pipe = redis::pipe();
            let mut next = 0;
            while next < batch.len() {
                if batch[next].history.is_none() {
                    history::publish(&mut pipe, &batch[next], &config, Publish::Classic);
                    next += 1;
                } else {
                    // A run of publishes to one history channel: one call.
                    let end = history::run_end(&batch, next);
                    let run: Vec<&Outgoing> = batch[next..end].iter().collect();
                    history::append(&mut pipe, &run, &config, Publish::Classic);
                    next = end;
                }
                pipe.ignore();
            }
            let sent = pipe.query_async::<()>(&mut connection).await;
            if sent.is_err() {
                // Whether Redis ran some of them is unknown: resending could
                // deliver twice, so they are counted as lost
                // (`brokerPublishesLost` in the server's stats).
                stats::add(&stats.broker_publishes_lost, batch.len() as u64);
                batch.clear();
                shared.publisher_up.store(false, Ordering::Release);
                break;
            }
            batch.clear();
        }
    }
}
