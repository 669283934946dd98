//! The outbound queue's unit tests: admission, eviction, coalescing and
//! the direct writes of worker threads, against real socket pairs.

use super::*;
use crate::stats::Stats;

fn frame(n: usize) -> OutItem {
    OutItem::Frame(Bytes::from(vec![0u8; n]))
}

#[test]
fn drop_policy_refuses_over_the_limit_but_keeps_the_connection() {
    let out = Outbound::new(100, SlowConsumerPolicy::Drop, WakeTarget::none());
    assert_eq!(out.enqueue(frame(80), 80), SendStatus::Sent);
    assert_eq!(out.enqueue(frame(30), 30), SendStatus::Dropped);
    assert_eq!(out.enqueue(frame(20), 20), SendStatus::Sent);
    let mut items = VecDeque::new();
    assert_eq!(out.take(&mut items).eviction, None);
    assert_eq!(items.len(), 2);
}

#[test]
fn an_empty_queue_takes_one_oversized_message() {
    let out = Outbound::new(10, SlowConsumerPolicy::Drop, WakeTarget::none());
    assert_eq!(out.enqueue(frame(50), 50), SendStatus::Sent);
    assert_eq!(out.enqueue(frame(1), 1), SendStatus::Dropped);
}

#[test]
fn close_policy_evicts_and_discards_the_queue() {
    let out = Outbound::new(100, SlowConsumerPolicy::Close, WakeTarget::none());
    out.enqueue(frame(80), 80);
    assert_eq!(out.enqueue(frame(30), 30), SendStatus::Dropped);
    assert_eq!(out.enqueue(frame(1), 1), SendStatus::Closed);
    let mut items = VecDeque::new();
    assert_eq!(out.take(&mut items).eviction, Some(Eviction::SlowConsumer));
    assert!(items.is_empty());
}

#[test]
fn a_close_is_queued_even_over_the_limit() {
    for policy in [SlowConsumerPolicy::Drop, SlowConsumerPolicy::Close] {
        let out = Outbound::new(10, policy, WakeTarget::none());
        assert_eq!(out.enqueue(frame(50), 50), SendStatus::Sent);
        let close = OutItem::Close {
            code: 1000,
            reason: String::new(),
            go_away: true,
        };
        assert_eq!(out.enqueue(close, 0), SendStatus::Sent);
        let mut items = VecDeque::new();
        assert_eq!(out.take(&mut items).eviction, None);
        assert_eq!(items.len(), 2);
    }
}

#[test]
fn small_messages_share_one_buffer_until_it_is_taken() {
    let out = Outbound::new(1 << 20, SlowConsumerPolicy::Drop, WakeTarget::none());
    assert_eq!(out.push_message(b"ab", false), (SendStatus::Sent, true));
    assert_eq!(out.push_message(b"cd", true), (SendStatus::Sent, false));
    assert_eq!(out.buffered(), 8);
    let mut items = VecDeque::new();
    out.take(&mut items);
    assert_eq!(items.len(), 1);
    let Some(OutItem::Coalesced(frames)) = items.pop_front() else {
        panic!("expected one coalesced buffer");
    };
    assert_eq!(&frames[..], &[0x81, 2, b'a', b'b', 0x82, 2, b'c', b'd']);
    // After the take, the next send starts a new buffer and wakes.
    assert_eq!(out.push_message(b"e", false), (SendStatus::Sent, true));
}

#[test]
fn a_full_coalescing_buffer_starts_another_and_limits_still_apply() {
    let out = Outbound::new(100 * 1024, SlowConsumerPolicy::Drop, WakeTarget::none());
    let payload = vec![7u8; 40 * 1024];
    assert_eq!(out.push_message(&payload, true).0, SendStatus::Sent);
    assert_eq!(out.push_message(&payload, true).0, SendStatus::Sent);
    assert_eq!(out.push_message(&payload, true).0, SendStatus::Dropped);
    let mut items = VecDeque::new();
    out.take(&mut items);
    assert_eq!(items.len(), 2, "64 KiB per buffer at most");
}

