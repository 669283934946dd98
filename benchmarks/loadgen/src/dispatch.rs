//! What each byte a server sends does: the upgrade answer, then frames, then
//! the framing protocol's packets, then the scenario's payloads. This is the
//! per-message path, so it allocates nothing and writes replies into the
//! connection's outbox (flushed once at the end of the loop turn).

use crate::conn::{Outbox, Phase};
use crate::frame::{self, Deframer, Flow, Msg, XorShift, OP_CLOSE, OP_PONG};
use crate::handshake;
use crate::metrics::Stats;
use crate::payload;
use crate::protocols::{Codec, Event};

/// Why a connection stops being read.
#[derive(Debug, PartialEq, Eq)]
pub enum Stop {
    /// The HTTP upgrade failed.
    Upgrade(String),
    /// The server broke the WebSocket or framing protocol.
    Protocol(String),
    /// The server closed the connection or ended the session.
    Closed(String),
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Upgrade(m) | Stop::Closed(m) => f.write_str(m),
            Stop::Protocol(m) => write!(f, "protocol error: {m}"),
        }
    }
}

/// Everything outside the connection that its messages touch.
pub struct Ctx<'a> {
    pub idx: u32,
    pub codec: &'a Codec,
    pub rng: &'a mut XorShift,
    pub stats: &'a mut Stats,
    /// Connections with bytes to flush at the end of the loop turn.
    pub dirty: &'a mut Vec<u32>,
    /// channels: how many connections have been answered `joined`.
    pub joined_total: &'a mut usize,
    /// Whether a connection's own message coming back sends its next one.
    pub closed_loop: bool,
    pub payload_size: usize,
    /// Set when this connection became ready to carry messages.
    pub opened: bool,
}

/// The connection's own state that its messages change.
pub struct ConnParts<'a> {
    pub phase: &'a mut Phase,
    pub rx: &'a mut Deframer,
    pub out: &'a mut Outbox,
    pub joined: &'a mut bool,
}

/// Puts the connection on the turn's flush list once.
#[inline]
pub fn queue_flush(out: &mut Outbox, dirty: &mut Vec<u32>, idx: u32) {
    if !out.queued {
        out.queued = true;
        dirty.push(idx);
    }
}

/// Appends one load message stamped `now_ns` from connection `idx`.
#[inline]
pub fn write_load(
    out: &mut Outbox,
    codec: &Codec,
    rng: &mut XorShift,
    now_ns: u64,
    idx: u32,
    size: usize,
) {
    codec.write_message(&mut out.buf, rng, size, |b| {
        payload::write(b, now_ns, idx, size)
    });
}

/// Appends a control frame (pong or close) echoing `body`.
fn write_control(out: &mut Outbox, rng: &mut XorShift, opcode: u8, body: &[u8]) {
    let mask = rng.next_mask();
    let start = frame::begin_masked(&mut out.buf, opcode, body.len(), mask);
    out.buf.extend_from_slice(body);
    frame::finish_masked(&mut out.buf, start, mask);
}

