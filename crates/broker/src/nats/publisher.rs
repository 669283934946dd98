//! Every publish of this node, in the order they were accepted, handed to
//! the NATS client (which writes them, in that order, on its one
//! connection).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::sync::mpsc;

use switchboard_runtime::stats::{self, Stats};

use crate::{BrokerConfig, Outgoing, Shared};

/// Publishes taken from the queue at once: their tickets are waited for
/// together.
const BATCH: usize = 256;

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
            tokio::select! {
                // What is queued goes before the close is heeded.
                biased;
                next = queue.recv() => match next {
                    Some(next) => batch.push(next),
                    None => closing = true,
                },
                _ = shared.close.notified() => closing = true,
            }
        }
        while batch.len() < BATCH {
            match queue.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        if batch.is_empty() {
            // Closing, and everything accepted is in the client's queue:
            // wait until it is written.
            let _ = tokio::time::timeout(config.connect_timeout, client.flush()).await;
            return;
        }
        // The SUBs of the subscriptions made before these publishes are in
        // the client's queue once their tickets are confirmed; the PUBs go
        // behind them on the same connection (see `nats/mod.rs`).
        let needed = batch.iter().map(|o| o.ticket).max().unwrap_or(0);
        shared.subscribed(needed).await;
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
