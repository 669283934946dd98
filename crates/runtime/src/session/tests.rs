//! The session as a state machine, with no socket and no clock: bytes,
//! queued items, shutdown and times go in; the frames it writes, the events
//! its worker hears and its phase come out.

use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use switchboard_proto::rpc::{self, Frame, Hello, Settings};
use switchboard_proto::ws::encoder::{close_payload, frame};
use switchboard_proto::ws::{Decoder, DecoderConfig, Event, Flow, OpCode, Role};

use super::*;
use crate::config::{RouteConfig, ServerConfig, SlowConsumerPolicy};
use crate::opening::Accepted;
use crate::outbound::SendStatus;
use crate::wake::WakeTarget;

const MASK: Option<[u8; 4]> = Some([1, 2, 3, 4]);

pub(super) struct Harness {
    pub(super) server: Arc<ServerState>,
    pub(super) session: Session,
    /// Everything the session wrote so far.
    pub(super) wire: Vec<u8>,
    /// How many more bytes the "socket" takes (`usize::MAX`: all).
    room: usize,
    t0: Instant,
    /// The time of the latest input (what a flush is given).
    now: Instant,
}

fn config(route: RouteConfig) -> ServerConfig {
    ServerConfig {
        routes: vec![route],
        workers: 1,
        ..ServerConfig::default()
    }
}

pub(super) fn start(config: ServerConfig, kind: ConnectionKind) -> Harness {
    let server = Arc::new(ServerState::new(config).expect("valid routes"));
    let t0 = Instant::now();
    let accepted = Accepted {
        id: 7,
        worker: 0,
        kind,
        route: kind.is_websocket().then_some(0),
        transport: if kind == ConnectionKind::RpcStream {
            Transport::Tcp
        } else {
            Transport::WebSocket
        },
        remote: "127.0.0.1:1".into(),
        protocol: String::new(),
        extensions: String::new(),
        deflate: None,
        tls: None,
    };
    let session = Session::start(accepted, server.clone(), WakeTarget::none(), t0);
    Harness {
        server,
        session,
        wire: Vec::new(),
        room: usize::MAX,
        t0,
        now: t0,
    }
}

fn websocket(route: RouteConfig) -> Harness {
    start(config(route), ConnectionKind::WebSocket)
}

fn rpc_stream() -> Harness {
    start(config(RouteConfig::new("/")), ConnectionKind::RpcStream)
}

impl Harness {
    pub(super) fn at(&self, ms: u64) -> Instant {
        self.t0 + Duration::from_millis(ms)
    }

    /// How many more bytes the "socket" takes (`usize::MAX`: all).
    pub(super) fn set_room(&mut self, room: usize) {
        self.room = room;
    }

    pub(super) fn feed(&mut self, bytes: &[u8], ms: u64) {
        let mut bytes = bytes.to_vec();
        let now = self.at(ms);
        self.now = now;
        self.session.on_bytes(&mut bytes, now);
    }

    /// Queue `item` as another thread would, and hand the queue over.
    pub(super) fn outbound(&mut self, ms: u64) -> Step {
        let mut items = VecDeque::new();
        let taken = self.session.connection().outbound.take(&mut items);
        let now = self.at(ms);
        self.now = now;
        self.session.on_outbound(&mut items, taken, now)
    }

    pub(super) fn flush(&mut self) {
        let now = self.now;
        let (wire, room) = (&mut self.wire, &mut self.room);
        self.session
            .flush(
                |slices: &[IoSlice<'_>]| {
                    if *room == 0 {
                        return Err(io::ErrorKind::WouldBlock.into());
                    }
                    let mut n = 0;
                    for slice in slices {
                        let take = slice.len().min(*room - n);
                        wire.extend_from_slice(&slice[..take]);
                        n += take;
                        if n == *room {
                            break;
                        }
                    }
                    if *room != usize::MAX {
                        *room -= n;
                    }
                    Ok(n)
                },
                now,
            )
            .unwrap();
    }

