//! The closed loop on one thread: C connections, each keeping K calls
//! outstanding, each answer sending the next call. Edge-triggered epoll
//! through mio, as the WebSocket loadgen: a readable connection is read
//! into one shared buffer (a partial answer is carried over in the
//! connection's own buffer), every answer in a read is handled in place,
//! and the calls they start are appended to the connection's outbox, which
//! is written with one `write(2)` per connection at the end of the loop
//! turn: the answers of one read become one write.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream as StdStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use switchboard_loadgen::procfs::{Proc, Watch};

use crate::latency::Latency;
use crate::report::Errors;
use crate::wire::{Answer, Codec};

/// Reads per connection per readiness event before others get a turn.
const READ_BUDGET: usize = 4;
/// The shared read buffer: a busy connection's backlog comes in a few reads.
const SCRATCH_BYTES: usize = 256 << 10;
/// How long the handshakes of all connections may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

struct Conn {
    stream: Option<TcpStream>,
    codec: Codec,
    /// Handshake done: calls may go.
    open: bool,
    /// Bytes of an answer cut off at the end of a read.
    rx: Vec<u8>,
    /// Bytes to write at the end of the turn.
    out: Vec<u8>,
    /// Listed in `Engine::dirty` already.
    queued: bool,
    /// Calls in flight, oldest first: (sequence number, sent at ns).
    pending: VecDeque<(u64, u64)>,
    next_seq: u64,
}

/// What the loop counts.
#[derive(Default)]
pub struct Counters {
    /// Within the measured window only: answers, right or wrong.
    pub ops: u64,
    pub errors: Errors,
}

pub struct Engine {
    poll: Poll,
    clock: Instant,
    conns: Vec<Conn>,
    scratch: Vec<u8>,
    dirty: Vec<u32>,
    again: Vec<u32>,
    in_flight: u32,
    /// Calls are being sent (false before the start and after the stop).
    sending: bool,
    /// The measured window is open.
    pub measuring: bool,
    pub latency: Latency,
    pub counters: Counters,
    open: usize,
    server: Watch,
}

/// Per-connection parts the answer handler needs, borrowed apart from the
/// bytes being parsed.
struct Parts<'a> {
    codec: &'a Codec,
    open: &'a mut bool,
    out: &'a mut Vec<u8>,
    pending: &'a mut VecDeque<(u64, u64)>,
    next_seq: &'a mut u64,
}

/// Engine-wide parts the answer handler needs.
struct Shared<'a> {
    sending: bool,
    measuring: bool,
    in_flight: u32,
    latency: &'a mut Latency,
    counters: &'a mut Counters,
}