#[test]
fn direct_writes_go_straight_to_a_released_socket() {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    let (ours, mut theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    ours.set_nonblocking(true).unwrap();
    let stats = Stats::default();
    let out = Outbound::new(1 << 20, SlowConsumerPolicy::Drop, WakeTarget::none());
    out.push_message(b"held", false);
    // Not released yet: the I/O thread must be woken.
    assert!(!out.write_direct(&stats));
    let mut items = VecDeque::new();
    out.take(&mut items);
    // The I/O thread wrote what it took, then released the socket.
    out.written(6);
    out.release(Some(ours.as_raw_fd()));
    out.push_message(b"ab", false);
    out.push_message(b"cd", true);
    assert!(out.write_direct(&stats), "written on the calling thread");
    assert_eq!(out.buffered(), 0);
    assert_eq!(stats.bytes_out.load(Ordering::Relaxed), 8);
    let mut got = [0u8; 8];
    theirs.read_exact(&mut got).unwrap();
    assert_eq!(&got, &[0x81, 2, b'a', b'b', 0x82, 2, b'c', b'd']);
    // A take gives the socket back to the I/O thread.
    out.take(&mut items);
    out.push_message(b"e", false);
    assert!(!out.write_direct(&stats));
}

#[test]
fn a_full_socket_hands_the_rest_to_the_io_thread_as_a_partial_front() {
    use std::os::fd::AsRawFd;
    let (ours, _theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    ours.set_nonblocking(true).unwrap();
    let stats = Stats::default();
    let out = Outbound::new(64 << 20, SlowConsumerPolicy::Drop, WakeTarget::none());
    out.release(Some(ours.as_raw_fd()));
    // Far more than a socket buffer holds, in frames too large to
    // coalesce: the write stops inside one of them.
    let payload = vec![7u8; 1 << 20];
    for _ in 0..16 {
        out.push_message(&payload, true);
    }
    let queued = out.buffered();
    assert!(!out.write_direct(&stats), "the rest needs the I/O thread");
    let written = stats.bytes_out.load(Ordering::Relaxed) as usize;
    assert!(written > 0 && written < queued, "{written} of {queued}");
    assert_eq!(out.buffered(), queued - written);
    // Congested: the next send reports it.
    assert_eq!(out.push_message(b"x", false).0, SendStatus::Buffered);
    let mut items = VecDeque::new();
    let taken = out.take(&mut items);
    assert!(taken.front_partial, "the first item is the rest of a frame");
    let rest: usize = items.iter().map(OutItem::counted_bytes).sum();
    assert_eq!(rest, queued - written + 3);
}

#[test]
fn a_large_send_goes_out_from_the_callers_bytes_behind_what_is_queued() {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    let (ours, mut theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    ours.set_nonblocking(true).unwrap();
    let stats = Stats::default();
    let out = Outbound::new(1 << 20, SlowConsumerPolicy::Drop, WakeTarget::none());
    // Not released: the caller queues it as usual.
    assert_eq!(out.send_direct(b"H", b"payload", &stats), None);
    out.release(Some(ours.as_raw_fd()));
    out.push_message(b"ab", false);
    assert_eq!(
        out.send_direct(b"HH", b"payload", &stats),
        Some((SendStatus::Sent, false))
    );
    assert_eq!(out.buffered(), 0);
    let mut got = [0u8; 13];
    theirs.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"\x81\x02abHHpayload");
}

#[test]
fn a_large_send_into_a_full_socket_queues_only_its_unsent_rest() {
    use std::os::fd::AsRawFd;
    let (ours, _theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    ours.set_nonblocking(true).unwrap();
    let stats = Stats::default();
    let out = Outbound::new(64 << 20, SlowConsumerPolicy::Drop, WakeTarget::none());
    out.release(Some(ours.as_raw_fd()));
    let payload = vec![9u8; 16 << 20];
    let (status, wake) = out.send_direct(b"HEAD", &payload, &stats).unwrap();
    assert_eq!((status, wake), (SendStatus::Buffered, true));
    assert!(out.take_drain_wanted(), "a drain is owed for the BUFFERED");
    let written = stats.bytes_out.load(Ordering::Relaxed) as usize;
    assert!(written > 4 && written < payload.len(), "{written}");
    assert_eq!(out.buffered(), payload.len() + 4 - written);
    let mut items = VecDeque::new();
    assert!(out.take(&mut items).front_partial, "its rest is the front");
    assert_eq!(items.len(), 1);
    // Now the I/O thread's: the next large send is queued as usual.
    assert_eq!(out.send_direct(b"H", b"x", &stats), None);
}

#[test]
fn a_closed_queue_never_writes_directly() {
    use std::os::fd::AsRawFd;
    let (ours, _theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let stats = Stats::default();
    let out = Outbound::new(1 << 20, SlowConsumerPolicy::Drop, WakeTarget::none());
    out.release(Some(ours.as_raw_fd()));
    out.close();
    assert_eq!(out.push_message(b"x", false).0, SendStatus::Closed);
    assert!(out.write_direct(&stats));
    assert_eq!(stats.bytes_out.load(Ordering::Relaxed), 0);
}

#[test]
fn a_paced_queue_reports_buffered_at_its_high_water_mark_and_admits_below_it() {
    let none = WakeTarget::none;
    let out = Outbound::new(100, SlowConsumerPolicy::Close, none()).with_high_water(40);
    assert_eq!(out.enqueue(frame(30), 30), SendStatus::Sent);
    // Below the mark: admitted whatever its size (30 + 90 > 100).
    assert_eq!(out.enqueue(frame(90), 90), SendStatus::Buffered);
    assert!(out.take_drain_wanted(), "a drain is owed");
    // At or over it, the limit applies as usual.
    assert_eq!(out.enqueue(frame(1), 1), SendStatus::Dropped);
    let mut items = VecDeque::new();
    assert_eq!(out.take(&mut items).eviction, Some(Eviction::SlowConsumer));

    let out = Outbound::new(100, SlowConsumerPolicy::Close, none()).with_high_water(40);
    assert_eq!(out.enqueue(frame(39), 39), SendStatus::Sent);
    assert!(!out.take_drain_wanted());
    assert_eq!(out.enqueue(frame(1), 1), SendStatus::Buffered);
    out.written(40);
    assert_eq!(out.enqueue(frame(10), 10), SendStatus::Sent);
    // Without a mark (WebSocket), only an empty queue is exempt.
    let out = Outbound::new(100, SlowConsumerPolicy::Drop, none());
    assert_eq!(out.enqueue(frame(30), 30), SendStatus::Sent);
    assert_eq!(out.enqueue(frame(90), 90), SendStatus::Dropped);
}

#[test]
fn congestion_reports_buffered_and_owes_a_drain() {
    let out = Outbound::new(1000, SlowConsumerPolicy::Drop, WakeTarget::none());
    out.set_congested(true);
    assert_eq!(out.enqueue(frame(10), 10), SendStatus::Buffered);
    assert!(out.take_drain_wanted());
    assert!(!out.take_drain_wanted());
}
