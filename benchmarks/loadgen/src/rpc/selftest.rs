//! The load generator against a trivial server: how many calls per second
//! it can drive, and what each costs it. The server is a minimal
//! Switchboard-protocol echo (the real codec, a thread per connection,
//! blocking reads, every answer of a read in one write), so the figure is
//! the client's ceiling, not a server's.
//!
//! ```sh
//! cargo test --release -p switchboard-loadgen --bin switchboard-rpcload \
//!     -- --ignored --nocapture closed_loop_throughput
//! ```

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread;

use switchboard_loadgen::procfs::parse_stat_times;
use switchboard_loadgen::sys;
use switchboard_proto::rpc::{
    accept_hello, decode, encode, encode_response_header, Frame, ServerSettings, PREFACE,
};

use crate::engine::Engine;
use crate::wire::{payload, Call, Codec, Protocol};

const MAX: usize = 1 << 24;

/// One connection of the trivial server: handshake, then every MESSAGE
/// answered by a RESPONSE carrying its payload.
fn serve(mut s: TcpStream) {
    s.set_nodelay(true).unwrap();
    let mut buf = vec![0u8; 256 << 10];
    let mut rx: Vec<u8> = Vec::new();
    let mut out = Vec::new();
    let mut open = false;
    loop {
        let n = match s.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        rx.extend_from_slice(&buf[..n]);
        let mut at = 0;
        if !open {
            if rx.len() < 4 {
                continue;
            }
            let Some((Frame::Hello(h), used)) = decode(&rx[4..], MAX).unwrap() else {
                continue;
            };
            let ours = ServerSettings {
                heartbeat_ms: 0,
                ..ServerSettings::default()
            };
            let w = accept_hello(&h, &ours, [3; 16]).unwrap();
            out.extend_from_slice(PREFACE);
            encode(&w.frame(), &mut out);
            at = 4 + used;
            open = true;
        }
        while let Some((frame, used)) = decode(&rx[at..], MAX).unwrap() {
            if let Frame::Message(m) = frame {
                encode_response_header(m.call_id, true, m.payload.len(), &mut out);
                out.extend_from_slice(m.payload);
            }
            at += used;
        }
        rx.drain(..at);
        if !out.is_empty() && s.write_all(&out).is_err() {
            return;
        }
        out.clear();
    }
}

/// This thread's CPU seconds (the engine runs on the test's thread; the
/// server's threads are not counted).
fn thread_cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    let (u, s) = parse_stat_times(&stat).unwrap();
    (u + s) as f64 / sys::clock_ticks_per_second() as f64
}

#[test]
#[ignore = "a measurement: run it with --release --ignored --nocapture"]
fn closed_loop_throughput() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    thread::spawn(move || {
        for s in listener.incoming() {
            let s = s.unwrap();
            thread::spawn(move || serve(s));
        }
    });
    let tiny = payload(16);
    for (c, k) in [(1u32, 1u32), (4, 100), (10, 100)] {
        let codecs = (0..c)
            .map(|i| Codec::new(Protocol::Switchboard, Call::Echo, &tiny, i, ""))
            .collect();
        let mut e = Engine::new("127.0.0.1", port, codecs, k, None).unwrap();
        e.handshake().unwrap();
        e.start();
        e.run_for(0.5).unwrap();
        e.measuring = true;
        let (t0, cpu0) = (e.now(), thread_cpu_s());
        e.run_for(3.0).unwrap();
        let (t1, cpu1) = (e.now(), thread_cpu_s());
        e.measuring = false;
        e.stop();
        let secs = (t1 - t0) as f64 / 1e9;
        let calls = e.counters.ops;
        let ns_per_call = (cpu1 - cpu0) * 1e9 / calls as f64;
        assert_eq!(e.counters.errors.total(), 0);
        assert!(calls > 0);
        println!(
            "c={c} k={k}: {:.0} calls/s, loadgen thread {:.0} % of a core, {ns_per_call:.0} ns of CPU per call \
             (a core's worth: {:.1} M calls/s), p50 {:.1} µs",
            calls as f64 / secs,
            (cpu1 - cpu0) / secs * 100.0,
            1e3 / ns_per_call,
            e.latency.summary().p50.unwrap_or(0.0),
        );
    }
}
