//! The queue of what this node's NATS subscriptions receive (channels
//! and node subjects alike): one forwarding task per subscription feeds
//! it, and the subscriber delivers from it in corked batches. Apart from
//! `subscriber.rs` so that the node subscriptions (`nodes.rs`) feed it
//! without reaching into the subscriber.

use bytes::Bytes;
use futures_util::StreamExt;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// Messages waiting between the forwarding tasks and the subscriber, at most:
/// past it a forwarder waits, its subscription's queue in the client fills
/// (64 Ki messages), and then the client drops what arrives for it (NATS
/// calls that a slow consumer).
const INBOUND: usize = 4096;

/// Where a message came from.
#[derive(Clone)]
pub(crate) enum Source {
    Channel(Arc<str>),
    /// A node subject (`subject::node_subject`, `subject::all_subject`).
    Nodes,
}

/// A message that came back, with where it came from.
pub(crate) type Arrival = (Source, Bytes);

/// The queue of arrivals, for `Setup::arrivals`.
pub(crate) fn arrivals() -> (mpsc::Sender<Arrival>, mpsc::Receiver<Arrival>) {
    mpsc::channel(INBOUND)
}

/// Move one subscription's messages, in order, to the shared queue, until
/// told to stop (then unsubscribe) or the client ends.
pub(crate) async fn forward(
    source: Source,
    mut subscriber: async_nats::Subscriber,
    mut stop: oneshot::Receiver<()>,
    arrivals: mpsc::Sender<Arrival>,
) {
    loop {
        tokio::select! {
            biased;
            _ = &mut stop => {
                let _ = subscriber.unsubscribe().await;
                return;
            }
            message = subscriber.next() => {
                let Some(message) = message else { return };
                if arrivals.send((source.clone(), message.payload)).await.is_err() {
                    return;
                }
            }
        }
    }
}
