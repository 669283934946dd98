//! The WebSocket engine against an in-process echo server on port 0 (plain
//! `ws`): every connection opens, a closed loop keeps exactly its messages
//! in flight, paced sends come back one for one, and fanout's publishers
//! and receivers go to their own servers and endpoints. What the scenarios
//! do with the engine, without a server process or the runner.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;

use super::Engine;
use crate::cli;
use crate::handshake;
use crate::load::Load;

/// The request lines of the upgrades a server answered.
type Seen = Arc<Mutex<Vec<String>>>;

/// Answers the upgrade (noting its request line in `seen`), then sends
/// every data frame back unmasked, until the client goes.
fn serve(conn: TcpStream, seen: Seen) {
    let mut w = conn.try_clone().unwrap();
    let mut r = BufReader::new(conn);
    let mut key = String::new();
    let mut first = true;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        if std::mem::take(&mut first) {
            seen.lock().unwrap().push(line.trim_end().to_string());
        }
        if let Some(v) = line.strip_prefix("Sec-WebSocket-Key:") {
            key = v.trim().to_string();
        }
        if line == "\r\n" {
            break;
        }
    }
    let accept = handshake::accept_for(&key);
    let head = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {}\r\n\r\n",
        std::str::from_utf8(&accept).unwrap()
    );
    w.write_all(head.as_bytes()).unwrap();
    let mut h = [0u8; 2];
    while r.read_exact(&mut h).is_ok() {
        let len = match h[1] & 0x7f {
            126 => {
                let mut b = [0u8; 2];
                r.read_exact(&mut b).unwrap();
                u16::from_be_bytes(b) as usize
            }
            127 => {
                let mut b = [0u8; 8];
                r.read_exact(&mut b).unwrap();
                u64::from_be_bytes(b) as usize
            }
            n => n as usize,
        };
        let mut mask = [0u8; 4];
        r.read_exact(&mut mask).unwrap();
        let mut payload = vec![0u8; len];
        r.read_exact(&mut payload).unwrap();
        for (i, b) in payload.iter_mut().enumerate() {
            *b ^= mask[i % 4];
        }
        let opcode = h[0] & 0x0f;
        if opcode == 0x8 {
            return;
        }
        let mut frame = vec![h[0]];
        if len < 126 {
            frame.push(len as u8);
        } else {
            frame.push(126);
            frame.extend_from_slice(&(len as u16).to_be_bytes());
        }
        frame.extend_from_slice(&payload);
        if w.write_all(&frame).is_err() {
            return;
        }
    }
}

/// A fresh echo server: its port and what it was asked.
fn echo_server() -> (u16, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Seen::default();
    let kept = seen.clone();
    thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let seen = kept.clone();
            thread::spawn(move || serve(conn, seen));
        }
    });
    (port, seen)
}

/// An engine connected to a fresh echo server; `args` name the scenario.
fn connected(args: &str) -> Engine {
    let (port, _) = echo_server();
    let args = format!("--port {port} --connections 5 {args}");
    let cfg = cli::parse(args.split_whitespace().map(String::from)).unwrap();
    let mut engine = Engine::new(&cfg, None).unwrap();
    engine.connect_all().unwrap();
    assert_eq!(engine.ready(), 5);
    assert_eq!(engine.opening(), 0);
    engine.stats_mut().measuring = true;
    engine
}

#[test]
fn closed_loop_keeps_its_messages_in_flight() {
    let mut engine = connected("--scenario echo --in-flight 3");
    engine.start_closed_loop();
    engine.run_for(0.5).unwrap();
    let stats = engine.stats();
    assert_eq!(stats.errors, Default::default());
    assert!(stats.received > 100, "{} echoes", stats.received);
    // Each connection has exactly its 3 messages outstanding: none lost or doubled.
    assert_eq!(stats.sent, stats.received + 5 * 3);
}

#[test]
fn paced_sends_come_back() {
    let mut engine = connected("--scenario room --rates 2000");
    engine.set_rate(2000.0);
    engine.run_for(0.5).unwrap();
    let stats = engine.stats();
    assert_eq!(stats.errors, Default::default());
    // The pacer's schedule, not the loop, sets the count: 1,000 in 0.5 s,
    // more only when a late last wake-up (a busy machine) sends what fell
    // due after the deadline.
    assert!((995..=1100).contains(&stats.sent), "{} sent", stats.sent);
    // Only the last ones, still on their way back, may be missing.
    assert!(
        stats.received <= stats.sent && stats.received + 100 >= stats.sent,
        "{} of {} back",
        stats.received,
        stats.sent
    );
}

#[test]
fn fanout_publishers_and_receivers_apart() {
    let (receivers_port, receivers_seen) = echo_server();
    let (publish_port, publish_seen) = echo_server();
    let args = format!(
        "--port {receivers_port} --publish-port {publish_port} --connections 5 --publishers 2 \
         --scenario fanout --rates 1000"
    );
    let cfg = cli::parse(args.split_whitespace().map(String::from)).unwrap();
    let mut engine = Engine::new(&cfg, None).unwrap();
    engine.connect_all().unwrap();
    assert_eq!(engine.ready(), 7);
    let paths = |seen: &Seen| {
        let mut v = seen.lock().unwrap().clone();
        v.sort();
        v
    };
    assert_eq!(paths(&receivers_seen), vec!["GET /room HTTP/1.1"; 5]);
    assert_eq!(paths(&publish_seen), vec!["GET /publish HTTP/1.1"; 2]);
    engine.stats_mut().measuring = true;
    engine.set_rate(1000.0);
    engine.run_for(0.5).unwrap();
    let stats = engine.stats();
    assert_eq!(stats.errors, Default::default());
    assert!((495..=600).contains(&stats.sent), "{} sent", stats.sent);
    // Only the publishers send (the echo server returns each message to its
    // sender alone): one message back per message sent, none from receivers.
    assert!(
        stats.received <= stats.sent && stats.received + 100 >= stats.sent,
        "{} of {} back",
        stats.received,
        stats.sent
    );
}
