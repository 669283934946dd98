//! The runtime driven from Rust, without Node: a real server on port 0, a
//! "worker" thread that drains events and answers, and blocking clients
//! speaking raw WebSocket through the proto crate's encoder and decoder.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use switchboard_proto::ws::encoder::frame;
use switchboard_proto::ws::{Decoder, DecoderConfig, Event, Flow, OpCode, Role};
use switchboard_runtime::events::Record;
use switchboard_runtime::{ListenerConfig, Protocol, RouteConfig, Server, ServerConfig};

/// What the test worker saw.
#[derive(Debug, PartialEq)]
enum Seen {
    Open(u64),
    Message(u64, Vec<u8>),
    Close(u64, u16),
}

fn parse(batch: &[u8], out: &mut Vec<Seen>) {
    let mut at = 0;
    while at < batch.len() {
        let (record, used) = Record::read(&batch[at..]).unwrap();
        match record {
            Record::Open { id, .. } => out.push(Seen::Open(id)),
            Record::Message { id, payload, .. } => out.push(Seen::Message(id, payload.to_vec())),
            Record::Close { id, code, .. } => out.push(Seen::Close(id, code)),
            _ => {}
        }
        at += used;
    }
}

/// A server whose single worker echoes messages, or publishes them to
/// channel "room" when they start with `!`, and subscribes every opened
/// connection to "room". Returns the server, its address and the log.
fn start() -> (Arc<Server>, SocketAddr, Arc<parking_lot::Mutex<Vec<Seen>>>) {
    let server = Server::new(ServerConfig {
        routes: vec![RouteConfig::new("/")],
        workers: 1,
        io_threads: 2,
        ..ServerConfig::default()
    })
    .unwrap();
    let addr = server
        .listen(
            "127.0.0.1:0".parse().unwrap(),
            &ListenerConfig::plain(Protocol::Http),
        )
        .unwrap();
    let (wake_tx, wake_rx) = mpsc::channel::<()>();
    server.queue(0).unwrap().set_waker(Some(Arc::new(move || {
        let _ = wake_tx.send(());
    })));
    let log = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let worker_server = server.clone();
    let worker_log = log.clone();
    thread::spawn(move || {
        while wake_rx.recv().is_ok() {
            let batch = worker_server.queue(0).unwrap().drain().events;
            let mut seen = Vec::new();
            parse(&batch, &mut seen);
            for event in &seen {
                match event {
                    Seen::Open(id) => {
                        worker_server.subscribe(&[*id], "room", 1);
                    }
                    Seen::Message(id, data) if data.starts_with(b"!") => {
                        worker_server.publish("room", data, true, None).unwrap();
                        let _ = id;
                    }
                    Seen::Message(id, data) => {
                        worker_server.send(*id, data, true);
                    }
                    Seen::Close(..) => {}
                }
            }
            worker_log.lock().extend(seen);
        }
    });
    (server, addr, log)
}

struct Client {
    stream: TcpStream,
    decoder: Decoder,
    /// Frames decoded but not yet taken (one read may carry several).
    frames: std::collections::VecDeque<(OpCode, Vec<u8>)>,
}

impl Client {
    fn connect(addr: SocketAddr) -> Client {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        stream
            .write_all(
                b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                  Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
            )
            .unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            stream.read_exact(&mut byte).unwrap();
            head.push(byte[0]);
        }
        let head = String::from_utf8(head).unwrap();
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        assert!(head.contains("s3pPLMBiTxaQ9kYGzzhZRbK+xOo="), "{head}");
        Client {
            stream,
            decoder: Decoder::new(DecoderConfig {
                role: Role::Client,
                ..DecoderConfig::default()
            }),
            frames: Default::default(),
        }
    }

    fn send(&mut self, op: OpCode, payload: &[u8]) {
        self.stream
            .write_all(&frame(op, payload, Some([7, 1, 3, 9])))
            .unwrap();
    }

    /// The next data or close frame: (opcode, payload).
    fn next(&mut self) -> (OpCode, Vec<u8>) {
        while self.frames.is_empty() {
            let mut buffer = [0u8; 4096];
            let n = self.stream.read(&mut buffer).unwrap();
            assert!(n > 0, "connection closed");
            let frames = &mut self.frames;
            self.decoder
                .feed(&mut buffer[..n], |event| {
                    match event {
                        Event::Text(p) => frames.push_back((OpCode::Text, p.to_vec())),
                        Event::Binary(p) => frames.push_back((OpCode::Binary, p.to_vec())),
                        Event::Close(c) => frames
                            .push_back((OpCode::Close, c.code.unwrap_or(0).to_be_bytes().to_vec())),
                        _ => {}
                    }
                    Flow::Continue
                })
                .unwrap();
        }
        self.frames.pop_front().unwrap()
    }
}

#[test]
fn echoes_and_counts() {
    let (server, addr, _log) = start();
    let mut client = Client::connect(addr);
    client.send(OpCode::Binary, b"hello");
    assert_eq!(client.next(), (OpCode::Binary, b"hello".to_vec()));
    // The sending thread counts the message once its write returned: the
    // client can read the echo a moment before that.
    for _ in 0..100 {
        if server.stats().messages_out == 1 {
            break;
        }
        thread::sleep(Duration::from_millis(10));
    }
    let stats = server.stats();
    assert_eq!(stats.connections_open, 1);
    assert_eq!(stats.messages_in, 1);
    assert_eq!(stats.messages_out, 1);
    server.shutdown(Duration::from_secs(2));
}

#[test]
fn publish_reaches_every_subscriber() {
    let (server, addr, _log) = start();
    let mut a = Client::connect(addr);
    let mut b = Client::connect(addr);
    // Wait until both are subscribed (the worker thread does it on open).
    for _ in 0..100 {
        if server.subscriber_count("room") == 2 {
            break;
        }
        thread::sleep(Duration::from_millis(10));
    }
    a.send(OpCode::Binary, b"!all");
    assert_eq!(a.next(), (OpCode::Binary, b"!all".to_vec()));
    assert_eq!(b.next(), (OpCode::Binary, b"!all".to_vec()));
    server.shutdown(Duration::from_secs(2));
}

#[test]
fn shutdown_closes_with_1001_and_reports_the_close() {
    let (server, addr, log) = start();
    let mut client = Client::connect(addr);
    client.send(OpCode::Binary, b"ping");
    assert_eq!(client.next().0, OpCode::Binary);
    let closer = {
        let server = server.clone();
        thread::spawn(move || server.shutdown(Duration::from_secs(2)))
    };
    let (op, code) = client.next();
    assert_eq!((op, code), (OpCode::Close, 1001u16.to_be_bytes().to_vec()));
    // Answer the close so the server's drain completes early.
    client.send(OpCode::Close, &1001u16.to_be_bytes());
    closer.join().unwrap();
    assert!(!server.is_running());
    assert!(
        TcpStream::connect(addr).is_err(),
        "still accepting after shutdown"
    );
    let drained = server.queue(0).unwrap().drain().events;
    let mut seen = Vec::new();
    parse(&drained, &mut seen);
    let all: Vec<_> = log.lock().drain(..).chain(seen).collect();
    assert!(
        all.iter().any(|e| matches!(e, Seen::Close(_, 1001))),
        "{all:?}"
    );
}
