//! The two queues from the callers to an engine's tasks (a standalone
//! Redis server's, a cluster's, NATS's): publishes, bounded, and registry
//! changes, unbounded. Every engine queues the same way; what differs is
//! only what it checks before.

use std::sync::atomic::Ordering;

use switchboard_pubsub::ChannelChange;
use switchboard_runtime::BridgeError;
use tokio::sync::mpsc;

use crate::{Append, BrokerConfig, Command, Outgoing, Shared};

/// The callers' ends.
pub(crate) struct Queues {
    publishes: mpsc::Sender<Outgoing>,
    commands: mpsc::UnboundedSender<Command>,
}

/// The tasks' ends.
pub(crate) struct Receivers {
    pub(crate) publishes: mpsc::Receiver<Outgoing>,
    pub(crate) commands: mpsc::UnboundedReceiver<Command>,
}

impl Queues {
    pub(crate) fn new(config: &BrokerConfig) -> (Self, Receivers) {
        let (publishes, publish_rx) = mpsc::channel(config.max_pending_publishes.max(1));
        // Unbounded on purpose: a registry change cannot be refused (it is
        // reported under the registry's lock, which must not wait), and the
        // task coalesces them; there is at most one entry per change.
        let (commands, command_rx) = mpsc::unbounded_channel();
        let receivers = Receivers {
            publishes: publish_rx,
            commands: command_rx,
        };
        (
            Self {
                publishes,
                commands,
            },
            receivers,
        )
    }

    /// The publish queue, for what must keep its order with the publishes
    /// (`nodes::forward`).
    pub(crate) fn publishes(&self) -> &mpsc::Sender<Outgoing> {
        &self.publishes
    }

    /// Queue a publish with the ticket of this moment; refused at once
    /// when `shared` is not available, or the queue is full.
    pub(crate) fn publish(
        &self,
        shared: &Shared,
        channel: Vec<u8>,
        message: Vec<u8>,
        history: Option<Box<Append>>,
    ) -> Result<(), BridgeError> {
        if !shared.available() {
            return Err(BridgeError::Unavailable);
        }
        let outgoing = Outgoing {
            channel,
            message,
            history,
            ticket: shared.requested.load(Ordering::Acquire),
        };
        self.publishes.try_send(outgoing).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => BridgeError::Backlog,
            mpsc::error::TrySendError::Closed(_) => BridgeError::Unavailable,
        })
    }

    /// Registry changes, in order, with the ticket that covers them: a new
    /// one when some channel got its first local subscriber
    /// (`Shared::requested`).
    pub(crate) fn channels_changed(&self, shared: &Shared, changes: Vec<ChannelChange>) {
        let joined = changes
            .iter()
            .any(|c| matches!(c, ChannelChange::Created(_)));
        let ticket = if joined {
            shared.requested.fetch_add(1, Ordering::AcqRel) + 1
        } else {
            shared.requested.load(Ordering::Acquire)
        };
        // A closed receiver means the broker stopped: nothing to mirror.
        let _ = self.commands.send(Command::Changes(changes, ticket));
    }

    /// Begin the goodbye: refuse new publishes, let the publisher send
    /// what it accepted, and the subscriber unsubscribe.
    pub(crate) fn shutdown(&self, shared: &Shared) {
        shared.closing.store(true, Ordering::Release);
        shared.close.notify_one();
        let _ = self.commands.send(Command::Shutdown);
    }
}

/// At most this many publishes go in one batch: their tickets are waited
/// for together, and one pipeline amortises the round trip while a
/// failure loses little.
const BATCH: usize = 256;

/// Wait for the next publish (added to `batch`) or the close; whether the
/// goodbye began (`close()`, or the broker was dropped). What is queued
/// goes before the close is heeded.
pub(crate) async fn next(
    batch: &mut Vec<Outgoing>,
    queue: &mut mpsc::Receiver<Outgoing>,
    shared: &Shared,
) -> bool {
    tokio::select! {
        biased;
        next = queue.recv() => match next {
            Some(next) => {
                batch.push(next);
                false
            }
            None => true,
        },
        _ = shared.close.notified() => true,
    }
}

/// Add to `batch` what is queued already, up to `BATCH`, without waiting.
pub(crate) fn top_up(batch: &mut Vec<Outgoing>, queue: &mut mpsc::Receiver<Outgoing>) {
    while batch.len() < BATCH {
        match queue.try_recv() {
            Ok(next) => batch.push(next),
            Err(_) => break,
        }
    }
}

/// The subscription ticket a batch waits for: its newest publish's.
pub(crate) fn ticket(batch: &[Outgoing]) -> u64 {
    batch.iter().map(|o| o.ticket).max().unwrap_or(0)
}
