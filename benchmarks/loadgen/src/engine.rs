//! The single-threaded event loop: reading and writing connections with
//! edge-triggered epoll through mio, pacing open-loop sends, losing
//! connections and noticing a server that went away (opening them is in
//! `connect.rs`).

use std::collections::VecDeque;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

use mio::{Events, Poll};

use crate::cli::{Config, Scenario};
use crate::conn::{pump, Conn, Phase, ReadEnd};
use crate::dispatch::{self, ConnParts, Ctx, Stop};
use crate::frame::XorShift;
use crate::load::Load;
use crate::metrics::Stats;
use crate::pacer::Pacer;
use crate::procfs::Proc;
use crate::protocols::Codec;

mod connect;

/// Reads per connection per readiness event before others get a turn.
pub const READ_BUDGET: usize = 4;
/// The shared read buffer: large enough that a busy connection's backlog
/// comes in a few reads, small enough to stay in L2.
pub const SCRATCH_BYTES: usize = 256 << 10;
/// An open loop skips a connection whose unsent bytes exceed this.
pub const BACKLOG_CAP: usize = 1 << 20;
/// Attempts per connection before the run gives up.
pub const MAX_ATTEMPTS: u8 = 3;
pub const RETRY_DELAY_NS: u64 = 250_000_000;
/// Closures reported one by one on stderr before going quiet.
pub const CLOSES_REPORTED: u64 = 5;

pub struct Engine {
    poll: Poll,
    clock: Instant,
    dest: SocketAddr,
    host: String,
    port: u16,
    source_addrs: u32,
    concurrency: usize,
    scenario: Scenario,
    payload_size: usize,
    in_flight: u32,
    channel_size: usize,
    conns: Vec<Conn>,
    scratch: Vec<u8>,
    codec: Codec,
    rng: XorShift,
    stats: Stats,
    /// Connections with queued bytes to write at the end of this turn.
    dirty: Vec<u32>,
    /// Connections whose read budget ran out with data maybe left.
    again: Vec<u32>,
    /// Connections waiting for a handshake slot.
    queue: VecDeque<u32>,
    /// Failed connections waiting to retry: (when, which), in time order.
    retry: VecDeque<(u64, u32)>,
    /// Connections between TCP connect and ready.
    opening: usize,
    ready: usize,
    joined: usize,
    closed_loop: bool,
    pacer: Option<Pacer>,
    rr: usize,
    /// After the connect phase, a lost connection is not reopened.
    connect_phase_over: bool,
    closes_seen: u64,
    fatal: Option<String>,
    server: Option<Proc>,
    next_alive_check_ns: u64,
}

impl Engine {
    pub fn new(cfg: &Config, server: Option<Proc>) -> Result<Engine, String> {
        let dest = (cfg.host.as_str(), cfg.port)
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
        // Masks and ids need variety, not secrecy: the wall clock and pid do.
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let seed = wall ^ ((std::process::id() as u64) << 32);
        Ok(Engine {
            poll: Poll::new().map_err(|e| format!("epoll: {e}"))?,
            clock: Instant::now(),
            dest,
            host: cfg.host.clone(),
            port: cfg.port,
            source_addrs: cfg.source_addrs,
            concurrency: cfg.connect_concurrency,
            scenario: cfg.scenario,
            payload_size: cfg.payload,
            in_flight: cfg.in_flight,
            channel_size: cfg.channel_size,
            conns: (0..cfg.connections).map(|_| Conn::new()).collect(),
            scratch: vec![0u8; SCRATCH_BYTES],
            codec: Codec::new(cfg.protocol, cfg.scenario.endpoint()),
            rng: XorShift::new(seed),
            stats: Stats::new(),
            dirty: Vec::new(),
            again: Vec::new(),
            queue: (0..cfg.connections as u32).collect(),
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
            server,
            next_alive_check_ns: 0,
        })
    }
}

impl Load for Engine {
    #[inline]
    fn now(&self) -> u64 {
        self.clock.elapsed().as_nanos() as u64
    }

    fn stats(&self) -> &Stats {
        &self.stats
    }

    fn stats_mut(&mut self) -> &mut Stats {
        &mut self.stats
    }

    fn total(&self) -> usize {
        self.conns.len()
    }

    fn ready(&self) -> usize {
        self.ready
    }

    fn opening(&self) -> usize {
        self.opening
    }

    fn joined(&self) -> usize {
        self.joined
    }

    fn end_connect_phase(&mut self) {
        self.connect_phase_over = true;
    }

