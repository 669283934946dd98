//! The engine against an awkward in-process SockJS echo server on port 0,
//! which does everything the transport allows a server to: streams
//! alternately HTTP/1.0 (the response ends with the connection) and
//! HTTP/1.1 chunked (kept alive), each ended after 1 KiB of frames;
//! `xhr_send` connections closed after some answers (as an idle keep-alive
//! connection is) and some requests on a kept-alive connection dropped
//! unanswered with it (the race a resend covers). Every message must come
//! back exactly once. Then the per-message cost of the receiving path.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;

use super::stream::{StreamDecoder, StreamEvent};
use super::Engine;
use crate::cli;
use crate::load::Load;
use crate::metrics::Stats;
use crate::payload;
use crate::protocols::{decode_sockjs, Event};

/// Frame bytes after which the server ends a streaming response.
const LIMIT: usize = 1024;

#[derive(Default)]
struct Session {
    /// The open streaming response: its socket, and whether it is chunked.
    stream: Option<(TcpStream, bool)>,
    pending: Vec<String>,
    sent: usize,
    /// Streaming responses ended so far.
    ended: u32,
    /// `xhr_send` requests answered.
    sends: u32,
}

type Sessions = Arc<(Mutex<HashMap<String, Session>>, Condvar)>;

fn write_body(s: &mut Session, bytes: &str) {
    if let Some((sock, chunked)) = s.stream.as_mut() {
        let data = if *chunked {
            format!("{:x}\r\n{bytes}\r\n", bytes.len())
        } else {
            bytes.to_string()
        };
        let _ = sock.write_all(data.as_bytes());
    }
}

fn write_frame(s: &mut Session, frame: &str) {
    write_body(s, &format!("{frame}\n"));
    s.sent += frame.len() + 1;
    if s.sent >= LIMIT {
        if let Some((mut sock, chunked)) = s.stream.take() {
            if chunked {
                let _ = sock.write_all(b"0\r\n\r\n");
            } else {
                let _ = sock.shutdown(Shutdown::Both);
            }
        }
        s.ended += 1;
    }
}

fn deliver(s: &mut Session) {
    if s.stream.is_some() && !s.pending.is_empty() {
        let quoted: Vec<String> = s.pending.drain(..).map(|m| format!("\"{m}\"")).collect();
        write_frame(s, &format!("a[{}]", quoted.join(",")));
    }
}

/// One connection: requests in order, until the client or the server ends it.
fn serve(conn: TcpStream, sessions: Sessions) -> Option<()> {
    let mut reader = BufReader::new(conn.try_clone().ok()?);
    let mut conn = conn;
    let (lock, cvar) = &*sessions;
    // Requests this connection answered: from one on it is a kept-alive one.
    let mut answered_here = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let path = line.split(' ').nth(1)?.to_string();
        let mut length = 0;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).ok()? == 0 {
                return None;
            }
            if h == "\r\n" {
                break;
            }
            if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().ok()?;
            }
        }
        let mut body = vec![0u8; length];
        reader.read_exact(&mut body).ok()?;
        let parts: Vec<&str> = path.split('/').collect();
        let id = parts[3].to_string();
        let mut map = lock.lock().ok()?;
        let first = !map.contains_key(&id);
        let s = map.entry(id.clone()).or_default();
        if parts[4] == "xhr_streaming" {
            let chunked = s.ended % 2 == 1;
            let head = if chunked {
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            } else {
                "HTTP/1.0 200 OK\r\nContent-Type: application/javascript\r\n\r\n"
            };
            conn.write_all(head.as_bytes()).ok()?;
            s.stream = Some((conn.try_clone().ok()?, chunked));
            s.sent = 0;
            let before = s.ended;
            write_body(s, &format!("{}\n", "h".repeat(2048)));
            if first {
                write_frame(s, "o");
            }
            deliver(s);
            if !chunked {
                return None; // the response has the connection now
            }
            // The next request on this connection comes once the response ended.
            drop(cvar.wait_while(map, |m| m[&id].ended == before).ok()?);
            continue;
        }
        if answered_here > 0 && s.sends % 7 == 3 {
            // Closed as the request arrives, unread: the client sends it again.
            let _ = conn.shutdown(Shutdown::Both);
            return None;
        }
        s.sends += 1;
        answered_here += 1;
        // Load payloads need no escaping: split the array at its quotes.
        let text = String::from_utf8(body).ok()?;
        let inner = text.strip_prefix("[\"")?.strip_suffix("\"]")?;
        s.pending.extend(inner.split("\",\"").map(String::from));
        deliver(s);
        let close = s.sends % 5 == 4;
        drop(map);
        cvar.notify_all();
        conn.write_all(b"HTTP/1.1 204 No Content\r\n\r\n").ok()?;
        if close {
            let _ = conn.shutdown(Shutdown::Both);
            return None;
        }
    }
}

