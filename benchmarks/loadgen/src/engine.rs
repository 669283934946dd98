//! The WebSocket engine's single-threaded event loop: reading and writing
//! connections with edge-triggered epoll through mio, pacing open-loop
//! sends, losing connections (opening them is in `connect.rs`; the counts,
//! retries, pacing and the wait for readiness it shares with the
//! xhr-streaming engine are in `engine_core.rs`).

use mio::Events;

use crate::cli::{Config, PUBLISH_ENDPOINT};
use crate::conn::{pump, Conn, Phase, ReadEnd};
use crate::dispatch::{self, ConnParts, Ctx, Stop};
use crate::engine_core::{
    for_each_queued, readiness, EngineCore, LoadClient, Was, CONNECTIONS, READ_BUDGET,
};
use crate::load::Load;
use crate::procfs::Proc;
use crate::protocols::Codec;

mod connect;
#[cfg(test)]
mod selftest;

pub struct Engine {
    core: EngineCore,
    /// The upgrade request's `Host` header is `host:port`.
    host: String,
    port: u16,
    conns: Vec<Conn>,
    codec: Codec,
    /// fanout: the publishers' framing (endpoint `/publish`), their port,
    /// and how many they are (clients `0..publishers`).
    publish: Option<(Codec, u16, usize)>,
}

impl Engine {
    pub fn new(cfg: &Config, server: Option<Proc>) -> Result<Engine, String> {
        Ok(Engine {
            core: EngineCore::new(cfg, server, CONNECTIONS)?,
            host: cfg.host.clone(),
            port: cfg.port,
            conns: (0..cfg.clients()).map(|_| Conn::new()).collect(),
            codec: Codec::new(cfg.protocol, cfg.scenario.endpoint()),
            publish: (cfg.senders_apart() > 0).then(|| {
                (
                    Codec::new(cfg.protocol, PUBLISH_ENDPOINT),
                    cfg.publish_port.unwrap_or(cfg.port),
                    cfg.senders_apart(),
                )
            }),
        })
    }
}

/// Client `idx`'s framing: a publisher's in fanout, else the scenario's.
#[inline]
fn codec_of<'a>(
    codec: &'a Codec,
    publish: &'a Option<(Codec, u16, usize)>,
    idx: usize,
) -> &'a Codec {
    match publish {
        Some((c, _, n)) if idx < *n => c,
        _ => codec,
    }
}

impl LoadClient for Conn {
    fn is_ready(&self) -> bool {
        self.phase == Phase::Ready
    }

    fn backlog(&self) -> usize {
        self.out.pending()
    }
}

/// Queues one load message from connection `idx`, stamped `now`.
#[inline]
fn send_load(core: &mut EngineCore, codec: &Codec, conn: &mut Conn, idx: usize, now: u64) {
    let size = core.payload_size;
    dispatch::write_load(&mut conn.out, codec, &mut core.rng, now, idx as u32, size);
    dispatch::queue_flush(&mut conn.out, &mut core.dirty, idx as u32);
}

impl Load for Engine {
    fn core(&self) -> &EngineCore {
        &self.core
    }

    fn core_mut(&mut self) -> &mut EngineCore {
        &mut self.core
    }

    fn total(&self) -> usize {
        self.conns.len()
    }

    fn start_closed_loop(&mut self) {
        let Engine {
            core,
            conns,
            codec,
            publish,
            ..
        } = self;
        core.start_closed_loop(conns, |core, conn, idx, now| {
            send_load(core, codec_of(codec, publish, idx), conn, idx, now)
        });
    }

    /// Reads, paces, flushes, starts connections.
    fn turn(&mut self, events: &mut Events, deadline_ns: u64) -> Result<(), String> {
        self.core.wait(events, deadline_ns, false)?;
        for ev in events.iter() {
            let (readable, writable) = readiness(ev);
            self.on_event(ev.token().0, readable, writable);
        }
        for_each_queued(
            self,
            |e| &mut e.core.again,
            |e, idx| e.on_readable(idx as usize),
        );
        let now = self.core.now();
        self.pace(now);
        self.flush_dirty();
        self.start_connects(now);
        self.core.check_alive(now)
    }
}

impl Engine {
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
            core,
            conns,
            codec,
            publish,
            ..
        } = self;
        let codec = codec_of(codec, publish, idx);
        let EngineCore {
            scratch,
            rng,
            stats,
            dirty,
            joined,
            clock,
            closed_loop,
            payload_size,
            ..
        } = core;
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
            closed_loop: *closed_loop,
            payload_size: *payload_size,
            opened: false,
        };
        let result = pump(stream, scratch, carry, READ_BUDGET, |buf| {
            // One clock read per read(2): every message in it arrived then.
            let now = clock.now();
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
            Ok(ReadEnd::Budget) => self.core.again.push(idx as u32),
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
        let Some(join) = self.core.opened(idx) else {
            return;
        };
        let conn = &mut self.conns[idx];
        codec_of(&self.codec, &self.publish, idx).write_message(
            &mut conn.out.buf,
            &mut self.core.rng,
            join.len(),
            |b| b.extend_from_slice(join.as_bytes()),
        );
        dispatch::queue_flush(&mut conn.out, &mut self.core.dirty, idx as u32);
    }

    fn pace(&mut self, now: u64) {
        let Engine {
            core,
            conns,
            codec,
            publish,
            ..
        } = self;
        core.pace(conns, now, |core, conn, idx, now| {
            send_load(core, codec_of(codec, publish, idx), conn, idx, now)
        });
    }

    fn flush_dirty(&mut self) {
        for_each_queued(
            self,
            |e| &mut e.core.dirty,
            |e, idx| {
                e.conns[idx as usize].out.queued = false;
                e.flush_one(idx as usize);
            },
        );
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
        let was = match conn.phase {
            p if p.opening() => Was::Opening,
            Phase::Ready => Was::Ready,
            _ => Was::Neither,
        };
        if let Some(mut stream) = conn.stream.take() {
            // Best effort, so a close frame's answer reaches the server.
            let _ = conn.out.flush(&mut stream);
            let _ = self.core.poll.registry().deregister(&mut stream);
        }
        let joined = conn.joined;
        conn.reset();
        conn.phase = Phase::Closed;
        if self.core.lost(idx, was, joined, &mut conn.attempts, why) {
            conn.phase = Phase::Waiting;
        }
    }
}
