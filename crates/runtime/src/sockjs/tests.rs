//! A session's frames and its life, driven by hand: no socket, no thread.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;

use super::{Forward, Host, Refused, SockJsSession, SockJsSessions};
use crate::config::SlowConsumerPolicy;
use crate::connection::{Connection, ConnectionKind};
use crate::outbound::{Eviction, OutItem, Outbound, SendStatus};
use crate::stats::Stats;
use crate::wake::{IoWaker, WakeTarget};

/// A server as the session sees it, recording what it was told.
struct TestHost {
    sessions: SockJsSessions,
    closes: Mutex<Vec<(u16, String)>>,
    drains: AtomicUsize,
}

impl Host for TestHost {
    fn sessions(&self) -> &SockJsSessions {
        &self.sessions
    }
    fn unregister(&self, connection: &Connection, code: u16, reason: &str) {
        connection.outbound.close();
        self.closes.lock().push((code, reason.to_owned()));
    }
    fn forget_upgrade(&self, _: u64) {}
    fn drained(&self, _: &Connection) {
        self.drains.fetch_add(1, Ordering::Relaxed);
    }
}

/// Counts the wake-ups a receiver would get.
#[derive(Default)]
struct Wakes(AtomicUsize);

impl IoWaker for Wakes {
    fn connection(&self, _: usize, _: u32) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
    fn room(&self, _: usize) {}
}

fn host() -> TestHost {
    TestHost {
        sessions: SockJsSessions::new(),
        closes: Mutex::default(),
        drains: AtomicUsize::new(0),
    }
}

fn session(max_backpressure: usize, policy: SlowConsumerPolicy) -> SockJsSession {
    let forward = Arc::new(Forward::default());
    let outbound = Outbound::new(
        max_backpressure,
        policy,
        WakeTarget::new(forward.clone(), 0, 0),
    );
    let connection = Arc::new(Connection {
        id: 7,
        worker: 0,
        kind: ConnectionKind::SockJsHttp,
        outbound,
        stats: Arc::new(Stats::default()),
    });
    let session = SockJsSession::new(
        connection,
        forward,
        0,
        "abc",
        Duration::from_secs(5),
        false,
        Instant::now(),
    );
    session.opened(Bytes::from_static(b"o"));
    session
}

fn text(frames: &[Bytes]) -> Vec<&str> {
    frames
        .iter()
        .map(|f| std::str::from_utf8(f).unwrap())
        .collect()
}

fn send(session: &SockJsSession, message: &str) -> SendStatus {
    session.connection.send_message(message.as_bytes(), false)
}