#[test]
fn every_message_comes_back_over_every_kind_of_response() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let sessions: Sessions = Arc::default();
    let shared = sessions.clone();
    thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let s = shared.clone();
            thread::spawn(move || serve(conn, s));
        }
    });
    let args = format!(
        "--port {port} --scenario echo --protocol sockjs-xhr-streaming --connections 5 --in-flight 3"
    );
    let cfg = cli::parse(args.split_whitespace().map(String::from)).unwrap();
    let mut engine = Engine::new(&cfg, None).unwrap();
    engine.connect_all().unwrap();
    assert_eq!(engine.ready(), 5);
    engine.stats_mut().measuring = true;
    engine.start_closed_loop();
    engine.run_for(1.5).unwrap();
    let (stats, figures) = (engine.stats(), engine.xhr_figures().unwrap());
    assert_eq!(stats.errors, Default::default(), "{figures:?}");
    assert!(stats.received > 500, "{} echoes", stats.received);
    // Each session has exactly its 3 messages outstanding: none lost or doubled.
    assert_eq!(stats.sent, stats.received + 5 * 3);
    assert!(figures.streams_ended > 10, "{figures:?}");
    // Every other response runs to the close: half of them, give or take one per session.
    assert!(
        figures.stream_reconnects * 2 + 10 >= figures.streams_ended,
        "{figures:?}"
    );
    assert!(
        figures.send_retries > 0 && figures.send_connects > figures.send_retries,
        "{figures:?}"
    );
}

/// The user-space cost per received message on the stream (chunk framing,
/// frame split, SockJS array, stamp, histogram), in sockjs-node's framing
/// (a chunk per frame, a message per frame) and a batching server's (a
/// chunk of frames of 16 messages): run with
/// `cargo test --release -p switchboard-loadgen -- --ignored --nocapture xhr_parse_throughput`.
#[test]
#[ignore]
fn xhr_parse_throughput() {
    let payload = "00000000000f424000000003xxxxxxxx";
    for per_frame in [1usize, 16] {
        let frame = format!(
            "a[{}]\n",
            vec![format!("\"{payload}\""); per_frame].join(",")
        );
        let frames_per_chunk = if per_frame == 1 { 1 } else { 64 };
        let chunk_body = frame.repeat(frames_per_chunk);
        let chunk = format!("{:x}\r\n{chunk_body}\r\n", chunk_body.len());
        let messages_per_buf =
            200_000 / (per_frame * frames_per_chunk) * per_frame * frames_per_chunk;
        let buf = chunk.repeat(messages_per_buf / (per_frame * frames_per_chunk));
        let mut d = StreamDecoder::new(1 << 20);
        let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert_eq!(d.feed(head, |_| Ok(())), Ok(head.len()));
        let mut stats = Stats::new();
        stats.measuring = true;
        let rounds = 20;
        let t = std::time::Instant::now();
        for _ in 0..rounds {
            let used = d
                .feed(buf.as_bytes(), |ev| {
                    if let StreamEvent::Frame(f) = ev {
                        decode_sockjs(f, |e| {
                            if let Event::Payload(p) = e {
                                if let Some((sent, _)) = payload::parse(p) {
                                    stats.record(sent, 5_000_000);
                                }
                            }
                        })
                        .map_err(|e| e.0)?;
                    }
                    Ok(())
                })
                .unwrap();
            assert_eq!(used, buf.len());
        }
        let n = rounds * messages_per_buf;
        let per_msg = t.elapsed().as_nanos() as f64 / n as f64;
        println!(
            "{per_frame} message(s) per frame: {per_msg:.1} ns per message, {:.1} M messages/s",
            1e3 / per_msg
        );
        assert_eq!(stats.received, n as u64);
    }
}
