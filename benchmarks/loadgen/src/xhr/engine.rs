//! The xhr-streaming engine's loop: one epoll loop over every client's two
//! legs, pacing open-loop sends into the sessions' batches, sending the
//! batches, losing clients and noticing a server that went away (opening
//! and reopening legs is in `connect.rs`, what arrives on them in `read.rs`).

use std::collections::VecDeque;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

use mio::{Events, Poll};

use super::client::{split_token, token, Client, Phase, Sending, RECV, SEND};
use super::request::Batch;
use crate::cli::{Config, Scenario};
use crate::dispatch::{queue_flush, Stop};
use crate::engine::{BACKLOG_CAP, CLOSES_REPORTED, MAX_ATTEMPTS, RETRY_DELAY_NS, SCRATCH_BYTES};
use crate::frame::XorShift;
use crate::load::Load;
use crate::metrics::{Stats, XhrFigures};
use crate::pacer::Pacer;
use crate::payload;
use crate::procfs::Proc;

pub struct Engine {
    pub(super) poll: Poll,
    pub(super) clock: Instant,
    pub(super) dest: SocketAddr,
    /// The `Host` header's value.
    pub(super) host: String,
    pub(super) endpoint: &'static str,
    pub(super) source_addrs: u32,
    pub(super) concurrency: usize,
    scenario: Scenario,
    pub(super) payload_size: usize,
    in_flight: u32,
    channel_size: usize,
    pub(super) clients: Vec<Client>,
    pub(super) scratch: Vec<u8>,
    pub(super) rng: XorShift,
    pub(super) stats: Stats,
    pub(super) figures: XhrFigures,
    /// Legs (by token) with queued bytes to write at the end of this turn.
    pub(super) dirty: Vec<u32>,
    /// Legs (by token) whose read budget ran out with data maybe left.
    pub(super) again: Vec<u32>,
    /// Clients with messages waiting: their batch goes at the end of the
    /// turn if no `xhr_send` of theirs is in flight.
    pub(super) to_send: Vec<u32>,
    /// Clients waiting for a slot to open.
    pub(super) queue: VecDeque<u32>,
    /// Failed clients waiting to retry: (when, which), in time order.
    pub(super) retry: VecDeque<(u64, u32)>,
    pub(super) opening: usize,
    pub(super) ready: usize,
    pub(super) joined: usize,
    pub(super) closed_loop: bool,
    pacer: Option<Pacer>,
    rr: usize,
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
        // Session ids need variety, not secrecy: the wall clock and pid do.
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let seed = wall ^ ((std::process::id() as u64) << 32);
        Ok(Engine {
            poll: Poll::new().map_err(|e| format!("epoll: {e}"))?,
            clock: Instant::now(),
            dest,
            host: format!("{}:{}", cfg.host, cfg.port),
            endpoint: cfg.scenario.endpoint(),
            source_addrs: cfg.source_addrs,
            concurrency: cfg.connect_concurrency,
            scenario: cfg.scenario,
            payload_size: cfg.payload,
            in_flight: cfg.in_flight,
            channel_size: cfg.channel_size,
            clients: (0..cfg.connections).map(|_| Client::new()).collect(),
            scratch: vec![0u8; SCRATCH_BYTES],
            rng: XorShift::new(seed),
            stats: Stats::new(),
            figures: XhrFigures::default(),
            dirty: Vec::new(),
            again: Vec::new(),
            to_send: Vec::new(),
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

/// Adds one load message from client `idx`, stamped `now_ns`, to its batch
/// (the stamp is taken when the application would call `send`, so a
/// message's wait for the `xhr_send` before it counts in its latency).
#[inline]
pub(super) fn enqueue_load(
    batch: &mut Batch,
    batch_queued: &mut bool,
    to_send: &mut Vec<u32>,
    idx: usize,
    now_ns: u64,
    size: usize,
) {
    batch.push(size, |b| payload::write(b, now_ns, idx as u32, size));
    mark_batch(batch_queued, to_send, idx);
}

/// Puts client `idx` on the turn's list of batches to send, once.
#[inline]
pub(super) fn mark_batch(batch_queued: &mut bool, to_send: &mut Vec<u32>, idx: usize) {
    if !*batch_queued {
        *batch_queued = true;
        to_send.push(idx as u32);
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
        self.clients.len()
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
        for idx in 0..self.clients.len() {
            let c = &mut self.clients[idx];
            if c.phase != Phase::Ready {
                continue;
            }
            for _ in 0..self.in_flight {
                enqueue_load(
                    &mut c.batch,
                    &mut c.batch_queued,
                    &mut self.to_send,
                    idx,
                    now,
                    self.payload_size,
                );
            }
            self.stats.count_sent(self.in_flight as u64);
        }
    }

    fn set_rate(&mut self, rate: f64) {
        self.pacer = Some(Pacer::new(self.now(), rate));
    }

    fn reset_window(&mut self) {
        self.stats.reset_window();
        self.figures = XhrFigures::default();
    }

    fn xhr_figures(&self) -> Option<XhrFigures> {
        Some(self.figures)
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
    /// send the batches, flush, start clients.
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
        let busy = !self.again.is_empty()
            || !self.dirty.is_empty()
            || !self.to_send.is_empty()
            || can_connect;
        // epoll rounds up to whole milliseconds: a paced send is at most
        // 1 ms late, and is stamped when it actually goes.
        let timeout = if busy {
            Duration::ZERO
        } else {
            Duration::from_nanos(wake.saturating_sub(now))
        };
        match self.poll.poll(events, Some(timeout)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("epoll_wait: {e}")),
        }
        for ev in events.iter() {
            let readable = ev.is_readable() || ev.is_read_closed() || ev.is_error();
            let writable = ev.is_writable() || ev.is_error();
            if ev.is_read_closed() {
                let (idx, leg) = split_token(ev.token().0);
                if let Some(c) = self.clients.get_mut(idx) {
                    c.leg(leg).peer_closed = true;
                }
            }
            self.on_event(ev.token().0, readable, writable);
        }
        if !self.again.is_empty() {
            for tok in std::mem::take(&mut self.again) {
                self.on_readable(tok as usize);
            }
        }
        let now = self.now();
        self.pace(now);
        self.send_batches();
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

    fn on_event(&mut self, tok: usize, readable: bool, writable: bool) {
        let (idx, leg) = split_token(tok);
        let c = &mut self.clients[idx];
        if matches!(c.phase, Phase::Waiting | Phase::Closed) {
            return;
        }
        let l = c.leg(leg);
        if l.stream.is_none() {
            return;
        }
        if l.connecting {
            if readable || writable {
                self.leg_connected(idx, leg);
            }
            return;
        }
        if writable && l.out.pending() > 0 {
            self.flush_leg(idx, leg);
        }
        if readable {
            self.on_readable(tok);
        }
    }

    fn on_readable(&mut self, tok: usize) {
        let (idx, leg) = split_token(tok);
        if leg == RECV {
            self.on_stream_readable(idx);
        } else {
            self.on_send_readable(idx);
        }
    }

    /// The session's stream carries messages now.
    pub(super) fn on_open(&mut self, idx: usize) {
        self.opening -= 1;
        self.ready += 1;
        if self.scenario == Scenario::Channels {
            let join = format!("join:c{}", idx / self.channel_size);
            let c = &mut self.clients[idx];
            c.batch
                .push(join.len(), |b| b.extend_from_slice(join.as_bytes()));
            mark_batch(&mut c.batch_queued, &mut self.to_send, idx);
        }
    }

    fn pace(&mut self, now: u64) {
        let Engine {
            pacer,
            clients,
            stats,
            to_send,
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
        let n = clients.len();
        for _ in 0..due {
            // Round robin over the clients still open.
            while clients[*rr].phase != Phase::Ready {
                *rr = (*rr + 1) % n;
            }
            let idx = *rr;
            *rr = (*rr + 1) % n;
            let c = &mut clients[idx];
            if c.batch.len_bytes() + c.send.out.pending() > BACKLOG_CAP {
                stats.count_backlogged();
                continue;
            }
            enqueue_load(
                &mut c.batch,
                &mut c.batch_queued,
                to_send,
                idx,
                now,
                *payload_size,
            );
            stats.count_sent(1);
        }
    }

    /// Every client with messages waiting and no `xhr_send` in flight sends
    /// them, as one request.
    fn send_batches(&mut self) {
        let mut list = std::mem::take(&mut self.to_send);
        for &i in &list {
            let idx = i as usize;
            let c = &mut self.clients[idx];
            c.batch_queued = false;
            if c.phase != Phase::Ready || c.sending != Sending::Idle || c.batch.is_empty() {
                // In flight: the answer sends the batch.
                continue;
            }
            c.request.clear();
            c.batch.write_send(&mut c.request, &c.base, &self.host);
            c.sending = Sending::InFlight { answered: false };
            if c.send.is_open() {
                c.send.out.buf.extend_from_slice(&c.request);
                queue_flush(&mut c.send.out, &mut self.dirty, token(idx, SEND).0 as u32);
            } else if c.send.stream.is_none() {
                // The request goes once the connection is up.
                self.open_leg(idx, SEND);
            }
        }
        list.clear();
        if self.to_send.is_empty() {
            self.to_send = list;
        }
    }

    fn flush_dirty(&mut self) {
        let mut dirty = std::mem::take(&mut self.dirty);
        for &tok in &dirty {
            let (idx, leg) = split_token(tok as usize);
            self.clients[idx].leg(leg).out.queued = false;
            self.flush_leg(idx, leg);
        }
        dirty.clear();
        if self.dirty.is_empty() {
            self.dirty = dirty;
        }
    }

    pub(super) fn flush_leg(&mut self, idx: usize, leg: usize) {
        let l = self.clients[idx].leg(leg);
        let Some(stream) = l.stream.as_mut() else {
            return;
        };
        if l.connecting {
            return;
        }
        if let Err(e) = l.out.flush(stream) {
            let why = format!("write failed: {e}");
            if leg == RECV {
                self.close_client(idx, Stop::Closed(why));
            } else {
                self.send_closed(idx, &why);
            }
        }
    }

    /// Closes a leg's socket, leaving the client as it is.
    pub(super) fn drop_leg(&mut self, idx: usize, leg: usize) {
        let l = self.clients[idx].leg(leg);
        if let Some(mut stream) = l.stream.take() {
            let _ = self.poll.registry().deregister(&mut stream);
        }
        l.connecting = false;
        l.peer_closed = false;
        l.reused = false;
        l.carry.clear();
        l.out.buf.clear();
        l.out.pos = 0;
    }

    /// Drops a client: during the connect phase it is retried (up to
    /// MAX_ATTEMPTS, with a new session), afterwards it is counted as closed.
    pub(super) fn close_client(&mut self, idx: usize, why: Stop) {
        self.drop_leg(idx, RECV);
        self.drop_leg(idx, SEND);
        let c = &mut self.clients[idx];
        let was = c.phase;
        if c.joined {
            self.joined -= 1;
        }
        c.reset();
        c.phase = Phase::Closed;
        if matches!(why, Stop::Protocol(_)) {
            self.stats.errors.protocol += 1;
        }
        match was {
            Phase::Opening => self.opening -= 1,
            Phase::Ready => self.ready -= 1,
            Phase::Waiting | Phase::Closed => return,
        }
        if !self.connect_phase_over {
            self.stats.errors.connect += 1;
            let c = &mut self.clients[idx];
            c.attempts += 1;
            if c.attempts >= MAX_ATTEMPTS {
                self.fatal = Some(format!(
                    "could not open session {idx} on {} after {MAX_ATTEMPTS} attempts: {why}",
                    self.dest
                ));
            } else {
                c.phase = Phase::Waiting;
                let at = self.now() + RETRY_DELAY_NS;
                self.retry.push_back((at, idx as u32));
            }
            return;
        }
        self.stats.errors.closed += 1;
        self.closes_seen += 1;
        if self.closes_seen <= CLOSES_REPORTED {
            eprintln!("progress: session {idx} lost: {why}");
        } else if self.closes_seen == CLOSES_REPORTED + 1 {
            eprintln!("progress: more sessions lost (counted in errors.closed)");
        }
        if self.ready == 0 {
            self.fatal = Some(format!(
                "the server went away: every session is closed (last: {why})"
            ));
        }
    }
}