    pub(super) fn events(&self) -> Vec<String> {
        events_of(&self.server)
    }

    /// The frames written, as a client decodes them.
    pub(super) fn frames(&mut self) -> Vec<String> {
        let mut decoder = Decoder::new(DecoderConfig {
            role: Role::Client,
            ..DecoderConfig::default()
        });
        let mut out = Vec::new();
        let mut wire = std::mem::take(&mut self.wire);
        decoder
            .feed(&mut wire, |event| {
                out.push(match event {
                    Event::Text(p) => format!("text {}", String::from_utf8_lossy(p)),
                    Event::Binary(p) => format!("binary {}", p.len()),
                    Event::Ping(_) => "ping".into(),
                    Event::Pong(p) => format!("pong {}", String::from_utf8_lossy(p)),
                    Event::Close(c) => format!("close {}", c.code.unwrap_or(0)),
                });
                Flow::Continue
            })
            .unwrap();
        out
    }

    /// End the session; the events its worker hears last.
    pub(super) fn finish(self, fallback: (u16, String)) -> Vec<String> {
        let server = self.server.clone();
        self.session.finish(fallback);
        events_of(&server)
    }

    fn outbound_buffered(&self) -> usize {
        self.session.connection().outbound.buffered()
    }
}

/// The records the worker would drain, one string each.
pub(super) fn events_of(server: &ServerState) -> Vec<String> {
    let drained = server.queues[0].drain();
    let mut out = Vec::new();
    let mut at = 0;
    while at < drained.events.len() {
        let (record, used) = crate::events::Record::read(&drained.events[at..]).unwrap();
        out.push(match record {
            Record::Open { id, .. } => format!("open {id}"),
            Record::Message { payload, .. } => {
                format!("message {}", String::from_utf8_lossy(payload))
            }
            Record::Close { code, reason, .. } => format!("close {code} {reason}"),
            Record::Drain { .. } => "drain".into(),
            Record::RpcOpen { .. } => "rpc-open".into(),
            Record::HttpOpen { .. } => "http-open".into(),
            Record::HttpRequest {
                route,
                path,
                query,
                params,
                flags,
                ..
            } => format!("request {route} {path}?{query} {params:?} flags {flags}"),
            Record::HttpBody { last, data, .. } => {
                format!("body {} {last}", String::from_utf8_lossy(data))
            }
            // The same line: which way a piece travels is checked apart.
            Record::HttpBodyOwned { last, index, .. } => {
                let data = &drained.owned[index as usize];
                format!("body {} {last}", String::from_utf8_lossy(data))
            }
            Record::HttpBodyError { status, .. } => format!("body-error {status}"),
            other => format!("{other:?}"),
        });
        at += used;
    }
    out
}

pub(super) fn client(opcode: OpCode, payload: &[u8]) -> Vec<u8> {
    frame(opcode, payload, MASK)
}

#[test]
fn a_websocket_opens_and_delivers_its_messages() {
    let mut h = websocket(RouteConfig::new("/"));
    let mut bytes = client(OpCode::Text, b"hello");
    bytes.extend(client(OpCode::Binary, b"xy"));
    h.feed(&bytes, 1);
    assert_eq!(h.events(), ["open 7", "message hello", "message xy"]);
    assert_eq!(
        h.server
            .stats
            .messages_in
            .load(std::sync::atomic::Ordering::Relaxed),
        2
    );
    assert!(h.server.connection(7).is_some());
}

#[test]
fn the_peer_closes_and_we_answer_with_its_code() {
    let mut h = websocket(RouteConfig::new("/"));
    h.feed(&client(OpCode::Close, &close_payload(4000, "bye")), 1);
    assert_eq!(h.session.phase(), Phase::Closed);
    assert!(!h.session.is_done(), "our answer is not written yet");
    h.flush();
    assert!(h.session.is_done());
    assert!(!h.session.needs_linger());
    assert_eq!(h.frames(), ["close 4000"]);
    h.events();
    let server = h.server.clone();
    assert_eq!(h.finish((1006, String::new())), ["close 4000 bye"]);
    assert!(server.connection(7).is_none());
}

