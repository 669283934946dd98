//! The HTTP closed loop on one thread: C keep-alive connections, each with
//! K requests outstanding (K = the pipelining depth), every complete
//! response sending the next request on its connection. The same loop as
//! the WebSocket engine's: edge-triggered epoll through mio, each readable
//! connection read into one shared buffer (`conn::pump`, a partial head
//! carried over in the connection's own buffer, bodies never buffered), and
//! the requests a read starts appended to the connection's outbox, written
//! with one `write(2)` per connection at the end of the loop turn.
//!
//! Every response is checked against the request it answers (responses come
//! in request order): status 200, the scenario's media type, and the body,
//! byte for byte as it streams through. A wrong answer counts in `bad`;
//! bytes that break HTTP/1.1 keep-alive (a malformed response, a response
//! to no request, `Connection: close`) count in `errors.protocol` and close
//! the connection. Lost connections are not reopened.

use std::collections::VecDeque;
use std::io;
use std::net::{SocketAddr, TcpStream as StdStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};

use super::request::{media_type_is, Workload};
use super::response::{Event, Framing, Parser};
use crate::conn::{pump, Outbox, ReadEnd};
use crate::metrics::Stats;
use crate::procfs::{Proc, Watch};

/// Reads per connection per readiness event before others get a turn.
const READ_BUDGET: usize = 4;
/// The shared read buffer: a busy connection's backlog comes in a few reads.
const SCRATCH_BYTES: usize = 256 << 10;
/// Lost connections reported one by one on stderr before going quiet.
const CLOSES_REPORTED: u64 = 5;

/// A request in flight: when it was written, and its number.
#[derive(Clone, Copy)]
struct Pending {
    sent_ns: u64,
    id: u64,
}

struct Conn {
    stream: Option<TcpStream>,
    /// The unparsed tail of the last read (a partial head or chunk line).
    carry: Vec<u8>,
    out: Outbox,
    parser: Parser,
    pending: VecDeque<Pending>,
    /// The response being read: body bytes so far, and what is wrong with
    /// it (the first thing).
    body_seen: u64,
    wrong: Option<String>,
}

/// What goes wrong, over the whole run (warm-up included).
#[derive(Default)]
pub struct Failures {
    /// Responses that were not the right answer.
    pub bad: u64,
    /// The first thing that went wrong, in words.
    pub first: Option<String>,
}

impl Failures {
    fn note(&mut self, what: impl FnOnce() -> String) {
        if self.first.is_none() {
            self.first = Some(what());
        }
    }
}

pub struct Engine {
    poll: Poll,
    clock: Instant,
    conns: Vec<Conn>,
    scratch: Vec<u8>,
    dirty: Vec<u32>,
    again: Vec<u32>,
    work: Workload,
    pipeline: u32,
    /// Requests are being sent (false before the start and after the stop).
    sending: bool,
    next_id: u64,
    pub stats: Stats,
    /// Response body bytes received in the measured window.
    pub body_bytes: u64,
    pub failures: Failures,
    open: usize,
    closes: u64,
    server: Watch,
}

/// The engine-wide parts a response handler needs, borrowed apart from
/// the connection.
struct Shared<'a> {
    work: &'a Workload,
    stats: &'a mut Stats,
    body_bytes: &'a mut u64,
    failures: &'a mut Failures,
    next_id: &'a mut u64,
    sending: bool,
}

