//! Every publish of this node, in the order they were accepted, handed to
//! the NATS client (which writes them, in that order, on its one
//! connection).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::sync::mpsc;

use switchboard_runtime::stats::{self, Stats};

use crate::queues;
use crate::{BrokerConfig, Outgoing, Shared};

pub(crate) async fn run(
    client: async_nats::Client,
    config: Arc<BrokerConfig>,
    shared: Arc<Shared>,
    stats: Arc<Stats>,
    mut queue: mpsc::Receiver<Outgoing>,
) {
    let mut batch: Vec<Outgoing> = Vec::new();
    // Set at `close()`: send what was accepted, then end.
    let mut closing = false;
    loop {
        if !closing {
            closing = queues::next(&mut batch, &mut queue, &shared).await;
        }
        queues::top_up(&mut batch, &mut queue);
        if batch.is_empty() {
            // Closing, and everything accepted is in the client's queue:
            // wait until it is written.
            let _ = tokio::time::timeout(config.connect_timeout, client.flush()).await;
            return;
        }
        // The SUBs of the subscriptions made before these publishes are in
        // the client's queue once their tickets are confirmed; the PUBs go
        // behind them on the same connection (see `nats/mod.rs`).
        shared.subscribed(queues::ticket(&batch)).await;
        for outgoing in batch.drain(..) {
            // Subjects are ASCII (`subject::subject`).
            let subject = String::from_utf8(outgoing.channel).unwrap_or_default();
            // Queued in the client: while it reconnects, it waits there and
            // goes out on the new connection. Refused only when the client
            // is gone or the message exceeds the server's `max_payload`.
            let queued = client.publish(subject, outgoing.message.into()).await;
            if queued.is_err() {
                stats::add(&stats.broker_publishes_lost, 1);
            }
        }
        if shared.closing.load(Ordering::Acquire) {
            closing = true;
        }
    }
}