#[test]
fn we_close_and_wait_for_the_peers_close_frame_until_the_close_timeout() {
    let mut h = websocket(RouteConfig::new("/"));
    let connection = h.session.connection().clone();
    connection.enqueue(
        OutItem::Close {
            code: 4001,
            reason: "done".into(),
            go_away: true,
        },
        0,
    );
    assert_eq!(h.outbound(10), Step::Continue);
    h.flush();
    assert_eq!(h.frames(), ["close 4001"]);
    assert!(matches!(
        h.session.phase(),
        Phase::Closing { reading: true, .. }
    ));
    assert!(!h.session.is_done(), "waits for the peer's close frame");
    // Sends after the close are refused nothing but written nowhere.
    assert_eq!(connection.send_message(b"late", false), SendStatus::Sent);
    h.outbound(20);
    h.flush();
    assert!(h.frames().is_empty());
    // The close timeout (5 s by default) ends it.
    let deadline = h.session.next_deadline().unwrap();
    assert_eq!(deadline, h.at(10) + Duration::from_secs(5));
    assert_eq!(h.session.on_deadline(h.at(5009)), Step::Continue);
    assert_eq!(h.session.on_deadline(deadline), Step::End);
}

#[test]
fn the_peers_answer_completes_our_close() {
    let mut h = websocket(RouteConfig::new("/"));
    h.session.connection().enqueue(
        OutItem::Close {
            code: 1000,
            reason: String::new(),
            go_away: true,
        },
        0,
    );
    h.outbound(1);
    h.flush();
    h.feed(&client(OpCode::Close, &close_payload(1000, "")), 2);
    assert_eq!(h.session.phase(), Phase::Closed);
    assert!(h.session.is_done());
    // Our close frame is the only one: no second answer.
    assert_eq!(h.frames(), ["close 1000"]);
}

#[test]
fn a_ping_flood_from_a_client_that_does_not_read_stays_under_the_limit() {
    let mut route = RouteConfig::new("/");
    route.max_backpressure = 64;
    let mut h = websocket(route);
    h.room = 0; // the client does not read
    let mut pings = Vec::new();
    for n in 0..10_000u32 {
        pings.extend(client(OpCode::Ping, n.to_string().as_bytes()));
    }
    h.feed(&pings, 1);
    h.flush();
    // Pongs in order up to the limit, then only the latest is owed.
    assert!(h.outbound_buffered() <= 64 + 6, "{}", h.outbound_buffered());
    h.room = usize::MAX;
    h.flush();
    let frames = h.frames();
    assert!(frames.len() < 20, "{}", frames.len());
    assert_eq!(frames[0], "pong 9999", "the latest goes first");
    assert_eq!(frames[1], "pong 0");
    assert_eq!(h.outbound_buffered(), 0);
}

#[test]
fn every_ping_is_answered_while_the_client_reads() {
    let mut h = websocket(RouteConfig::new("/"));
    let mut pings = Vec::new();
    for n in 0..10u32 {
        pings.extend(client(OpCode::Ping, n.to_string().as_bytes()));
    }
    h.feed(&pings, 1);
    h.flush();
    let expected: Vec<String> = (0..10).map(|n| format!("pong {n}")).collect();
    assert_eq!(h.frames(), expected);
}

