//! What the WebSocket engine (`engine.rs`) and the xhr-streaming engine
//! (`xhr/`) share, whatever goes over their sockets: the clock, where the
//! clients connect from and to, how many are opening, ready and joined,
//! the retries of the connect phase and the losses after it, open-loop
//! pacing, the turn's wait for readiness and the watch on the server
//! process. Each engine holds an [`EngineCore`] beside its clients' own
//! state, and the [`Load`](crate::load::Load) trait reaches it through
//! `core()`.

use std::collections::VecDeque;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

use mio::event::Event;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};

use crate::cli::{Config, Scenario};
use crate::dispatch::Stop;
use crate::frame::XorShift;
use crate::metrics::Stats;
use crate::net;
use crate::pacer::Pacer;
use crate::procfs::{Proc, Watch};

/// Reads per socket per readiness event before others get a turn.
pub const READ_BUDGET: usize = 4;
/// The shared read buffer: large enough that a busy connection's backlog
/// comes in a few reads, small enough to stay in L2.
pub const SCRATCH_BYTES: usize = 256 << 10;
/// An open loop skips a client whose unsent bytes exceed this.
pub const BACKLOG_CAP: usize = 1 << 20;
/// Attempts per client before the run gives up.
pub const MAX_ATTEMPTS: u8 = 3;
pub const RETRY_DELAY_NS: u64 = 250_000_000;
/// Closures reported one by one on stderr before going quiet.
pub const CLOSES_REPORTED: u64 = 5;

/// How an engine's messages name its clients.
#[derive(Clone, Copy)]
pub struct Noun {
    pub one: &'static str,
    pub many: &'static str,
    /// "could not open connection 3 to ..." / "session 3 on ...".
    pub to: &'static str,
}

/// The WebSocket engine's clients.
pub const CONNECTIONS: Noun = Noun {
    one: "connection",
    many: "connections",
    to: "to",
};
/// The xhr-streaming engine's clients.
pub const SESSIONS: Noun = Noun {
    one: "session",
    many: "sessions",
    to: "on",
};

/// What a dropped client was counted as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Was {
    /// Being opened (against `--connect-concurrency`).
    Opening,
    Ready,
    /// Waiting to start or retry, or closed already: nothing to undo.
    Neither,
}

/// What pacing and the closed loop's start need of an engine's client.
pub trait LoadClient {
    /// It can carry messages.
    fn is_ready(&self) -> bool;
    /// Its bytes not yet taken by the server (compared with BACKLOG_CAP).
    fn backlog(&self) -> usize;
}

/// The clock of the payload stamps, started with the engine. Apart from
/// [`EngineCore`] so that a read path can read it while it holds the
/// core's other fields.
#[derive(Clone, Copy)]
pub struct Clock(Instant);

impl Clock {
    /// Nanoseconds since the engine was made.
    #[inline]
    pub fn now(&self) -> u64 {
        self.0.elapsed().as_nanos() as u64
    }
}

pub struct EngineCore {
    pub poll: Poll,
    pub clock: Clock,
    dest: SocketAddr,
    /// fanout: where the publishers (clients `0..senders`) connect.
    publish_dest: SocketAddr,
    /// fanout: only clients `0..senders` send (paced); 0: every client does.
    senders: usize,
    source_addrs: u32,
    concurrency: usize,
    scenario: Scenario,
    pub payload_size: usize,
    in_flight: u32,
    channel_size: usize,
    noun: Noun,
    pub scratch: Vec<u8>,
    pub rng: XorShift,
    pub stats: Stats,
    /// Sockets (by token) with queued bytes to write at the end of this turn.
    pub dirty: Vec<u32>,
    /// Sockets (by token) whose read budget ran out with data maybe left.
    pub again: Vec<u32>,
    /// Clients waiting for a slot to open.
    queue: VecDeque<u32>,
    /// Failed clients waiting to retry: (when, which), in time order.
    retry: VecDeque<(u64, u32)>,
    /// Clients between their first connect and ready.
    pub opening: usize,
    pub ready: usize,
    pub joined: usize,
    pub closed_loop: bool,
    pub pacer: Option<Pacer>,
    /// The next client pacing considers (round robin).
    rr: usize,
    /// After the connect phase, a lost client is not reopened.
    pub connect_phase_over: bool,
    closes_seen: u64,
    /// Why the run cannot go on, found where no error can be returned.
    pub fatal: Option<String>,
    server: Watch,
}

