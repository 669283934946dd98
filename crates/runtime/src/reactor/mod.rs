//! The I/O threads: each runs one readiness loop (`epoll` through mio) over
//! a slab of connection entries. An idle connection is its entry and
//! nothing else: no task, no future, no timer object, no buffer (see
//! `ARCHITECTURE.md` for the measurements behind this choice).
//!
//! One turn of the loop: run the commands other threads sent (a connection
//! to adopt, a queue that stopped being empty, an upgrade decided, room in a
//! worker's queue, shutdown), fire the deadlines that passed, service the
//! connections that asked for another read, wake the workers that were
//! given events during the turn (once per turn, however many events), then
//! wait for readiness, a command or the next deadline.

pub(crate) mod accept;
mod entry;
pub(crate) mod inbox;
mod scheduling;
mod timers;

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mio::{Events, Poll, Token};
use slab::Slab;

use crate::config::IoScheduling;
use crate::outbound::OutItem;
use crate::state::ServerState;
use crate::wake::IoWaker;
use accept::{Accepted, Listening};
use entry::{Context, Entry, Next};
use inbox::{Adopted, Command, Inbox};
use timers::Timers;

/// The waker's token; connection and listener tokens never reach it.
const WAKER: Token = Token(usize::MAX);
/// Set in the tokens (and timer keys) of listeners.
const LISTENER: usize = 1 << 62;
/// Generations live in bits 32..61 of a connection's token.
const GENERATION_MASK: u32 = (1 << 29) - 1;

/// Size of the per-thread read buffer: large enough for many small frames
/// per syscall, small enough that one read cannot flood a worker queue.
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// Events taken from one `epoll_wait`.
const EVENTS_PER_POLL: usize = 1024;

fn connection_token(key: usize, generation: u32) -> Token {
    Token(((generation as usize) << 32) | key)
}

impl IoWaker for Inbox {
    fn connection(&self, key: usize, generation: u32) {
        self.push(Command::Wake { key, generation });
    }

    fn room(&self, worker: usize) {
        self.push(Command::Room { worker });
    }
}

/// The I/O threads of one server, and how to reach them.
pub(crate) struct IoThreads {
    inboxes: Arc<[Arc<Inbox>]>,
    threads: Vec<JoinHandle<()>>,
    /// Each thread sends its index here when it ends.
    finished: mpsc::Receiver<usize>,
    next_listener: AtomicUsize,
}

impl IoThreads {
    pub(crate) fn start(
        server: &Arc<ServerState>,
        count: usize,
        scheduling: IoScheduling,
    ) -> io::Result<Self> {
        let mut polls = Vec::with_capacity(count);
        let mut inboxes = Vec::with_capacity(count);
        for _ in 0..count.max(1) {
            let poll = Poll::new()?;
            let waker = mio::Waker::new(poll.registry(), WAKER)?;
            inboxes.push(Inbox::new(waker));
            polls.push(poll);
        }
        let inboxes: Arc<[Arc<Inbox>]> = inboxes.into();
        let (finished_tx, finished) = mpsc::channel();
        let mut threads = Vec::with_capacity(polls.len());
        for (index, poll) in polls.into_iter().enumerate() {
            let reactor = Reactor {
                index,
                poll,
                entries: Slab::new(),
                listeners: Slab::new(),
                timers: Timers::default(),
                inbox: inboxes[index].clone(),
                waker: inboxes[index].clone(),
                peers: inboxes.clone(),
                next_peer: index,
                server: server.clone(),
                next_generation: 0,
                read_buffer: vec![0; READ_BUFFER_BYTES],
                items: VecDeque::new(),
                again: Vec::new(),
                paused: Vec::new(),
                stopping: false,
            };
            let finished = finished_tx.clone();
            let thread = std::thread::Builder::new()
                .name(format!("switchboard-io-{index}"))
                .spawn(move || {
                    scheduling::apply(scheduling);
                    crate::http::metrics::set_io_thread(index);
                    reactor.run();
                    let _ = finished.send(index);
                })?;
            threads.push(thread);
        }
        Ok(Self {
            inboxes,
            threads,
            finished,
            next_listener: AtomicUsize::new(0),
        })
    }

    /// Hand a listener to one of the threads (they take turns).
    pub(crate) fn listen(&self, listening: Listening) {
        let index = self.next_listener.fetch_add(1, Ordering::Relaxed) % self.inboxes.len();
        self.inboxes[index].push(Command::Listen(Box::new(listening)));
    }

