//! The frames a session has ready for the wire, in order, and the
//! vectored flush. Every byte here is counted in the connection's
//! `Outbound::buffered` (what `bufferedAmount` and the backpressure limit
//! see) until it is written or dropped.
//!
//! An idle connection's queue is one null pointer: the queue's state is
//! allocated when a frame is queued and freed when the last one is out.

use std::collections::VecDeque;
use std::io::{self, IoSlice};

use bytes::{Buf, Bytes};

use crate::outbound::Outbound;
use crate::stats::{self, Stats};

/// Most buffers handed to one vectored write (Linux's IOV_MAX is 1024; 64
/// already amortises the syscall).
const MAX_IO_SLICES: usize = 64;

/// Most bytes one flush writes to a connection whose socket keeps taking
/// them; the rest waits for the connection's next turn (`Flushed::more`),
/// after the I/O thread's other connections had theirs. Without it one
/// connection with a large backlog (a kept 1 MiB file) held the thread for a
/// single 1 MiB `writev`, and on loopback the kernel then did the receiver's
/// share of the TCP work in the writer's time: 279 us per call where
/// uWebSockets.js's two smaller sends took 57 us each.
const FLUSH_BUDGET: usize = 256 * 1024;

/// What a flush did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Flushed {
    /// Everything went out (false: the socket is full).
    pub all: bool,
    /// Some bytes went out.
    pub progress: bool,
    /// The socket took [`FLUSH_BUDGET`] and more is queued: flush again at
    /// the connection's next turn (no writability edge will ask).
    pub more: bool,
}

#[derive(Default)]
pub(crate) struct WriteQueue {
    queued: Option<Box<Queued>>,
}

#[derive(Default)]
struct Queued {
    frames: VecDeque<Bytes>,
    /// The front of `frames` is partly written: the peer already has its
    /// first bytes, so it must go out whole before anything else.
    front_partial: bool,
    /// Bytes at the front of `frames` that are not the connection's own
    /// traffic (the `101` of an upgrade): written first, counted neither in
    /// `buffered` nor in `bytesOut`.
    preamble: usize,
    /// A pong not yet in `frames`, owed once pongs no longer fit under the
    /// connection's backpressure limit. A newer ping replaces it, so a peer
    /// that pings and does not read costs one pong, not one per ping.
    pong: Option<Bytes>,
    /// The last flush stopped at [`FLUSH_BUDGET`] with the socket still
    /// taking bytes.
    more: bool,
}

impl WriteQueue {
    pub(crate) fn is_empty(&self) -> bool {
        self.queued.is_none()
    }

    fn queued(&mut self) -> &mut Queued {
        self.queued.get_or_insert_with(Box::default)
    }

    /// Queue bytes that go out before everything else and are not counted
    /// as the connection's traffic.
    pub(crate) fn push_preamble(&mut self, bytes: Bytes) {
        let queued = self.queued();
        queued.preamble += bytes.len();
        queued.frames.push_front(bytes);
    }

    /// Queue, ahead of everything, the rest of a frame another thread began
    /// to write (a direct write cut short): it must go out whole first.
    pub(crate) fn push_partial_front(&mut self, rest: Bytes) {
        let queued = self.queued();
        queued.frames.push_front(rest);
        queued.front_partial = true;
    }

    /// Queue a frame already counted in `buffered` (it came through the
    /// outbound queue).
    pub(crate) fn push_counted(&mut self, frame: Bytes) {
        self.queued().frames.push_back(frame);
    }

    /// Queue a frame of the session's own (a reply, a close frame).
    pub(crate) fn push_own(&mut self, frame: Bytes, outbound: &Outbound) {
        outbound.account(frame.len());
        self.queued().frames.push_back(frame);
    }

    /// Answer a ping. While the connection keeps up every ping gets its
    /// pong, in order; past its backpressure limit only the latest is owed
    /// (RFC 6455 §5.5.3 allows it), replacing one still waiting.
    pub(crate) fn push_pong(&mut self, pong: Bytes, outbound: &Outbound) {
        self.queued().push_pong(pong, outbound);
    }

    /// Drop every frame not yet on the wire (see [`Queued::drop_unsent`]).
    pub(crate) fn drop_unsent(&mut self, outbound: &Outbound) {
        if let Some(queued) = &mut self.queued {
            queued.drop_unsent(outbound);
            if queued.is_empty() {
                self.queued = None;
            }
        }
    }