impl EngineCore {
    pub fn new(cfg: &Config, server: Option<Proc>, noun: Noun) -> Result<EngineCore, String> {
        let dest = destination(cfg, cfg.port)?;
        let publish_dest = destination(cfg, cfg.publish_port.unwrap_or(cfg.port))?;
        Ok(EngineCore {
            poll: Poll::new().map_err(|e| format!("epoll: {e}"))?,
            clock: Clock(Instant::now()),
            dest,
            publish_dest,
            senders: cfg.senders_apart(),
            source_addrs: cfg.source_addrs,
            concurrency: cfg.connect_concurrency,
            scenario: cfg.scenario,
            payload_size: cfg.payload,
            in_flight: cfg.in_flight,
            channel_size: cfg.channel_size,
            noun,
            scratch: vec![0u8; SCRATCH_BYTES],
            rng: XorShift::new(seed()),
            stats: Stats::new(),
            dirty: Vec::new(),
            again: Vec::new(),
            queue: (0..cfg.clients() as u32).collect(),
            retry: VecDeque::new(),
            opening: 0,
            ready: 0,
            joined: 0,
            closed_loop: false,
            pacer: None,
            rr: 0,
            connect_phase_over: false,
            closes_seen: 0,
            fatal: None,
            server: Watch::new(server),
        })
    }

    #[inline]
    pub fn now(&self) -> u64 {
        self.clock.now()
    }

    /// The start of a loop turn: waits for readiness until the deadline or
    /// the next timer (a paced send, a retry, the alive check), or not at
    /// all when work is waiting: the engine's own (`busy`), reads and
    /// writes left from the last turn, or a client to start.
    pub fn wait(
        &mut self,
        events: &mut Events,
        deadline_ns: u64,
        busy: bool,
    ) -> Result<(), String> {
        let now = self.now();
        let mut wake = deadline_ns;
        if let Some(p) = &self.pacer {
            wake = wake.min(p.next_due_ns());
        }
        if let Some(&(at, _)) = self.retry.front() {
            wake = wake.min(at);
        }
        if let Some(at) = self.server.next_ns() {
            wake = wake.min(at);
        }
        let can_connect = !self.queue.is_empty() && self.opening < self.concurrency;
        let busy = busy || !self.again.is_empty() || !self.dirty.is_empty() || can_connect;
        // epoll rounds up to whole milliseconds: a paced send is at most
        // 1 ms late, and is stamped when it actually goes.
        let timeout = if busy {
            Duration::ZERO
        } else {
            Duration::from_nanos(wake.saturating_sub(now))
        };
        match self.poll.poll(events, Some(timeout)) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
            Err(e) => Err(format!("epoll_wait: {e}")),
        }
    }

    /// The end of a loop turn: fails when the server process went away.
    pub fn check_alive(&mut self, now: u64) -> Result<(), String> {
        self.server.check(now)
    }

    /// The next client to start opening, counted as opening from here, while
    /// fewer than `--connect-concurrency` are: retries due by `now` first,
    /// then those not started yet.
    pub fn next_to_open(&mut self, now: u64) -> Option<usize> {
        while let Some(&(at, idx)) = self.retry.front() {
            if at > now {
                break;
            }
            self.retry.pop_front();
            self.queue.push_front(idx);
        }
        if self.opening >= self.concurrency {
            return None;
        }
        let idx = self.queue.pop_front()?;
        self.opening += 1;
        Some(idx as usize)
    }

    /// A socket of client `idx`, connecting from its source address (the
    /// connect completes later: `net::connect_done`), registered for
    /// readiness as `token`.
    pub fn connect(&self, idx: usize, token: Token) -> Result<TcpStream, Stop> {
        let source = net::source_addr(idx, self.source_addrs);
        let mut stream = net::open(self.dest_of(idx), source)
            .map_err(|e| Stop::Closed(net::connect_error(source, &e)))?;
        self.poll
            .registry()
            .register(&mut stream, token, Interest::READABLE | Interest::WRITABLE)
            .map_err(|e| Stop::Closed(format!("epoll registration failed: {e}")))?;
        Ok(stream)
    }

    /// Where client `idx` connects: fanout's publishers to `--publish-port`.
    pub fn dest_of(&self, idx: usize) -> SocketAddr {
        if idx < self.senders {
            self.publish_dest
        } else {
            self.dest
        }
    }

    /// Client `idx` can carry messages now. Returns what it says first, if
    /// anything: in channels, which channel it joins.
    pub fn opened(&mut self, idx: usize) -> Option<String> {
        self.opening -= 1;
        self.ready += 1;
        (self.scenario == Scenario::Channels).then(|| format!("join:c{}", idx / self.channel_size))
    }

    /// Counts a dropped client (the engine has closed its sockets and reset
    /// it): during the connect phase it is retried, up to MAX_ATTEMPTS, and
    /// this returns true (the engine marks it waiting); afterwards it is
    /// counted as closed, and the run ends when none is left.
    pub fn lost(
        &mut self,
        idx: usize,
        was: Was,
        joined: bool,
        attempts: &mut u8,
        why: Stop,
    ) -> bool {
        if joined {
            self.joined -= 1;
        }
        if matches!(why, Stop::Protocol(_)) {
            self.stats.errors.protocol += 1;
        }
        match was {
            Was::Opening => self.opening -= 1,
            Was::Ready => self.ready -= 1,
            Was::Neither => return false,
        }
        let Noun { one, many, to } = self.noun;
        if !self.connect_phase_over {
            self.stats.errors.connect += 1;
            *attempts += 1;
            if *attempts >= MAX_ATTEMPTS {
                self.fatal = Some(format!(
                    "could not open {one} {idx} {to} {} after {MAX_ATTEMPTS} attempts: {why}",
                    self.dest_of(idx)
                ));
                return false;
            }
            let at = self.now() + RETRY_DELAY_NS;
            self.retry.push_back((at, idx as u32));
            return true;
        }
        self.stats.errors.closed += 1;
        self.closes_seen += 1;
        if self.closes_seen <= CLOSES_REPORTED {
            eprintln!("progress: {one} {idx} lost: {why}");
        } else if self.closes_seen == CLOSES_REPORTED + 1 {
            eprintln!("progress: more {many} lost (counted in errors.closed)");
        }
        if self.ready == 0 {
            self.fatal = Some(format!(
                "the server went away: every {one} is closed (last: {why})"
            ));
        }
        false
    }

    /// Closed loops: every ready client sends its first `--in-flight`
    /// messages; `send` queues one from client `idx`, stamped `now`.
    pub fn start_closed_loop<C: LoadClient>(
        &mut self,
        clients: &mut [C],
        mut send: impl FnMut(&mut EngineCore, &mut C, usize, u64),
    ) {
        self.closed_loop = true;
        let now = self.now();
        for (idx, c) in clients.iter_mut().enumerate() {
            if !c.is_ready() {
                continue;
            }
            for _ in 0..self.in_flight {
                send(self, c, idx, now);
            }
            self.stats.count_sent(self.in_flight as u64);
        }
    }

    /// Open loop: the messages due by `now`, one each to the ready clients
    /// in turn (in fanout the publishers only, clients `0..senders`); a client with more than BACKLOG_CAP unsent is skipped (and
    /// counted), so that a slow server cannot make the load generator
    /// buffer without bound. `send` as in `start_closed_loop`.
    pub fn pace<C: LoadClient>(
        &mut self,
        clients: &mut [C],
        now: u64,
        mut send: impl FnMut(&mut EngineCore, &mut C, usize, u64),
    ) {
        let Some(p) = self.pacer.as_mut() else { return };
        let due = p.due(now);
        if due == 0 {
            return;
        }
        p.take(due);
        if self.ready == 0 {
            return;
        }
        let n = match self.senders {
            0 => clients.len(),
            // A few publishers: looking for an open one costs nothing.
            m => {
                let m = m.min(clients.len());
                if !clients[..m].iter().any(|c| c.is_ready()) {
                    return;
                }
                m
            }
        };
        for _ in 0..due {
            // Round robin over the clients still open.
            while !clients[self.rr].is_ready() {
                self.rr = (self.rr + 1) % n;
            }
            let idx = self.rr;
            self.rr = (self.rr + 1) % n;
            let c = &mut clients[idx];
            if c.backlog() > BACKLOG_CAP {
                self.stats.count_backlogged();
                continue;
            }
            send(self, c, idx, now);
            self.stats.count_sent(1);
        }
    }
}