    fn start_closed_loop(&mut self) {
        self.closed_loop = true;
        let now = self.now();
        for (idx, conn) in self.conns.iter_mut().enumerate() {
            if conn.phase != Phase::Ready {
                continue;
            }
            for _ in 0..self.in_flight {
                dispatch::write_load(
                    &mut conn.out,
                    &self.codec,
                    &mut self.rng,
                    now,
                    idx as u32,
                    self.payload_size,
                );
            }
            self.stats.count_sent(self.in_flight as u64);
            dispatch::queue_flush(&mut conn.out, &mut self.dirty, idx as u32);
        }
    }

    fn set_rate(&mut self, rate: f64) {
        self.pacer = Some(Pacer::new(self.now(), rate));
    }

    fn run(&mut self, deadline_ns: u64, done: impl Fn(&Engine) -> bool) -> Result<(), String> {
        let mut events = Events::with_capacity(1024);
        loop {
            if let Some(e) = self.fatal.take() {
                return Err(e);
            }
            if done(self) || self.now() >= deadline_ns {
                return Ok(());
            }
            self.turn(&mut events, deadline_ns)?;
        }
    }
}

impl Engine {
    /// One loop turn: wait for readiness (or the next timer), read, pace,
    /// flush, start connections.
    fn turn(&mut self, events: &mut Events, deadline_ns: u64) -> Result<(), String> {
        let now = self.now();
        let mut wake = deadline_ns;
        if let Some(p) = &self.pacer {
            wake = wake.min(p.next_due_ns());
        }
        if let Some(&(at, _)) = self.retry.front() {
            wake = wake.min(at);
        }
        if self.server.is_some() {
            wake = wake.min(self.next_alive_check_ns);
        }
        let can_connect = !self.queue.is_empty() && self.opening < self.concurrency;
        let timeout = if self.again.is_empty() && self.dirty.is_empty() && !can_connect {
            // epoll rounds up to whole milliseconds: a paced send is at most
            // 1 ms late, and is stamped when it actually goes.
            Duration::from_nanos(wake.saturating_sub(now))
        } else {
            Duration::ZERO
        };
        match self.poll.poll(events, Some(timeout)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("epoll_wait: {e}")),
        }
        for ev in events.iter() {
            let idx = ev.token().0;
            let readable = ev.is_readable() || ev.is_read_closed() || ev.is_error();
            let writable = ev.is_writable() || ev.is_error();
            self.on_event(idx, readable, writable);
        }
        if !self.again.is_empty() {
            let mut again = std::mem::take(&mut self.again);
            for &idx in &again {
                self.on_readable(idx as usize);
            }
            if self.again.is_empty() {
                again.clear();
                self.again = again;
            }
        }
        let now = self.now();
        self.pace(now);
        self.flush_dirty();
        self.start_connects(now);
        if now >= self.next_alive_check_ns {
            self.next_alive_check_ns = now + 500_000_000;
            if let Some(server) = &self.server {
                if !server.alive() {
                    return Err(format!("the server (pid {}) went away", server.pid));
                }
            }
        }
        Ok(())
    }

    fn on_event(&mut self, idx: usize, readable: bool, writable: bool) {
        match self.conns[idx].phase {
            Phase::Waiting | Phase::Closed => {}
            Phase::Connecting => {
                if writable || readable {
                    self.finish_connect(idx);
                }
            }
            _ => {
                if writable && self.conns[idx].out.pending() > 0 {
                    self.flush_one(idx);
                }
                if readable {
                    self.on_readable(idx);
                }
            }
        }
    }

    fn on_readable(&mut self, idx: usize) {
        let Engine {
            conns,
            scratch,
            codec,
            rng,
            stats,
            dirty,
            joined,
            clock,
            ..
        } = self;
        let Conn {
            stream,
            phase,
            carry,
            rx,
            out,
            joined: conn_joined,
            ..
        } = &mut conns[idx];
        let Some(stream) = stream.as_mut() else {
            return;
        };
        let mut cx = Ctx {
            idx: idx as u32,
            codec,
            rng,
            stats,
            dirty,
            joined_total: joined,
            closed_loop: self.closed_loop,
            payload_size: self.payload_size,
            opened: false,
        };
        let result = pump(stream, scratch, carry, READ_BUDGET, |buf| {
            // One clock read per read(2): every message in it arrived then.
            let now = clock.elapsed().as_nanos() as u64;
            let parts = ConnParts {
                phase: &mut *phase,
                rx: &mut *rx,
                out: &mut *out,
                joined: &mut *conn_joined,
            };
            dispatch::process(buf, now, &mut cx, parts)
        });
        let opened = cx.opened;
        if opened {
            self.on_open(idx);
        }
        match result {
            Ok(ReadEnd::Drained) => {}
            Ok(ReadEnd::Budget) => self.again.push(idx as u32),
            Ok(ReadEnd::Eof) => self.close(
                idx,
                Stop::Closed("the server closed the TCP connection".into()),
            ),
            Ok(ReadEnd::Error(e)) => self.close(idx, Stop::Closed(format!("read failed: {e}"))),
            Err(stop) => self.close(idx, stop),
        }
    }

    /// The connection can carry messages now.
    fn on_open(&mut self, idx: usize) {
        self.opening -= 1;
        self.ready += 1;
        if self.scenario == Scenario::Channels {
            let join = format!("join:c{}", idx / self.channel_size);
            let conn = &mut self.conns[idx];
            self.codec
                .write_message(&mut conn.out.buf, &mut self.rng, join.len(), |b| {
                    b.extend_from_slice(join.as_bytes())
                });
            dispatch::queue_flush(&mut conn.out, &mut self.dirty, idx as u32);
        }
    }

    fn pace(&mut self, now: u64) {
        let Engine {
            pacer,
            conns,
            codec,
            rng,
            stats,
            dirty,
            rr,
            payload_size,
            ready,
            ..
        } = self;
        let Some(p) = pacer.as_mut() else { return };
        let due = p.due(now);
        if due == 0 {
            return;
        }
        p.take(due);
        if *ready == 0 {
            return;
        }
        let n = conns.len();
        for _ in 0..due {
            // Round robin over the connections still open.
            while conns[*rr].phase != Phase::Ready {
                *rr = (*rr + 1) % n;
            }
            let idx = *rr;
            *rr = (*rr + 1) % n;
            let out = &mut conns[idx].out;
            if out.pending() > BACKLOG_CAP {
                stats.count_backlogged();
                continue;
            }
            dispatch::write_load(out, codec, rng, now, idx as u32, *payload_size);
            stats.count_sent(1);
            dispatch::queue_flush(out, dirty, idx as u32);
        }
    }

    fn flush_dirty(&mut self) {
        let mut dirty = std::mem::take(&mut self.dirty);
        for &idx in &dirty {
            self.conns[idx as usize].out.queued = false;
            self.flush_one(idx as usize);
        }
        dirty.clear();
        if self.dirty.is_empty() {
            self.dirty = dirty;
        }
    }

    fn flush_one(&mut self, idx: usize) {
        let conn = &mut self.conns[idx];
        let Some(stream) = conn.stream.as_mut() else {
            return;
        };
        if let Err(e) = conn.out.flush(stream) {
            self.close(idx, Stop::Closed(format!("write failed: {e}")));
        }
    }

    /// Drops a connection: during the connect phase it is retried (up to
    /// MAX_ATTEMPTS), afterwards it is counted as closed.
    fn close(&mut self, idx: usize, why: Stop) {
        let conn = &mut self.conns[idx];
        let was = conn.phase;
        if let Some(mut stream) = conn.stream.take() {
            // Best effort, so a close frame's answer reaches the server.
            let _ = conn.out.flush(&mut stream);
            let _ = self.poll.registry().deregister(&mut stream);
        }
        if conn.joined {
            self.joined -= 1;
        }
        conn.reset();
        conn.phase = Phase::Closed;
        if matches!(why, Stop::Protocol(_)) {
            self.stats.errors.protocol += 1;
        }
        if was.opening() {
            self.opening -= 1;
        } else if was == Phase::Ready {
            self.ready -= 1;
        } else {
            return;
        }
        if !self.connect_phase_over {
            self.stats.errors.connect += 1;
            let conn = &mut self.conns[idx];
            conn.attempts += 1;
            if conn.attempts >= MAX_ATTEMPTS {
                self.fatal = Some(format!(
                    "could not open connection {idx} to {} after {MAX_ATTEMPTS} attempts: {why}",
                    self.dest
                ));
            } else {
                conn.phase = Phase::Waiting;
                let at = self.now() + RETRY_DELAY_NS;
                self.retry.push_back((at, idx as u32));
            }
            return;
        }
        self.stats.errors.closed += 1;
        self.closes_seen += 1;
        if self.closes_seen <= CLOSES_REPORTED {
            eprintln!("progress: connection {idx} lost: {why}");
        } else if self.closes_seen == CLOSES_REPORTED + 1 {
            eprintln!("progress: more connections lost (counted in errors.closed)");
        }
        if self.ready == 0 {
            self.fatal = Some(format!(
                "the server went away: every connection is closed (last: {why})"
            ));
        }
    }
}