    /// Write without waiting through `write`. An emptied queue frees its
    /// memory.
    pub(crate) fn flush(
        &mut self,
        write: impl FnMut(&[IoSlice<'_>]) -> io::Result<usize>,
        outbound: &Outbound,
        stats: &Stats,
    ) -> io::Result<Flushed> {
        let Some(queued) = &mut self.queued else {
            return Ok(Flushed {
                all: true,
                progress: false,
                more: false,
            });
        };
        let flushed = queued.flush(write, outbound, stats)?;
        queued.more = flushed.more;
        if flushed.all {
            self.queued = None;
        }
        Ok(flushed)
    }

    /// The last flush stopped at its budget, not at a full socket: the
    /// connection wants another turn at once.
    pub(crate) fn wants_more(&self) -> bool {
        self.queued.as_ref().is_some_and(|queued| queued.more)
    }
}

impl Queued {
    fn is_empty(&self) -> bool {
        self.frames.is_empty() && self.pong.is_none()
    }

    fn push_pong(&mut self, pong: Bytes, outbound: &Outbound) {
        if self.pong.is_none() && outbound.buffered() + pong.len() <= outbound.max_backpressure() {
            outbound.account(pong.len());
            self.frames.push_back(pong);
            return;
        }
        outbound.account(pong.len());
        if let Some(old) = self.pong.replace(pong) {
            outbound.written(old.len());
        }
    }

    /// Drop every frame not yet on the wire, except one already partly
    /// written: the frame after it would be read as the rest of its
    /// payload.
    fn drop_unsent(&mut self, outbound: &Outbound) {
        // The preamble (a `101`) is never dropped: what follows needs it.
        let keep = usize::from(self.front_partial || self.preamble > 0);
        let dropped: usize = self.frames.drain(keep..).map(|f| f.len()).sum::<usize>()
            + self.pong.take().map_or(0, |p| p.len());
        outbound.written(dropped);
    }

    fn flush(
        &mut self,
        mut write: impl FnMut(&[IoSlice<'_>]) -> io::Result<usize>,
        outbound: &Outbound,
        stats: &Stats,
    ) -> io::Result<Flushed> {
        let mut progress = false;
        // The owed pong goes ahead of everything but a frame already on its
        // way; where it is in `frames`, while none of it is written.
        let mut pong_at = None;
        if let Some(pong) = self.pong.take() {
            let at = usize::from(self.front_partial).min(self.frames.len());
            self.frames.insert(at, pong);
            pong_at = Some(at);
        }
        let mut budget = FLUSH_BUDGET;
        while !self.frames.is_empty() {
            if budget == 0 {
                // Not a byte of the pong went out: it stays owed, as below.
                if let Some(at) = pong_at {
                    self.pong = self.frames.remove(at);
                }
                return Ok(Flushed {
                    all: false,
                    progress,
                    more: true,
                });
            }
            // On the stack: a flush allocates nothing.
            let mut slices = [IoSlice::new(&[]); MAX_IO_SLICES];
            let mut count = 0;
            let mut room = budget;
            for (slot, bytes) in slices.iter_mut().zip(self.frames.iter()) {
                let take = bytes.len().min(room);
                *slot = IoSlice::new(&bytes[..take]);
                count += 1;
                room -= take;
                if room == 0 {
                    break;
                }
            }
            match write(&slices[..count]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    progress = true;
                    budget -= n.min(budget);
                    let preamble = n.min(self.preamble);
                    self.preamble -= preamble;
                    outbound.written(n - preamble);
                    stats::add(&stats.bytes_out, (n - preamble) as u64);
                    let popped = self.advance(n);
                    pong_at = pong_at.and_then(|at| {
                        // Still whole, and where?
                        let reached = popped > at || (popped == at && self.front_partial);
                        (!reached).then(|| at - popped)
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    // Not a byte of the pong went out: it stays owed (and
                    // replaceable), so flushes that find the socket full do
                    // not queue one more pong each.
                    if let Some(at) = pong_at {
                        self.pong = self.frames.remove(at);
                    }
                    return Ok(Flushed {
                        all: false,
                        progress,
                        more: false,
                    });
                }
                Err(e) => return Err(e),
            }
        }
        Ok(Flushed {
            all: true,
            progress,
            more: false,
        })
    }

    /// Forget the first `n` bytes, which are on the wire; returns how many
    /// whole frames went.
    fn advance(&mut self, mut n: usize) -> usize {
        let mut popped = 0;
        while n > 0 {
            let front = self.frames.front_mut().expect("wrote more than queued");
            if n >= front.len() {
                n -= front.len();
                self.frames.pop_front();
                self.front_partial = false;
                popped += 1;
            } else {
                front.advance(n);
                self.front_partial = true;
                n = 0;
            }
        }
        popped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SlowConsumerPolicy;

    fn outbound() -> Outbound {
        Outbound::new(
            1 << 20,
            SlowConsumerPolicy::Drop,
            crate::wake::WakeTarget::none(),
        )
    }

    #[test]
    fn pongs_go_out_in_order_while_the_connection_keeps_up() {
        let out = outbound();
        let stats = Stats::default();
        let mut queue = WriteQueue::default();
        for n in 0..3u32 {
            queue.push_pong(Bytes::from(n.to_string()), &out);
        }
        let mut wire = Vec::new();
        assert!(
            queue
                .flush(socket(&mut wire, 100), &out, &stats)
                .unwrap()
                .all
        );
        assert_eq!(wire, b"012");
    }

    /// A socket that takes at most `room` bytes, then would block.
    fn socket(
        taken: &mut Vec<u8>,
        room: usize,
    ) -> impl FnMut(&[IoSlice<'_>]) -> io::Result<usize> + '_ {
        move |slices| {
            let free = room.saturating_sub(taken.len());
            if free == 0 {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let mut n = 0;
            for slice in slices {
                let part = &slice[..slice.len().min(free - n)];
                taken.extend_from_slice(part);
                n += part.len();
                if n == free {
                    break;
                }
            }
            Ok(n)
        }
    }

    #[test]
    fn a_partly_written_frame_survives_a_drop_and_goes_first() {
        let out = outbound();
        let stats = Stats::default();
        let mut queue = WriteQueue::default();
        queue.push_own(Bytes::from_static(b"aaaa"), &out);
        queue.push_own(Bytes::from_static(b"bbbb"), &out);
        let mut wire = Vec::new();
        assert!(!queue.flush(socket(&mut wire, 2), &out, &stats).unwrap().all);
        assert_eq!(wire, b"aa");
        queue.drop_unsent(&out);
        queue.push_own(Bytes::from_static(b"cc"), &out);
        assert!(
            queue
                .flush(socket(&mut wire, 100), &out, &stats)
                .unwrap()
                .all
        );
        assert_eq!(wire, b"aaaacc");
        assert_eq!(out.buffered(), 0);
    }

    #[test]
    fn past_the_limit_only_the_latest_pong_is_owed_and_it_goes_ahead() {
        let out = Outbound::new(4, SlowConsumerPolicy::Drop, crate::wake::WakeTarget::none());
        let stats = Stats::default();
        let mut queue = WriteQueue::default();
        queue.push_own(Bytes::from_static(b"data"), &out);
        for n in 0..1000u32 {
            queue.push_pong(Bytes::from(n.to_string()), &out);
        }
        assert_eq!(out.buffered(), 4 + 3);
        let mut wire = Vec::new();
        assert!(
            queue
                .flush(socket(&mut wire, 100), &out, &stats)
                .unwrap()
                .all
        );
        assert_eq!(wire, b"999data");
        assert_eq!(out.buffered(), 0);
        assert!(queue.is_empty());
    }

    #[test]
    fn the_preamble_goes_first_uncounted_and_survives_a_drop() {
        let out = outbound();
        let stats = Stats::default();
        let mut queue = WriteQueue::default();
        queue.push_own(Bytes::from_static(b"data"), &out);
        queue.push_preamble(Bytes::from_static(b"101 "));
        queue.drop_unsent(&out);
        queue.push_own(Bytes::from_static(b"close"), &out);
        let mut wire = Vec::new();
        assert!(
            queue
                .flush(socket(&mut wire, 100), &out, &stats)
                .unwrap()
                .all
        );
        assert_eq!(wire, b"101 close");
        assert_eq!(out.buffered(), 0);
        assert_eq!(
            stats.bytes_out.load(std::sync::atomic::Ordering::Relaxed),
            5
        );
    }

    #[test]
    fn flushes_into_a_full_socket_keep_owing_one_pong() {
        let out = Outbound::new(4, SlowConsumerPolicy::Drop, crate::wake::WakeTarget::none());
        let stats = Stats::default();
        let mut queue = WriteQueue::default();
        queue.push_own(Bytes::from_static(b"data"), &out);
        let mut wire = Vec::new();
        for n in 0..100u32 {
            queue.push_pong(Bytes::from(format!("p{n}")), &out);
            assert!(!queue.flush(socket(&mut wire, 0), &out, &stats).unwrap().all);
        }
        assert_eq!(out.buffered(), 4 + 3, "data and one pong");
        assert!(
            queue
                .flush(socket(&mut wire, 100), &out, &stats)
                .unwrap()
                .all
        );
        assert_eq!(wire, b"p99data");
    }

    #[test]
    fn a_pong_waits_behind_a_frame_already_on_its_way() {
        let out = outbound();
        let stats = Stats::default();
        let mut queue = WriteQueue::default();
        queue.push_own(Bytes::from_static(b"aaaa"), &out);
        queue.push_own(Bytes::from_static(b"bbbb"), &out);
        let mut wire = Vec::new();
        assert!(!queue.flush(socket(&mut wire, 1), &out, &stats).unwrap().all);
        queue.queued().pong = Some(Bytes::from_static(b"P"));
        out.account(1);
        assert!(
            queue
                .flush(socket(&mut wire, 100), &out, &stats)
                .unwrap()
                .all
        );
        assert_eq!(wire, b"aaaaPbbbb");
    }
}