#[test]
fn a_poll_takes_one_frame_and_merges_the_messages_waiting() {
    let host = host();
    let session = session(1 << 20, SlowConsumerPolicy::Drop);
    let mut scratch = VecDeque::new();
    // The open frame alone first, even with messages behind it.
    assert_eq!(send(&session, "a"), SendStatus::Sent);
    let first = session.take(&host, true, &mut scratch);
    assert_eq!(text(&first.frames), ["o"]);
    assert_eq!(send(&session, "b\"c"), SendStatus::Sent);
    let second = session.take(&host, true, &mut scratch);
    assert_eq!(text(&second.frames), [r#"a["a","b\"c"]"#]);
    assert!(!second.closed);
    assert_eq!(session.connection.outbound.buffered(), 0);
    assert!(session.take(&host, true, &mut scratch).frames.is_empty());
}

#[test]
fn the_applications_close_ends_the_messages_and_is_replayed() {
    let host = host();
    let session = session(1 << 20, SlowConsumerPolicy::Drop);
    let mut scratch = VecDeque::new();
    session.take(&host, false, &mut scratch);
    send(&session, "last");
    session.connection.enqueue(
        OutItem::Close {
            code: 3000,
            reason: "Go away!".into(),
            go_away: false,
        },
        0,
    );
    // A poll takes the messages; the close waits for the next one.
    let poll = session.take(&host, true, &mut scratch);
    assert_eq!(text(&poll.frames), [r#"a["last"]"#]);
    let close = session.take(&host, true, &mut scratch);
    assert_eq!(text(&close.frames), [r#"c[3000,"Go away!"]"#]);
    assert!(close.closed);
    assert_eq!(*host.closes.lock(), [(3000, "Go away!".to_owned())]);
    // Every later receiver is refused with the same frame; sends are closed.
    let forward = Arc::new(Wakes::default());
    assert_eq!(
        session.attach(WakeTarget::new(forward, 0, 0)),
        Err(Refused::Closed {
            code: 3000,
            reason: "Go away!".into()
        })
    );
    assert_eq!(send(&session, "late"), SendStatus::Closed);
    assert_eq!(host.closes.lock().len(), 1, "the worker hears close once");
}

#[test]
fn one_receiver_at_a_time_and_wake_ups_follow_it() {
    let host = host();
    let session = session(1 << 20, SlowConsumerPolicy::Drop);
    let mut scratch = VecDeque::new();
    let wakes = Arc::new(Wakes::default());
    session
        .attach(WakeTarget::new(wakes.clone(), 0, 0))
        .unwrap();
    assert_eq!(
        session.attach(WakeTarget::new(Arc::new(Wakes::default()), 0, 0)),
        Err(Refused::Busy)
    );
    session.take(&host, false, &mut scratch);
    send(&session, "x");
    assert_eq!(wakes.0.load(Ordering::Relaxed), 1);
    session.take(&host, false, &mut scratch);
    session.detach(&host, false, Instant::now());
    // Between receivers nobody is woken, sends report BUFFERED, and what
    // was sent waits for the next receiver, whose take brings `drain`.
    assert_eq!(send(&session, "y"), SendStatus::Buffered);
    assert_eq!(wakes.0.load(Ordering::Relaxed), 1);
    assert!(host.sessions.next_sweep().is_some());
    let next = Arc::new(Wakes::default());
    session.attach(WakeTarget::new(next, 0, 0)).unwrap();
    let frames = session.take(&host, false, &mut scratch);
    assert_eq!(text(&frames.frames), [r#"a["y"]"#]);
    assert_eq!(host.drains.load(Ordering::Relaxed), 1);
    assert_eq!(send(&session, "z"), SendStatus::Sent);
}

#[test]
fn an_aborted_receiver_interrupts_the_session() {
    let host = host();
    let session = session(1 << 20, SlowConsumerPolicy::Drop);
    session
        .attach(WakeTarget::new(Arc::new(Wakes::default()), 0, 0))
        .unwrap();
    session.detach(&host, true, Instant::now());
    assert_eq!(*host.closes.lock(), [(1006, String::new())]);
    let frames = session.take(&host, true, &mut VecDeque::new());
    assert_eq!(
        text(&frames.frames),
        [r#"c[1002,"Connection interrupted"]"#]
    );
}

#[test]
fn the_close_policy_reaches_the_next_receiver_or_the_expiry() {
    let host = host();
    let mut scratch = VecDeque::new();
    let evicted = session(100, SlowConsumerPolicy::Close);
    evicted.take(&host, false, &mut scratch);
    assert_eq!(send(&evicted, &"a".repeat(80)), SendStatus::Sent);
    assert_eq!(send(&evicted, &"b".repeat(80)), SendStatus::Dropped);
    let frames = evicted.take(&host, false, &mut scratch);
    assert_eq!(text(&frames.frames), [r#"c[1008,"ERR_WS_SLOW_CONSUMER"]"#]);
    assert_eq!(host.closes.lock()[0].0, 1008);

    let expired = session(100, SlowConsumerPolicy::Close);
    expired.connection.outbound.evict(Eviction::WorkerDied);
    expired.expire(&host);
    assert_eq!(host.closes.lock()[1].0, 1011);
}

#[test]
fn an_idle_session_stays_small() {
    // Sessions wait by the thousand between polls; a protocol session's
    // reader is boxed, so plain ones do not carry it.
    let session = std::mem::size_of::<SockJsSession>();
    assert!(session <= 208, "SockJsSession is {session} bytes");
}
