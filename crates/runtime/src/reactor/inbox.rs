//! How other threads reach an I/O thread: a queue of [`Command`]s and a
//! waker that interrupts its `epoll_wait`. A burst of commands costs one
//! wake-up: only a push onto an empty queue, while the thread sleeps, writes
//! the eventfd.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::config::Protocol;
use crate::events::Transport;
use crate::state::UpgradeDecision;
use crate::stream::Stream;

/// What other threads ask of an I/O thread.
pub(crate) enum Command {
    /// Serve a connection another thread accepted.
    Adopt(Adopted),
    /// Start accepting on a listener.
    Listen(Box<super::accept::Listening>),
    /// A connection's outbound queue has items (or an eviction) for it.
    Wake { key: usize, generation: u32 },
    /// JavaScript's `upgrade` hook decided for a connection waiting on it.
    UpgradeDecided {
        key: usize,
        generation: u32,
        decision: UpgradeDecision,
    },
    /// Worker `worker` drained its event queue: connections that stopped
    /// reading for it may go on.
    Room { worker: usize },
    /// Graceful shutdown: stop accepting, close or drain every connection.
    Shutdown,
    /// The drain timeout passed: end every connection now.
    Force,
}

/// An accepted socket, handed to the I/O thread that will serve it.
pub(crate) struct Adopted {
    pub stream: Stream,
    pub remote: String,
    pub protocol: Protocol,
    pub transport: Transport,
}

pub(crate) struct Inbox {
    commands: Mutex<Vec<Command>>,
    /// Set while the thread is (about to be) blocked in `epoll_wait`: only
    /// then does a push need the waker.
    sleeping: AtomicBool,
    waker: mio::Waker,
}

impl Inbox {
    pub(crate) fn new(waker: mio::Waker) -> Arc<Self> {
        Arc::new(Self {
            commands: Mutex::new(Vec::new()),
            sleeping: AtomicBool::new(false),
            waker,
        })
    }

    pub(crate) fn push(&self, command: Command) {
        let first = {
            let mut commands = self.commands.lock();
            commands.push(command);
            commands.len() == 1
        };
        // SeqCst on both sides (here and in `prepare_to_sleep`): either the
        // thread sees this command before it sleeps, or this push sees it
        // sleeping and wakes it.
        if first && self.sleeping.load(Ordering::SeqCst) {
            // Fails only if the eventfd is gone, i.e. the thread ended.
            let _ = self.waker.wake();
        }
    }

    /// Take every queued command.
    pub(crate) fn take(&self, into: &mut Vec<Command>) {
        let mut commands = self.commands.lock();
        if into.is_empty() {
            std::mem::swap(into, &mut *commands);
        } else {
            into.append(&mut commands);
        }
    }

    /// The thread is about to block: from now on pushes wake it. Returns
    /// false (and stays awake) when commands already wait.
    pub(crate) fn prepare_to_sleep(&self) -> bool {
        self.sleeping.store(true, Ordering::SeqCst);
        if self.commands.lock().is_empty() {
            return true;
        }
        self.sleeping.store(false, Ordering::SeqCst);
        false
    }

    pub(crate) fn woke(&self) {
        self.sleeping.store(false, Ordering::SeqCst);
    }
}