impl Engine {
    /// Opens `connections` connections to `host:port` (blocking connects:
    /// on loopback they complete at once, and setting up is not measured).
    pub fn connect(
        host: &str,
        port: u16,
        connections: usize,
        work: Workload,
        pipeline: u32,
        server: Option<Proc>,
    ) -> Result<Engine, String> {
        let dest: SocketAddr = (host, port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {host}: {e}"))?
            .next()
            .ok_or_else(|| format!("{host} has no address"))?;
        let poll = Poll::new().map_err(|e| format!("epoll: {e}"))?;
        let mut conns = Vec::with_capacity(connections);
        for idx in 0..connections {
            let std = StdStream::connect(dest).map_err(|e| format!("connect to {dest}: {e}"))?;
            // Writes are batched per loop turn already; Nagle would only delay them.
            std.set_nodelay(true)
                .and_then(|()| std.set_nonblocking(true))
                .map_err(|e| format!("socket options: {e}"))?;
            let mut stream = TcpStream::from_std(std);
            poll.registry()
                .register(
                    &mut stream,
                    Token(idx),
                    Interest::READABLE | Interest::WRITABLE,
                )
                .map_err(|e| format!("epoll_ctl: {e}"))?;
            conns.push(Conn {
                stream: Some(stream),
                carry: Vec::new(),
                out: Outbox::default(),
                parser: Parser::new(),
                pending: VecDeque::with_capacity(pipeline as usize),
                body_seen: 0,
                wrong: None,
            });
        }
        Ok(Engine {
            poll,
            clock: Instant::now(),
            open: conns.len(),
            conns,
            scratch: vec![0u8; SCRATCH_BYTES],
            dirty: Vec::new(),
            again: Vec::new(),
            work,
            pipeline,
            sending: false,
            next_id: 0,
            stats: Stats::new(),
            body_bytes: 0,
            failures: Failures::default(),
            closes: 0,
            server: Watch::new(server),
        })
    }

    /// Nanoseconds since the engine started.
    #[inline]
    pub fn now(&self) -> u64 {
        self.clock.elapsed().as_nanos() as u64
    }

    /// Connections still open.
    pub fn connected(&self) -> usize {
        self.open
    }

    /// Lost connections (the server closed or reset them, or broke the protocol).
    pub fn closes(&self) -> u64 {
        self.closes
    }

    /// Every connection sends its first K requests; each response sends the next.
    pub fn start(&mut self) {
        self.sending = true;
        let now = self.now();
        for (idx, conn) in self.conns.iter_mut().enumerate() {
            if conn.stream.is_none() {
                continue;
            }
            for _ in 0..self.pipeline {
                let id = self.next_id;
                self.next_id += 1;
                self.work.write(id, &mut conn.out.buf);
                conn.pending.push_back(Pending { sent_ns: now, id });
            }
            self.stats.count_sent(u64::from(self.pipeline));
            if !conn.out.queued {
                conn.out.queued = true;
                self.dirty.push(idx as u32);
            }
        }
    }

    /// No more requests: responses still arriving are read but start nothing.
    pub fn stop(&mut self) {
        self.sending = false;
    }

    /// Runs the loop for `secs` seconds.
    pub fn run_for(&mut self, secs: f64) -> Result<(), String> {
        let deadline = self.now() + (secs * 1e9) as u64;
        let mut events = Events::with_capacity(1024);
        while self.now() < deadline {
            self.turn(&mut events, deadline)?;
            if self.open == 0 {
                return Err(format!(
                    "every connection is closed (first error: {})",
                    self.failures.first.as_deref().unwrap_or("none")
                ));
            }
        }
        Ok(())
    }

    fn turn(&mut self, events: &mut Events, deadline_ns: u64) -> Result<(), String> {
        let now = self.now();
        let timeout = if self.again.is_empty() && self.dirty.is_empty() {
            let wake = self
                .server
                .next_ns()
                .map_or(deadline_ns, |at| deadline_ns.min(at));
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
            if (ev.is_writable() || ev.is_error()) && self.conns[idx].out.pending() > 0 {
                self.flush(idx);
            }
            if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                self.on_readable(idx);
            }
        }
        if !self.again.is_empty() {
            for idx in std::mem::take(&mut self.again) {
                self.on_readable(idx as usize);
            }
        }
        for idx in std::mem::take(&mut self.dirty) {
            self.conns[idx as usize].out.queued = false;
            self.flush(idx as usize);
        }
        self.server.check(self.now())
    }

    fn on_readable(&mut self, idx: usize) {
        let Engine {
            conns,
            scratch,
            dirty,
            clock,
            work,
            stats,
            body_bytes,
            failures,
            next_id,
            sending,
            ..
        } = self;
        let conn = &mut conns[idx];
        let Conn {
            stream,
            carry,
            out,
            parser,
            pending,
            body_seen,
            wrong,
        } = conn;
        let Some(stream) = stream.as_mut() else {
            return;
        };
        let mut shared = Shared {
            work,
            stats,
            body_bytes,
            failures,
            next_id,
            sending: *sending,
        };
        let out_before = out.buf.len();
        let result = pump(stream, scratch, carry, READ_BUDGET, |buf| {
            // One clock read per read(2): every response in it arrived then.
            let now = clock.elapsed().as_nanos() as u64;
            parser.feed(buf, |ev| {
                on_event(
                    ev,
                    now,
                    pending,
                    body_seen,
                    wrong,
                    &mut out.buf,
                    &mut shared,
                )
            })
        });
        // The requests the responses started go at the end of the turn,
        // one write per connection. (Writing each connection's at once
        // instead measured no better: 150-155k against 165-177k responses/s
        // from uWebSockets.js at one in flight.)
        if out.buf.len() > out_before && !out.queued {
            out.queued = true;
            dirty.push(idx as u32);
        }
        match result {
            Ok(ReadEnd::Drained) => {}
            Ok(ReadEnd::Budget) => self.again.push(idx as u32),
            Ok(ReadEnd::Eof) => self.close(idx, "the server closed the connection".into(), false),
            Ok(ReadEnd::Error(e)) => self.close(idx, format!("read failed: {e}"), false),
            Err(e) => self.close(idx, e, true),
        }
    }