/// Handles the bytes buffered for one connection (received at `now_ns`);
/// returns how many it consumed (the rest is an incomplete frame).
#[inline]
pub fn process(buf: &[u8], now_ns: u64, cx: &mut Ctx<'_>, c: ConnParts<'_>) -> Result<usize, Stop> {
    let ConnParts {
        phase,
        rx,
        out,
        joined,
    } = c;
    let mut start = 0;
    if let Phase::Upgrading { accept } = *phase {
        match handshake::parse_response(buf, &accept) {
            Ok(None) => return Ok(0),
            Ok(Some(head)) => {
                start = head;
                if cx.codec.ready_on_upgrade() {
                    *phase = Phase::Ready;
                    cx.opened = true;
                } else {
                    *phase = Phase::Opening;
                }
            }
            Err(e) => return Err(Stop::Upgrade(e)),
        }
    }
    let codec = cx.codec;
    let idx = cx.idx;
    let mut stop = None;
    let used = rx
        .feed(&buf[start..], |msg| {
            match msg {
                Msg::Text(text) => {
                    let decoded = codec.decode(text, |ev| match ev {
                        Event::Payload(p) if *phase == Phase::Ready => {
                            if let Some((sent_ns, sender)) = payload::parse(p) {
                                cx.stats.record(sent_ns, now_ns);
                                // Echo replies and channels' own replies are
                                // the sender's; broadcasts are someone else's.
                                if cx.closed_loop && sender == idx {
                                    write_load(out, codec, cx.rng, now_ns, idx, cx.payload_size);
                                    cx.stats.count_sent(1);
                                    queue_flush(out, cx.dirty, idx);
                                }
                            } else if p == b"joined" {
                                if !*joined {
                                    *joined = true;
                                    *cx.joined_total += 1;
                                }
                            } else {
                                // Unknown payloads are counted, not fatal.
                                cx.stats.errors.protocol += 1;
                            }
                        }
                        Event::Payload(_) => {
                            stop = Some(Stop::Protocol("message before the session opened".into()));
                        }
                        Event::Open => {
                            if *phase == Phase::Opening {
                                if let Some(join) = codec.namespace_join() {
                                    Codec::write_raw(&mut out.buf, cx.rng, join);
                                    queue_flush(out, cx.dirty, idx);
                                    *phase = Phase::Joining;
                                } else {
                                    *phase = Phase::Ready;
                                    cx.opened = true;
                                }
                            }
                        }
                        Event::NamespaceJoined => {
                            if *phase == Phase::Joining {
                                *phase = Phase::Ready;
                                cx.opened = true;
                            }
                        }
                        Event::Ping => {
                            Codec::write_raw(&mut out.buf, cx.rng, b"3");
                            queue_flush(out, cx.dirty, idx);
                        }
                        Event::Closed => {
                            stop = Some(Stop::Closed("the server ended the session".into()))
                        }
                    });
                    if let Err(e) = decoded {
                        stop = Some(Stop::Protocol(e.0));
                    }
                }
                Msg::Binary(_) => cx.stats.errors.protocol += 1,
                Msg::Ping(body) => {
                    write_control(out, cx.rng, OP_PONG, body);
                    queue_flush(out, cx.dirty, idx);
                }
                Msg::Pong => {}
                Msg::Close(code) => {
                    // Answer the close handshake; the engine flushes it
                    // before dropping the socket.
                    let body = code.map(u16::to_be_bytes);
                    write_control(
                        out,
                        cx.rng,
                        OP_CLOSE,
                        body.as_ref().map_or(&[][..], |b| &b[..]),
                    );
                    let code = code.map_or("no code".to_string(), |c| format!("code {c}"));
                    stop = Some(Stop::Closed(format!(
                        "the server closed the WebSocket ({code})"
                    )));
                }
            }
            if stop.is_some() {
                Flow::Stop
            } else {
                Flow::Continue
            }
        })
        .map_err(|e| Stop::Protocol(e.to_string()))?;
    match stop {
        Some(s) => Err(s),
        None => Ok(start + used),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocols::Protocol;

    struct Harness {
        codec: Codec,
        rng: XorShift,
        stats: Stats,
        dirty: Vec<u32>,
        joined_total: usize,
        phase: Phase,
        rx: Deframer,
        out: Outbox,
        joined: bool,
        opened: bool,
    }

    impl Harness {
        fn new(protocol: Protocol, phase: Phase) -> Harness {
            let mut stats = Stats::new();
            stats.measuring = true;
            Harness {
                codec: Codec::new(protocol, "channels"),
                rng: XorShift::new(1),
                stats,
                dirty: Vec::new(),
                joined_total: 0,
                phase,
                rx: Deframer::new(1 << 20),
                out: Outbox::default(),
                joined: false,
                opened: false,
            }
        }

        fn feed(&mut self, bytes: &[u8], closed_loop: bool) -> Result<usize, Stop> {
            let mut cx = Ctx {
                idx: 7,
                codec: &self.codec,
                rng: &mut self.rng,
                stats: &mut self.stats,
                dirty: &mut self.dirty,
                joined_total: &mut self.joined_total,
                closed_loop,
                payload_size: 32,
                opened: false,
            };
            let parts = ConnParts {
                phase: &mut self.phase,
                rx: &mut self.rx,
                out: &mut self.out,
                joined: &mut self.joined,
            };
            let r = process(bytes, 5_000_000, &mut cx, parts);
            self.opened |= cx.opened;
            r
        }
    }

    fn text(t: &[u8]) -> Vec<u8> {
        let mut f = vec![0x81, t.len() as u8];
        f.extend_from_slice(t);
        f
    }

    #[test]
    fn own_reply_sends_next_others_do_not() {
        let mut h = Harness::new(Protocol::Ws, Phase::Ready);
        let mut bytes = text(b"00000000000f424000000007xxxxxxxx"); // own, sent at 1 ms
        bytes.extend(text(b"00000000000f424000000003xxxxxxxx")); // someone else's
        bytes.extend(text(b"joined"));
        bytes.extend_from_slice(&[0x81, 0x05, b'p']); // an incomplete frame
        assert_eq!(h.feed(&bytes, true), Ok(bytes.len() - 3));
        assert_eq!((h.stats.received, h.stats.sent), (2, 1));
        assert_eq!(h.stats.latency().max, Some(4000));
        assert_eq!((h.joined, h.joined_total), (true, 1));
        assert_eq!(h.dirty, [7]);
        // One masked 32-byte text frame went out.
        assert_eq!(h.out.buf.len(), 2 + 4 + 32);
        assert_eq!(&h.out.buf[..2], &[0x81, 0x80 | 32]);
    }

    /// The user-space cost per received message (frame, protocol, stamp,
    /// histogram), without the kernel's: run with
    /// `cargo test --release -p switchboard-loadgen -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn parse_throughput() {
        for protocol in [Protocol::Ws, Protocol::SocketIo, Protocol::SockJs] {
            let mut h = Harness::new(protocol, Phase::Ready);
            let one = match protocol {
                Protocol::Ws => b"00000000000f424000000003xxxxxxxx".to_vec(),
                Protocol::SocketIo => {
                    br#"42/channels,["m","00000000000f424000000003xxxxxxxx"]"#.to_vec()
                }
                Protocol::SockJs => br#"a["00000000000f424000000003xxxxxxxx"]"#.to_vec(),
            };
            let buf: Vec<u8> = (0..4096).flat_map(|_| text(&one)).collect();
            let rounds = 500;
            let t = std::time::Instant::now();
            for _ in 0..rounds {
                assert_eq!(h.feed(&buf, false), Ok(buf.len()));
            }
            let per_msg = t.elapsed().as_nanos() as f64 / (rounds * 4096) as f64;
            println!(
                "{protocol:?}: {per_msg:.1} ns per message, {:.1} M messages/s",
                1e3 / per_msg
            );
            assert_eq!(h.stats.received, rounds as u64 * 4096);
        }
    }

    #[test]
    fn socketio_open_join_ping() {
        let mut h = Harness::new(
            Protocol::SocketIo,
            Phase::Upgrading {
                accept: handshake::accept_for("k"),
            },
        );
        let head = format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n\r\n",
            String::from_utf8(handshake::accept_for("k").to_vec()).unwrap()
        );
        let mut bytes = head.into_bytes();
        bytes.extend(text(br#"0{"sid":"a","pingInterval":25000}"#));
        assert!(h.feed(&bytes, false).is_ok());
        assert_eq!(h.phase, Phase::Joining);
        assert!(!h.opened);
        assert!(!h.out.buf.is_empty(), "namespace join queued");
        assert_eq!(
            h.feed(&text(br#"40/channels,{"sid":"b"}"#), false)
                .map(|_| ()),
            Ok(())
        );
        assert_eq!(h.phase, Phase::Ready);
        assert!(h.opened);
        let before = h.out.buf.len();
        h.feed(&text(b"2"), false).unwrap();
        assert_eq!(h.out.buf.len(), before + 2 + 4 + 1, "pong `3`");
        h.feed(
            &text(br#"42/channels,["m","00000000000f424000000001xxxxxxxx"]"#),
            false,
        )
        .unwrap();
        assert_eq!(h.stats.received, 1);
    }

    #[test]
    fn sockjs_batch_and_close() {
        let mut h = Harness::new(Protocol::SockJs, Phase::Opening);
        h.feed(&text(b"o"), false).unwrap();
        assert!(h.opened);
        h.feed(
            &text(br#"a["00000000000f424000000001xxxxxxxx","00000000000f424000000002xxxxxxxx"]"#),
            false,
        )
        .unwrap();
        assert_eq!(h.stats.received, 2);
        assert!(matches!(
            h.feed(&text(br#"c[3000,"Go away!"]"#), false),
            Err(Stop::Closed(_))
        ));
    }

    #[test]
    fn ping_close_and_errors() {
        let mut h = Harness::new(Protocol::Ws, Phase::Ready);
        h.feed(&[0x89, 0x02, b'h', b'i'], false).unwrap();
        assert_eq!(&h.out.buf[..2], &[0x8A, 0x82]);
        let r = h.feed(&[0x88, 0x02, 0x03, 0xE8, 0x81, 0x01, b'x'], false);
        assert_eq!(
            r,
            Err(Stop::Closed(
                "the server closed the WebSocket (code 1000)".into()
            ))
        );
        let mut h = Harness::new(Protocol::Ws, Phase::Ready);
        assert!(matches!(
            h.feed(&[0x81, 0x81, 1, 2, 3, 4, 5], false),
            Err(Stop::Protocol(_))
        ));
        let mut h = Harness::new(Protocol::SockJs, Phase::Opening);
        assert!(matches!(
            h.feed(&text(br#"a["early"]"#), false),
            Err(Stop::Protocol(_))
        ));
        let mut h = Harness::new(Protocol::Ws, Phase::Upgrading { accept: [b'A'; 28] });
        assert!(matches!(
            h.feed(b"HTTP/1.1 400 Bad Request\r\n\r\n", false),
            Err(Stop::Upgrade(_))
        ));
    }
}