impl Engine {
    pub fn new(
        host: &str,
        port: u16,
        codecs: Vec<Codec>,
        in_flight: u32,
        server: Option<Proc>,
    ) -> Result<Engine, String> {
        let dest: SocketAddr = (host, port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {host}: {e}"))?
            .next()
            .ok_or_else(|| format!("{host} has no address"))?;
        let poll = Poll::new().map_err(|e| format!("epoll: {e}"))?;
        let clock = Instant::now();
        // Seeds need variety, not secrecy: the wall clock and the pid do.
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let mut conns = Vec::with_capacity(codecs.len());
        for (idx, codec) in codecs.into_iter().enumerate() {
            // A blocking connect: on loopback it completes at once, and
            // setting up is never measured.
            let std = StdStream::connect(dest).map_err(|e| format!("connect to {dest}: {e}"))?;
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
            let mut out = Vec::with_capacity(4096);
            let x = wall
                ^ (u64::from(std::process::id()) << 32)
                ^ (idx as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let mut random = [0u8; 16];
            random[..8].copy_from_slice(&x.to_le_bytes());
            random[8..].copy_from_slice(&x.rotate_left(29).wrapping_mul(31).to_le_bytes());
            codec.greeting(random, &mut out);
            conns.push(Conn {
                stream: Some(stream),
                codec,
                open: false,
                rx: Vec::new(),
                out,
                queued: false,
                pending: VecDeque::with_capacity(in_flight as usize),
                next_seq: 1,
            });
        }
        let mut engine = Engine {
            poll,
            clock,
            dirty: (0..conns.len() as u32).collect(),
            conns,
            scratch: vec![0u8; SCRATCH_BYTES],
            again: Vec::new(),
            in_flight,
            sending: false,
            measuring: false,
            latency: Latency::new(),
            counters: Counters::default(),
            open: 0,
            server: Watch::new(server),
        };
        for conn in &mut engine.conns {
            conn.queued = true;
        }
        // Protocols without a handshake are open at once.
        for idx in 0..engine.conns.len() {
            let conn = &mut engine.conns[idx];
            if conn.codec.handshake(&[], in_flight)? == Some(0) {
                conn.open = true;
                engine.open += 1;
            }
        }
        Ok(engine)
    }

    /// Nanoseconds since the engine started.
    #[inline]
    pub fn now(&self) -> u64 {
        self.clock.elapsed().as_nanos() as u64
    }

    pub fn connections(&self) -> usize {
        self.conns.len()
    }

    /// Connections still open.
    pub fn connected(&self) -> usize {
        self.conns.iter().filter(|c| c.stream.is_some()).count()
    }

    /// Runs until every connection's handshake is done.
    pub fn handshake(&mut self) -> Result<(), String> {
        let deadline = self.now() + HANDSHAKE_TIMEOUT.as_nanos() as u64;
        let total = self.conns.len();
        self.run(deadline, |e| e.open == total)?;
        if self.open < total {
            return Err(format!(
                "{} of {total} connections finished their handshake within {} s",
                self.open,
                HANDSHAKE_TIMEOUT.as_secs()
            ));
        }
        Ok(())
    }

    /// Every connection sends its first K calls; each answer sends the next.
    pub fn start(&mut self) {
        self.sending = true;
        let now = self.now();
        for (idx, conn) in self.conns.iter_mut().enumerate() {
            if conn.stream.is_none() {
                continue;
            }
            for _ in 0..self.in_flight {
                let seq = conn.next_seq;
                conn.next_seq += 1;
                conn.codec.write_call(seq, &mut conn.out);
                conn.pending.push_back((seq, now));
            }
            if !conn.queued {
                conn.queued = true;
                self.dirty.push(idx as u32);
            }
        }
    }

    /// No more calls: answers still arriving are read but start nothing.
    pub fn stop(&mut self) {
        self.sending = false;
    }

    /// Runs the loop for `secs` seconds.
    pub fn run_for(&mut self, secs: f64) -> Result<(), String> {
        let deadline = self.now() + (secs * 1e9) as u64;
        self.run(deadline, |_| false)
    }

    fn run(&mut self, deadline_ns: u64, done: impl Fn(&Engine) -> bool) -> Result<(), String> {
        let mut events = Events::with_capacity(1024);
        loop {
            if done(self) || self.now() >= deadline_ns {
                return Ok(());
            }
            self.turn(&mut events, deadline_ns)?;
            if self.connected() == 0 {
                return Err(format!(
                    "every connection is closed (first error: {})",
                    self.counters.errors.first.as_deref().unwrap_or("none")
                ));
            }
        }
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
            if ev.is_writable() && !self.conns[idx].out.is_empty() {
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
            self.conns[idx as usize].queued = false;
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
            latency,
            counters,
            ..
        } = self;
        let mut shared = Shared {
            sending: self.sending,
            measuring: self.measuring,
            in_flight: self.in_flight,
            latency,
            counters,
        };
        let conn = &mut conns[idx];
        let Some(stream) = conn.stream.as_mut() else {
            return;
        };
        let was_open = conn.open;
        let out_before = conn.out.len();
        let mut end: Option<String> = None;
        let mut protocol = false;
        let mut drained = false;
        for _ in 0..READ_BUDGET {
            match stream.read(scratch) {
                Ok(0) => {
                    end = Some("the server closed the connection".into());
                    break;
                }
                Ok(n) => {
                    // One clock read per read(2): every answer in it arrived then.
                    let now = clock.elapsed().as_nanos() as u64;
                    let mut parts = Parts {
                        codec: &conn.codec,
                        open: &mut conn.open,
                        out: &mut conn.out,
                        pending: &mut conn.pending,
                        next_seq: &mut conn.next_seq,
                    };
                    let result = if conn.rx.is_empty() {
                        process(&scratch[..n], now, &mut parts, &mut shared)
                            .map(|used| conn.rx.extend_from_slice(&scratch[used..n]))
                    } else {
                        conn.rx.extend_from_slice(&scratch[..n]);
                        process(&conn.rx, now, &mut parts, &mut shared)
                            .map(|used| drop(conn.rx.drain(..used)))
                    };
                    if let Err(e) = result {
                        end = Some(e);
                        protocol = true;
                        break;
                    }
                    // A short read drained the socket: the next arrival
                    // raises a new edge, so the read that would say EAGAIN
                    // is saved.
                    if n < scratch.len() {
                        drained = true;
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    drained = true;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    end = Some(format!("read failed: {e}"));
                    break;
                }
            }
        }
        if !was_open && conn.open {
            self.open += 1;
        }
        let conn = &mut self.conns[idx];
        if conn.out.len() > out_before && !conn.queued {
            conn.queued = true;
            dirty.push(idx as u32);
        }
        match end {
            Some(why) => self.close(idx, why, protocol),
            // The budget ran out with bytes maybe left: read again next turn.
            None if !drained => self.again.push(idx as u32),
            None => {}
        }
    }

    fn flush(&mut self, idx: usize) {
        let conn = &mut self.conns[idx];
        let Some(stream) = conn.stream.as_mut() else {
            return;
        };
        let mut written = 0;
        let result = loop {
            if written == conn.out.len() {
                break Ok(());
            }
            match stream.write(&conn.out[written..]) {
                Ok(n) => written += n,
                // The rest goes when the socket raises its writable edge.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        if written == conn.out.len() {
            conn.out.clear();
        } else {
            conn.out.drain(..written);
        }
        if let Err(e) = result {
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
        let errors = &mut self.counters.errors;
        if protocol {
            errors.protocol += 1;
        }
        if conn.open {
            errors.closed += 1;
        } else {
            errors.connect += 1;
        }
        errors.note(|| format!("connection {idx}: {why}"));
        eprintln!("progress: connection {idx} lost: {why}");
    }
}

/// Handles every complete answer (or the handshake) at the start of `buf`;
/// returns the bytes used.
#[inline]
fn process(buf: &[u8], now: u64, c: &mut Parts, s: &mut Shared) -> Result<usize, String> {
    let mut at = 0;
    if !*c.open {
        match c.codec.handshake(buf, s.in_flight)? {
            None => return Ok(0),
            Some(n) => {
                *c.open = true;
                at = n;
            }
        }
    }
    while at < buf.len() {
        let Some((answer, used)) = c.codec.parse(&buf[at..], c.out)? else {
            break;
        };
        at += used;
        let (seq, bad) = match answer {
            Answer::Ok(seq) => (seq, None),
            Answer::Bad(seq, why) => (seq, Some(why)),
            Answer::Other => continue,
        };
        // Answers come in order on every protocol here; the search is for
        // a server that would answer out of order.
        let pos = match seq {
            None => 0,
            Some(seq) => c
                .pending
                .iter()
                .position(|&(s, _)| s == seq)
                .ok_or_else(|| format!("an answer to call {seq}, which is not in flight"))?,
        };
        let (_, sent) = c
            .pending
            .remove(pos)
            .ok_or("an answer with no call in flight")?;
        if let Some(why) = bad {
            s.counters.errors.bad += 1;
            s.counters.errors.note(|| why.to_string());
        }
        if s.measuring {
            s.counters.ops += 1;
            s.latency.record(now.saturating_sub(sent));
        }
        if s.sending {
            let seq = *c.next_seq;
            *c.next_seq += 1;
            c.codec.write_call(seq, c.out);
            c.pending.push_back((seq, now));
        }
    }
    Ok(at)
}