    /// Graceful shutdown: stop accepting and close (or drain) every
    /// connection; after `drain_timeout`, end the rest; then join the
    /// threads. Blocks the calling thread.
    pub(crate) fn shutdown(self, drain_timeout: Duration) {
        for inbox in self.inboxes.iter() {
            inbox.push(Command::Shutdown);
        }
        let count = self.threads.len();
        let mut ended = self.wait_for(count, Instant::now() + drain_timeout);
        if ended < count {
            for inbox in self.inboxes.iter() {
                inbox.push(Command::Force);
            }
            // Forced connections end at once; give the threads a moment to
            // report their close events.
            ended += self.wait_for(count - ended, Instant::now() + Duration::from_secs(1));
        }
        let _ = ended;
        for thread in self.threads {
            let _ = thread.join();
        }
    }

    /// Wait until `count` threads ended or `deadline`; returns how many did.
    fn wait_for(&self, count: usize, deadline: Instant) -> usize {
        let mut ended = 0;
        while ended < count {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.finished.recv_timeout(left) {
                Ok(_) => ended += 1,
                Err(_) => break,
            }
        }
        ended
    }
}

struct Reactor {
    index: usize,
    poll: Poll,
    entries: Slab<Entry>,
    listeners: Slab<Listening>,
    timers: Timers,
    inbox: Arc<Inbox>,
    /// The same inbox, as the waker connections and queues hold.
    waker: Arc<dyn IoWaker>,
    /// Every thread's inbox: accepted connections are spread over them.
    peers: Arc<[Arc<Inbox>]>,
    next_peer: usize,
    server: Arc<ServerState>,
    next_generation: u32,
    /// Every connection of this thread reads into it.
    read_buffer: Vec<u8>,
    /// Scratch for the items taken from an outbound queue.
    items: VecDeque<OutItem>,
    /// Connections to service again before sleeping.
    again: Vec<usize>,
    /// Connections that stopped reading because their worker's queue was
    /// full, with their generation.
    paused: Vec<(usize, u32)>,
    stopping: bool,
}

