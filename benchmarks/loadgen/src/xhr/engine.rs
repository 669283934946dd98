//! The xhr-streaming engine's loop: one epoll loop over every client's two
//! legs, pacing open-loop sends into the sessions' batches, sending the
//! batches, losing clients (opening and reopening legs is in `connect.rs`,
//! what arrives on them in `read.rs`; what it shares with the WebSocket
//! engine is in `../engine_core.rs`).

use mio::Events;

use super::client::{split_token, token, Client, Phase, Sending, RECV, SEND};
use super::request::Batch;
use crate::cli::Config;
use crate::dispatch::{queue_flush, Stop};
use crate::engine_core::{for_each_queued, readiness, EngineCore, LoadClient, Was, SESSIONS};
use crate::load::Load;
use crate::metrics::XhrFigures;
use crate::payload;
use crate::procfs::Proc;

pub struct Engine {
    pub(super) core: EngineCore,
    /// The `Host` header's value.
    pub(super) host: String,
    pub(super) endpoint: &'static str,
    pub(super) clients: Vec<Client>,
    pub(super) figures: XhrFigures,
    /// Clients with messages waiting: their batch goes at the end of the
    /// turn if no `xhr_send` of theirs is in flight.
    pub(super) to_send: Vec<u32>,
}

impl Engine {
    pub fn new(cfg: &Config, server: Option<Proc>) -> Result<Engine, String> {
        Ok(Engine {
            core: EngineCore::new(cfg, server, SESSIONS)?,
            host: format!("{}:{}", cfg.host, cfg.port),
            endpoint: cfg.scenario.endpoint(),
            clients: (0..cfg.connections).map(|_| Client::new()).collect(),
            figures: XhrFigures::default(),
            to_send: Vec::new(),
        })
    }
}

impl LoadClient for Client {
    fn is_ready(&self) -> bool {
        self.phase == Phase::Ready
    }

    /// The batch waiting and the `xhr_send` not yet written.
    fn backlog(&self) -> usize {
        self.batch.len_bytes() + self.send.out.pending()
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

/// One load message from client `idx` for `EngineCore::pace` and
/// `EngineCore::start_closed_loop`.
#[inline]
fn send_load(core: &mut EngineCore, to_send: &mut Vec<u32>, c: &mut Client, idx: usize, now: u64) {
    let size = core.payload_size;
    enqueue_load(&mut c.batch, &mut c.batch_queued, to_send, idx, now, size);
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
    fn core(&self) -> &EngineCore {
        &self.core
    }

    fn core_mut(&mut self) -> &mut EngineCore {
        &mut self.core
    }

    fn total(&self) -> usize {
        self.clients.len()
    }

    fn start_closed_loop(&mut self) {
        let Engine {
            core,
            clients,
            to_send,
            ..
        } = self;
        core.start_closed_loop(clients, |core, c, idx, now| {
            send_load(core, to_send, c, idx, now)
        });
    }

    fn reset_window(&mut self) {
        self.core.stats.reset_window();
        self.figures = XhrFigures::default();
    }

    fn xhr_figures(&self) -> Option<XhrFigures> {
        Some(self.figures)
    }

    /// Reads, paces, sends the batches, flushes, starts clients.
    fn turn(&mut self, events: &mut Events, deadline_ns: u64) -> Result<(), String> {
        self.core
            .wait(events, deadline_ns, !self.to_send.is_empty())?;
        for ev in events.iter() {
            let (readable, writable) = readiness(ev);
            if ev.is_read_closed() {
                let (idx, leg) = split_token(ev.token().0);
                if let Some(c) = self.clients.get_mut(idx) {
                    c.leg(leg).peer_closed = true;
                }
            }
            self.on_event(ev.token().0, readable, writable);
        }
        for_each_queued(
            self,
            |e| &mut e.core.again,
            |e, tok| e.on_readable(tok as usize),
        );
        let now = self.core.now();
        self.pace(now);
        self.send_batches();
        self.flush_dirty();
        self.start_connects(now);
        self.core.check_alive(now)
    }
}

impl Engine {
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
        let Some(join) = self.core.opened(idx) else {
            return;
        };
        let c = &mut self.clients[idx];
        c.batch
            .push(join.len(), |b| b.extend_from_slice(join.as_bytes()));
        mark_batch(&mut c.batch_queued, &mut self.to_send, idx);
    }

    fn pace(&mut self, now: u64) {
        let Engine {
            core,
            clients,
            to_send,
            ..
        } = self;
        core.pace(clients, now, |core, c, idx, now| {
            send_load(core, to_send, c, idx, now)
        });
    }

    /// Every client with messages waiting and no `xhr_send` in flight sends
    /// them, as one request.
    fn send_batches(&mut self) {
        for_each_queued(self, |e| &mut e.to_send, |e, i| e.send_batch(i as usize));
    }

    fn send_batch(&mut self, idx: usize) {
        let c = &mut self.clients[idx];
        c.batch_queued = false;
        if c.phase != Phase::Ready || c.sending != Sending::Idle || c.batch.is_empty() {
            // In flight: the answer sends the batch.
            return;
        }
        c.request.clear();
        c.batch.write_send(&mut c.request, &c.base, &self.host);
        c.sending = Sending::InFlight { answered: false };
        if c.send.is_open() {
            c.send.out.buf.extend_from_slice(&c.request);
            queue_flush(
                &mut c.send.out,
                &mut self.core.dirty,
                token(idx, SEND).0 as u32,
            );
        } else if c.send.stream.is_none() {
            // The request goes once the connection is up.
            self.open_leg(idx, SEND);
        }
    }

    fn flush_dirty(&mut self) {
        for_each_queued(
            self,
            |e| &mut e.core.dirty,
            |e, tok| {
                let (idx, leg) = split_token(tok as usize);
                e.clients[idx].leg(leg).out.queued = false;
                e.flush_leg(idx, leg);
            },
        );
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
            let _ = self.core.poll.registry().deregister(&mut stream);
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
        let was = match c.phase {
            Phase::Opening => Was::Opening,
            Phase::Ready => Was::Ready,
            Phase::Waiting | Phase::Closed => Was::Neither,
        };
        let joined = c.joined;
        c.reset();
        c.phase = Phase::Closed;
        if self.core.lost(idx, was, joined, &mut c.attempts, why) {
            c.phase = Phase::Waiting;
        }
    }
}