#[test]
fn a_quiet_connection_is_pinged_then_closed_as_idle() {
    let mut route = RouteConfig::new("/");
    route.ping_interval = Duration::from_millis(100);
    route.idle_timeout = Duration::from_millis(250);
    let mut h = websocket(route);
    assert_eq!(h.session.next_deadline(), Some(h.at(100)));
    h.session.on_deadline(h.at(100));
    h.flush();
    assert_eq!(h.frames(), ["ping"]);
    // No second ping while one is unanswered.
    assert_eq!(h.session.next_deadline(), Some(h.at(250)));
    // An answer (any bytes) is a sign of life.
    h.feed(&client(OpCode::Pong, b""), 120);
    assert_eq!(h.session.next_deadline(), Some(h.at(220)));
    h.session.on_deadline(h.at(220));
    h.session.on_deadline(h.at(370));
    h.flush();
    assert_eq!(h.frames(), ["ping", "close 1001"]);
    h.events();
    assert_eq!(
        h.finish((1006, String::new())),
        ["close 1001 ERR_WS_IDLE_TIMEOUT"]
    );
}

#[test]
fn a_protocol_error_closes_with_its_code_and_stops_reading() {
    let mut h = websocket(RouteConfig::new("/"));
    // An unmasked client frame (RFC 6455 §5.1).
    h.feed(&frame(OpCode::Text, b"x", None), 1);
    assert!(matches!(
        h.session.phase(),
        Phase::Closing { reading: false, .. }
    ));
    assert!(!h.session.wants_read());
    h.flush();
    assert!(h.session.is_done());
    assert_eq!(h.frames(), ["close 1002"]);
    assert_eq!(
        h.server
            .stats
            .protocol_errors
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
}

#[test]
fn the_close_policy_drops_the_backlog_but_the_1008_close_frame_still_goes_out() {
    let mut route = RouteConfig::new("/");
    route.max_backpressure = 1200;
    route.slow_consumer = SlowConsumerPolicy::Close;
    let mut h = websocket(route);
    let connection = h.session.connection().clone();
    let big = vec![b'a'; 600];
    assert_eq!(connection.send_message(&big, false), SendStatus::Sent);
    h.outbound(1);
    // The client took 100 bytes of the frame, then stopped reading.
    h.room = 100;
    h.flush();
    assert_eq!(connection.send_message(&big, false), SendStatus::Buffered);
    assert_eq!(connection.send_message(&big, false), SendStatus::Dropped);
    assert_eq!(h.outbound(2), Step::Continue);
    assert!(!h.session.wants_read());
    // When it reads again it gets the rest of the frame it had begun, then
    // the 1008, and nothing of the backlog.
    h.room = usize::MAX;
    h.flush();
    assert!(h.session.is_done());
    let text = format!("text {}", "a".repeat(600));
    assert_eq!(h.frames(), [text.as_str(), "close 1008"]);
    assert_eq!(h.outbound_buffered(), 0);
}

#[test]
fn a_close_behind_a_slow_reader_waits_as_long_as_the_reader_makes_progress() {
    let mut route = RouteConfig::new("/");
    route.max_backpressure = 1000;
    route.slow_consumer = SlowConsumerPolicy::Close;
    let mut h = websocket(route);
    let connection = h.session.connection().clone();
    // A large frame, partly written, then an eviction: our 1008 waits
    // behind the rest of that frame.
    connection.send_message(&vec![b'a'; 50_000], false);
    h.outbound(0);
    h.room = 1000;
    h.flush();
    connection.send_message(&vec![b'b'; 5_000], false);
    h.outbound(10);
    let first = h.session.next_deadline().unwrap();
    assert_eq!(first, h.at(10) + Duration::from_secs(5));
    // The reader takes a little every 4 s: each bit of progress moves the
    // deadline, and the 1008 arrives in the end (12 s after the eviction).
    for second in [4u64, 8, 12] {
        h.room = 20_000;
        h.now = h.at(second * 1000);
        h.flush();
        assert_eq!(h.session.on_deadline(h.at(second * 1000)), Step::Continue);
    }
    assert!(h.session.is_done());
    let frames = h.frames();
    assert_eq!(frames.last().map(String::as_str), Some("close 1008"));
    // Without progress the close timeout ends it.
    let mut h = websocket(RouteConfig::new("/"));
    h.session
        .connection()
        .send_message(&vec![b'a'; 50_000], false);
    h.outbound(0);
    h.room = 1000;
    h.flush();
    h.session.connection().enqueue(
        OutItem::Close {
            code: 1000,
            reason: String::new(),
            go_away: true,
        },
        0,
    );
    h.outbound(10);
    h.room = 0;
    h.flush();
    assert_eq!(h.session.on_deadline(h.at(5010)), Step::End);
}

#[test]
fn terminate_ends_at_once() {
    let mut h = websocket(RouteConfig::new("/"));
    h.session.connection().outbound.evict(Eviction::Terminate);
    assert_eq!(h.outbound(1), Step::End);
    h.events();
    assert_eq!(h.finish((1006, String::new())), ["close 1006 terminated"]);
}

#[test]
fn eof_without_a_close_frame_is_1006() {
    let mut h = websocket(RouteConfig::new("/"));
    assert_eq!(h.session.on_eof(), Step::End);
    h.events();
    assert_eq!(h.finish((0, String::new())), ["close 1006 "]);
}

#[test]
fn a_send_to_a_congested_connection_is_buffered_and_a_drain_follows() {
    let mut h = websocket(RouteConfig::new("/"));
    let connection = h.session.connection().clone();
    connection.send_message(b"one", false);
    h.outbound(1);
    h.room = 2;
    h.flush();
    assert_eq!(connection.send_message(b"two", false), SendStatus::Buffered);
    h.events();
    h.room = usize::MAX;
    h.outbound(2);
    h.flush();
    assert_eq!(h.events(), ["drain"]);
    assert_eq!(h.frames(), ["text one", "text two"]);
}

#[test]
fn shutdown_closes_a_websocket_with_1001() {
    let mut h = websocket(RouteConfig::new("/"));
    h.session.on_shutdown(h.at(1));
    h.session.on_shutdown(h.at(2));
    h.flush();
    assert_eq!(h.frames(), ["close 1001"]);
}

fn hello(max_frame_size: u32) -> Vec<u8> {
    let mut out = rpc::PREFACE.to_vec();
    rpc::encode(
        &Frame::Hello(Hello {
            settings: Settings {
                seed: rpc::uuid::seed_from_random([7; 16]),
                max_frame_size,
                initial_window: 4096,
                max_concurrent_calls: 8,
                heartbeat_ms: 0,
                features: 7,
            },
            codecs: vec!["raw"],
            data: b"token",
        }),
        &mut out,
    );
    out
}

/// The protocol frames written (after the preface), by type.
fn rpc_frames(mut wire_bytes: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    if wire_bytes.starts_with(rpc::PREFACE) {
        out.push("preface".to_owned());
        wire_bytes = &wire_bytes[rpc::PREFACE.len()..];
    }
    while let Some((frame, size)) = rpc::decode(wire_bytes, 1 << 24).unwrap() {
        out.push(match frame {
            Frame::Welcome(_) => "welcome".to_owned(),
            Frame::Heartbeat { pong } => format!("heartbeat pong={pong}"),
            Frame::GoAway { code, .. } => format!("go-away {code}"),
            other => format!("{other:?}"),
        });
        wire_bytes = &wire_bytes[size..];
    }
    out
}

#[test]
fn a_protocol_stream_answers_its_hello_and_opens_for_the_worker() {
    let mut h = rpc_stream();
    assert!(matches!(h.session.phase(), Phase::Handshake { .. }));
    h.feed(&hello(4096), 1);
    assert_eq!(h.session.phase(), Phase::Open);
    h.flush();
    assert_eq!(rpc_frames(&h.wire), ["preface", "welcome"]);
    assert_eq!(h.events(), ["rpc-open"]);
}

#[test]
fn a_protocol_stream_that_does_not_say_hello_in_time_gets_a_go_away() {
    let mut h = rpc_stream();
    h.feed(&rpc::PREFACE[..2], 1);
    let deadline = h.session.next_deadline().unwrap();
    assert_eq!(deadline, h.at(0) + Duration::from_secs(10));
    assert_eq!(h.session.on_deadline(deadline), Step::Continue);
    h.flush();
    assert!(h.session.is_done());
    assert_eq!(
        rpc_frames(&h.wire),
        ["preface", "go-away ERR_HANDSHAKE_TIMEOUT"]
    );
}

#[test]
fn a_protocol_ping_flood_from_a_client_that_does_not_read_stays_under_the_limit() {
    let mut config = config(RouteConfig::new("/"));
    config.rpc.max_backpressure = 30;
    let mut h = start(config, ConnectionKind::RpcStream);
    h.feed(&hello(4096), 1);
    h.flush();
    h.wire.clear();
    h.room = 0;
    let mut pings = Vec::new();
    for _ in 0..10_000 {
        rpc::encode_heartbeat(false, &mut pings);
    }
    h.feed(&pings, 2);
    h.flush();
    assert!(h.outbound_buffered() <= 30 + 3, "{}", h.outbound_buffered());
    h.room = usize::MAX;
    h.flush();
    let frames = rpc_frames(&h.wire);
    assert!(frames.len() <= 16, "{}", frames.len());
    assert!(frames.iter().all(|f| f == "heartbeat pong=true"));
}

#[test]
fn not_the_protocol_gets_no_answer() {
    let mut h = rpc_stream();
    h.feed(b"GET / HTTP/1.1\r\n\r\n", 1);
    h.flush();
    assert!(h.wire.is_empty());
    assert!(h.session.is_done());
}

#[test]
fn shutdown_drains_a_protocol_stream_until_the_peer_leaves() {
    let mut h = rpc_stream();
    h.feed(&hello(4096), 1);
    h.flush();
    h.wire.clear();
    h.session.on_shutdown(h.at(5));
    assert!(matches!(h.session.phase(), Phase::Draining { .. }));
    assert!(h.session.wants_read(), "calls in flight go on");
    h.flush();
    assert_eq!(rpc_frames(&h.wire), ["go-away ERR_GOING_AWAY"]);
    assert_eq!(h.session.on_eof(), Step::End);
    h.events();
    assert_eq!(h.finish((0, String::new())), ["close 1001 ERR_GOING_AWAY"]);
}

#[test]
fn a_drain_ends_at_the_close_timeout() {
    let mut h = rpc_stream();
    h.feed(&hello(4096), 1);
    h.session.on_shutdown(h.at(5));
    let deadline = h.session.next_deadline().unwrap();
    assert_eq!(deadline, h.at(5) + Duration::from_secs(5));
    assert_eq!(h.session.on_deadline(deadline), Step::End);
}

#[test]
fn a_text_message_on_a_protocol_websocket_is_refused() {
    let mut h = start(config(RouteConfig::new("/")), ConnectionKind::RpcWebSocket);
    let mut bytes = client(OpCode::Binary, &hello(4096));
    bytes.extend(client(OpCode::Text, b"{}"));
    h.feed(&bytes, 1);
    h.flush();
    // The WELCOME queued for the HELLO is dropped with everything unsent:
    // the GO_AWAY (a binary message) and the close are all that go out.
    let frames = h.frames();
    assert_eq!(frames.len(), 2, "{frames:?}");
    assert_eq!(frames[1], "close 1003");
    assert!(h.session.is_done());
}

#[test]
fn queued_bytes_are_counted_until_written_or_dropped() {
    let mut h = websocket(RouteConfig::new("/"));
    let connection = h.session.connection().clone();
    connection.send_message(&[1; 100], true);
    connection.enqueue_frame(&Bytes::from(vec![0x82, 0]));
    assert_eq!(h.outbound_buffered(), 102 + 2);
    h.outbound(1);
    h.room = 50;
    h.flush();
    assert_eq!(h.outbound_buffered(), 54);
    h.room = usize::MAX;
    h.flush();
    assert_eq!(h.outbound_buffered(), 0);
}