impl Reactor {
    fn run(mut self) {
        crate::events::defer_wakes_on_this_thread();
        let mut events = Events::with_capacity(EVENTS_PER_POLL);
        let mut commands = Vec::new();
        let mut ready = Vec::new();
        loop {
            self.inbox.take(&mut commands);
            for command in commands.drain(..) {
                self.on_command(command);
            }
            self.fire_timers();
            self.server.sockjs.sweep(&*self.server, Instant::now());
            for key in std::mem::take(&mut self.again) {
                self.with_entry(key, None, |entry, cx| entry.service(key, true, cx));
            }
            if self.stopping && self.entries.is_empty() && self.listeners.is_empty() {
                break;
            }
            // The turn is over: wake the workers given events during it.
            crate::events::wake_deferred();
            let now = Instant::now();
            let timeout = if self.again.is_empty() {
                // SockJS sessions expire on whichever I/O thread is awake
                // then (`sockjs/mod.rs`).
                let sweep = self.server.sockjs.next_sweep().map(|at| {
                    Duration::from_millis(
                        at.saturating_duration_since(now)
                            .as_nanos()
                            .div_ceil(1_000_000) as u64,
                    )
                });
                match (self.timers.timeout(now), sweep) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                }
            } else {
                Some(Duration::ZERO)
            };
            let sleeping = timeout != Some(Duration::ZERO) && self.inbox.prepare_to_sleep();
            let result = self.poll.poll(
                &mut events,
                if sleeping {
                    timeout
                } else {
                    Some(Duration::ZERO)
                },
            );
            if sleeping {
                self.inbox.woke();
            }
            if let Err(error) = result {
                if error.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                // epoll itself failed: nothing can be served any more.
                break;
            }
            ready.extend(
                events
                    .iter()
                    .filter(|event| event.token() != WAKER)
                    .map(|event| {
                        let hung_up = event.is_read_closed() || event.is_error();
                        (event.token().0, event.is_readable() || hung_up, hung_up)
                    }),
            );
            for (token, readable, hung_up) in ready.drain(..) {
                if token & LISTENER != 0 {
                    self.accept_all(token & !LISTENER);
                } else {
                    let (key, generation) = (token & 0xFFFF_FFFF, (token >> 32) as u32);
                    self.with_entry(key, Some(generation), |entry, cx| {
                        entry.hung_up |= hung_up;
                        entry.service(key, readable, cx)
                    });
                }
            }
        }
        // Anything left (an epoll failure) ends with the thread.
        for (_, entry) in std::mem::take(&mut self.entries) {
            self.drop_entry(entry);
        }
    }

    fn on_command(&mut self, command: Command) {
        match command {
            Command::Adopt(adopted) => self.adopt(adopted),
            Command::Listen(listening) => self.add_listener(*listening),
            Command::Wake { key, generation } => {
                self.with_entry(key, Some(generation), |entry, cx| {
                    entry.service(key, false, cx)
                });
            }
            Command::UpgradeDecided {
                key,
                generation,
                decision,
            } => {
                self.with_entry(key, Some(generation), |entry, cx| {
                    entry.on_upgrade_decided(key, decision, cx)
                });
            }
            Command::Room { worker } => self.on_room(worker),
            Command::Shutdown => {
                self.stopping = true;
                // Sessions without a receiver have no entry to close them.
                self.server.sockjs.shut_down(&*self.server);
                // Closing the listening sockets stops accepting.
                self.listeners.clear();
                let keys: Vec<usize> = self.entries.iter().map(|(key, _)| key).collect();
                for key in keys {
                    self.with_entry(key, None, |entry, cx| entry.on_shutdown(key, cx));
                }
            }
            Command::Force => {
                self.stopping = true;
                self.listeners.clear();
                for (_, mut entry) in std::mem::take(&mut self.entries) {
                    entry.on_force();
                    self.drop_entry(entry);
                }
            }
        }
    }

    /// `worker`'s event queue has room again: resume its paused
    /// connections in the order they paused, until one fills the queue
    /// again. The rest keep their places for the next `Room`, ahead of
    /// those just resumed, so every connection gets its turn. (Resuming
    /// them all at once made each read a buffer into a full queue: with
    /// 1,000 connections echoing 16 KiB messages, the worker's backlog
    /// grew by megabytes per `Room` and throughput fell by 40%.)
    fn on_room(&mut self, worker: usize) {
        let list = std::mem::take(&mut self.paused);
        let mut waiting = Vec::with_capacity(list.len());
        let mut resumed_and_paused = Vec::new();
        let mut full = false;
        for (key, generation) in list {
            let Some(entry) = self.entries.get_mut(key) else {
                continue;
            };
            if entry.generation != generation {
                continue;
            }
            if full || entry_worker(entry) != Some(worker) {
                if entry.paused {
                    waiting.push((key, generation));
                } else {
                    entry.listed = false;
                }
                continue;
            }
            entry.listed = false;
            self.with_entry(key, Some(generation), |entry, cx| entry.resume(key, cx));
            // `with_entry` listed it again if it paused again: the queue is
            // full once more.
            if !self.paused.is_empty() {
                full = true;
                resumed_and_paused.append(&mut self.paused);
            }
        }
        waiting.append(&mut resumed_and_paused);
        self.paused = waiting;
    }

    /// Run `f` on the entry at `key` (when it is still the connection of
    /// `generation`, if given), then remove it or arm its next deadline.
    fn with_entry(
        &mut self,
        key: usize,
        generation: Option<u32>,
        f: impl FnOnce(&mut Entry, &mut Context<'_>) -> Next,
    ) {
        let Reactor {
            entries,
            server,
            inbox,
            waker,
            read_buffer,
            items,
            again,
            timers,
            paused,
            ..
        } = self;
        let Some(entry) = entries.get_mut(key) else {
            return;
        };
        if generation.is_some_and(|g| g != entry.generation) {
            return;
        }
        let mut cx = Context {
            server,
            inbox,
            waker,
            read_buffer,
            items,
            again,
            now: Instant::now(),
        };
        match f(entry, &mut cx) {
            Next::Remove => {
                let entry = entries.remove(key);
                self.drop_entry(entry);
            }
            Next::Keep => {
                // A paused entry must be in the list `Room` walks. One that
                // was paused already is there, unless it is being resumed
                // now: `Room` took the list (clearing `listed`), and an
                // entry that found the queue full again at once paused
                // again (missing it left the connection silent for good).
                if entry.paused && !entry.listed {
                    entry.listed = true;
                    paused.push((key, entry.generation));
                }
                if let Some(deadline) = entry.deadline() {
                    timers.arm(&mut entry.armed, key, entry.generation, deadline);
                }
            }
        }
    }

    /// An entry leaves the slab: its stream closes with it.
    fn drop_entry(&self, entry: Entry) {
        if entry.admitted {
            self.server.release();
        }
    }

    fn fire_timers(&mut self) {
        let now = Instant::now();
        while let Some((key, generation, at)) = self.timers.pop_due(now) {
            if key & LISTENER != 0 {
                let key = key & !LISTENER;
                let due = self
                    .listeners
                    .get(key)
                    .is_some_and(|l| l.paused_until.is_some_and(|until| until <= now));
                if due {
                    self.listeners[key].paused_until = None;
                    self.accept_all(key);
                }
                continue;
            }
            let current = self
                .entries
                .get(key)
                .is_some_and(|entry| entry.generation == generation && entry.armed == Some(at));
            if !current {
                // A stale entry: re-armed earlier since, or a reused key.
                continue;
            }
            self.entries[key].armed = None;
            self.with_entry(key, Some(generation), |entry, cx| {
                entry.on_deadline(key, cx)
            });
        }
    }

    fn add_listener(&mut self, mut listening: Listening) {
        if self.stopping {
            return;
        }
        let entry = self.listeners.vacant_entry();
        let key = entry.key();
        if listening
            .register(self.poll.registry(), Token(LISTENER | key))
            .is_err()
        {
            return;
        }
        entry.insert(listening);
        // Connections may be waiting already.
        self.accept_all(key);
    }

    /// Accept until the listener would block (or fails, and backs off).
    fn accept_all(&mut self, key: usize) {
        loop {
            let Some(listening) = self.listeners.get_mut(key) else {
                return;
            };
            if listening.paused_until.is_some() {
                return;
            }
            let server = &self.server;
            let protocol = listening.protocol;
            match listening.accept(|| server.admit(), Instant::now()) {
                Ok(None) => return,
                Ok(Some(Accepted::Serve {
                    stream,
                    remote,
                    transport,
                })) => {
                    let adopted = Adopted {
                        stream,
                        remote,
                        protocol,
                        transport,
                    };
                    // Spread connections over the threads, this one included.
                    let target = self.next_peer % self.peers.len();
                    self.next_peer = target + 1;
                    if target == self.index {
                        self.adopt(adopted);
                    } else {
                        self.peers[target].push(Command::Adopt(adopted));
                    }
                }
                Ok(Some(Accepted::Refuse { stream, response })) => {
                    let generation = self.generation();
                    let entry =
                        Entry::respond(stream, response, generation, Instant::now(), &self.server);
                    self.insert(entry, |_, _| {});
                }
                Ok(Some(Accepted::Drop)) => {}
                Err(_) => {
                    if let Some(until) = self.listeners[key].paused_until {
                        let mut armed = None;
                        self.timers.arm(&mut armed, LISTENER | key, 0, until);
                    }
                    return;
                }
            }
        }
    }

    /// Serve an admitted connection on this thread.
    fn adopt(&mut self, adopted: Adopted) {
        let Adopted {
            stream,
            remote,
            protocol,
            transport,
        } = adopted;
        if self.stopping {
            // Accepted just before the shutdown reached its listener.
            self.server.release();
            return;
        }
        let key = self.entries.vacant_key();
        let generation = self.generation();
        let entry = {
            let mut cx = Context {
                server: &self.server,
                inbox: &self.inbox,
                waker: &self.waker,
                read_buffer: &mut self.read_buffer,
                items: &mut self.items,
                again: &mut self.again,
                now: Instant::now(),
            };
            entry::adopt(
                stream, remote, protocol, transport, key, generation, &mut cx,
            )
        };
        self.insert(entry, |entry, _| entry.admitted = true);
        // Its first bytes may be there already.
        self.with_entry(key, Some(generation), |entry, cx| {
            entry.service(key, true, cx)
        });
    }

    /// Put an entry in the slab and register its stream.
    fn insert(&mut self, mut entry: Entry, setup: impl FnOnce(&mut Entry, usize)) {
        let key = self.entries.vacant_key();
        setup(&mut entry, key);
        if entry
            .stream
            .register(
                self.poll.registry(),
                connection_token(key, entry.generation),
            )
            .is_err()
        {
            self.drop_entry(entry);
            return;
        }
        if let Some(deadline) = entry.deadline() {
            self.timers
                .arm(&mut entry.armed, key, entry.generation, deadline);
        }
        self.entries.insert(entry);
    }

    fn generation(&mut self) -> u32 {
        self.next_generation = (self.next_generation + 1) & GENERATION_MASK;
        self.next_generation
    }
}

/// The worker of an entry's session, if it has one.
fn entry_worker(entry: &Entry) -> Option<usize> {
    match &entry.phase {
        entry::Phase::Session(session) => Some(session.connection().worker()),
        _ => None,
    }
}
#[cfg(test)]
mod tests {
    /// What an idle connection costs in the I/O thread: its slab entry and
    /// the part other threads share. Budgets, not exact sizes: growing past
    /// them should be a decision (see the idle-memory figures in
    /// ARCHITECTURE.md), not an accident.
    #[test]
    fn an_idle_connection_stays_within_its_memory_budget() {
        let entry = std::mem::size_of::<super::entry::Entry>();
        let shared = std::mem::size_of::<crate::connection::Connection>();
        assert!(entry <= 208, "Entry is {entry} bytes");
        assert!(shared <= 128, "Connection is {shared} bytes");
    }
}