/// What a readiness event asks of its socket: (read, write). An error is
/// both, so that the read or write that follows reports it; the server's
/// FIN is a read, the one that returns 0.
#[inline]
pub fn readiness(ev: &Event) -> (bool, bool) {
    let readable = ev.is_readable() || ev.is_read_closed() || ev.is_error();
    let writable = ev.is_writable() || ev.is_error();
    (readable, writable)
}

/// Works through one of the engine's lists of tokens (`list`, e.g. the
/// sockets to flush), which `each` may fill again for the next turn; the
/// list keeps its allocation from turn to turn.
pub fn for_each_queued<E>(
    engine: &mut E,
    list: impl Fn(&mut E) -> &mut Vec<u32>,
    mut each: impl FnMut(&mut E, u32),
) {
    let mut taken = std::mem::take(list(engine));
    for &tok in &taken {
        each(engine, tok);
    }
    taken.clear();
    let left = list(engine);
    if left.is_empty() {
        *left = taken;
    }
}

/// The server's address: its first IPv4 one when the clients bind
/// 127.0.0.x source addresses, any with `--source-addrs 0`.
fn destination(cfg: &Config, port: u16) -> Result<SocketAddr, String> {
    let dest = (cfg.host.as_str(), port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {}: {e}", cfg.host))?
        .find(|a| a.is_ipv4() || cfg.source_addrs == 0)
        .ok_or_else(|| {
            format!(
                "{} has no IPv4 address (use --source-addrs 0 for IPv6)",
                cfg.host
            )
        })?;
    if cfg.source_addrs > 0 && !dest.ip().is_loopback() {
        return Err(format!(
            "--source-addrs binds 127.0.0.x, which cannot reach {}: pass --source-addrs 0",
            dest.ip()
        ));
    }
    Ok(dest)
}

/// Masks, paths and session ids need variety, not secrecy: the wall clock
/// and pid give it.
fn seed() -> u64 {
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    wall ^ ((std::process::id() as u64) << 32)
}