    fn flush(&mut self, idx: usize) {
        let conn = &mut self.conns[idx];
        let Some(stream) = conn.stream.as_mut() else {
            return;
        };
        if let Err(e) = conn.out.flush(stream) {
            self.close(idx, format!("write failed: {e}"), false);
        }
    }

    fn close(&mut self, idx: usize, why: String, protocol: bool) {
        let conn = &mut self.conns[idx];
        let Some(mut stream) = conn.stream.take() else {
            return;
        };
        let _ = self.poll.registry().deregister(&mut stream);
        conn.pending.clear();
        conn.out = Outbox::default();
        self.open -= 1;
        self.closes += 1;
        if protocol {
            self.stats.errors.protocol += 1;
        }
        self.stats.errors.closed += 1;
        self.failures.note(|| format!("connection {idx}: {why}"));
        if self.closes <= CLOSES_REPORTED {
            eprintln!("progress: connection {idx} lost: {why}");
        } else if self.closes == CLOSES_REPORTED + 1 {
            eprintln!("progress: more connections lost (counted in errors.closed)");
        }
    }
}

/// One parser event of a connection's response stream.
#[inline]
fn on_event(
    ev: Event<'_>,
    now: u64,
    pending: &mut VecDeque<Pending>,
    body_seen: &mut u64,
    wrong: &mut Option<String>,
    out: &mut Vec<u8>,
    s: &mut Shared<'_>,
) -> Result<(), String> {
    let Some(&Pending { sent_ns, id }) = pending.front() else {
        return Err("a response to no request".into());
    };
    let mut digits = [0u8; 20];
    let expected = s.work.expected(id, &mut digits);
    match ev {
        Event::Head(head) => {
            if head.close {
                return Err("Connection: close on a keep-alive connection".into());
            }
            *body_seen = 0;
            *wrong = if head.status != 200 {
                Some(format!("status {} (expected 200)", head.status))
            } else if !head
                .content_type
                .is_some_and(|t| media_type_is(t, s.work.kind.media_type()))
            {
                Some(format!(
                    "Content-Type {:?} (expected {})",
                    head.content_type.map(String::from_utf8_lossy),
                    s.work.kind.media_type()
                ))
            } else {
                match head.framing {
                    Framing::Length(n) if n != expected.len() as u64 => {
                        Some(format!("Content-Length {n} (expected {})", expected.len()))
                    }
                    _ => None,
                }
            };
        }
        Event::Body(bytes) => {
            let from = *body_seen as usize;
            let to = from + bytes.len();
            if wrong.is_none() && expected.get(from..to) != Some(bytes) {
                *wrong = Some(format!(
                    "a body that differs from the expected {} bytes within bytes {from}..{to}",
                    expected.len()
                ));
            }
            *body_seen = to as u64;
            if s.stats.measuring {
                *s.body_bytes += bytes.len() as u64;
            }
        }
        Event::End => {
            if wrong.is_none() && *body_seen != expected.len() as u64 {
                *wrong = Some(format!(
                    "a body of {} bytes (expected {})",
                    body_seen,
                    expected.len()
                ));
            }
            pending.pop_front();
            if let Some(why) = wrong.take() {
                s.failures.bad += 1;
                s.failures
                    .note(|| format!("{} {}: {why}", s.work.kind.method(), s.work.path));
            }
            s.stats.record(sent_ns, now);
            if s.sending {
                let id = *s.next_id;
                *s.next_id += 1;
                s.work.write(id, out);
                pending.push_back(Pending { sent_ns: now, id });
                s.stats.count_sent(1);
            }
        }
    }
    Ok(())
}
