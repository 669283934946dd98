//! A large file streamed to the client, whether `app.static`'s or a
//! handler's (`res.file`): its head is queued once its turn came, then
//! pieces of 64 KiB read at the file's offset, topped up whenever less
//! than 256 KiB is queued for the connection, so a connection holds at
//! most about 320 KiB of a file however large it is and however slowly its
//! client reads. The pieces are shared with the write queue, not copied.
//! The top-up runs where the reactor services the connection: when the
//! socket becomes writable, and at once again while the socket takes all
//! it is given (`Session::wants_another_turn`). While a file is sent
//! nothing more is read; pipelined requests wait in the socket.
//!
//! At most two files are in hand: a handler's (its response is first in
//! line) and a static file of a later request, whose head waits for the
//! handler's file to end. So sends are a queue, the front one moving.
//!
//! **Failures.** A read that fails once the length was promised (the file
//! shrank under us) closes the connection: the client sees a body shorter
//! than its `Content-Length`. A client that takes nothing for
//! `bodyTimeout` while a file is sent is disconnected.

use std::fs::File;
use std::io::{self, Read};
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::answers::status_of;
use super::{Core, ReadState};
use crate::session::Machine;

/// A larger file is read in pieces of this size: the I/O thread's read
/// buffer's size, a few reads per turn.
const PIECE: u64 = 64 * 1024;
/// Pieces are queued while less than this is waiting to be written: four
/// pieces, enough to keep a fast client's socket busy between two turns
/// (on loopback the kernel takes a few hundred KiB per write), little
/// enough that ten thousand slow clients cost 3 GiB at worst.
const QUEUE_LOW: usize = 256 * 1024;

/// A file being streamed to the client.
pub(super) struct FileSend {
    file: File,
    /// Bytes still to read and queue (the file's offset is where they
    /// start).
    remaining: u64,
    /// The response head, until it is queued.
    head: Option<Vec<u8>>,
    /// `app.static`'s: the head waits until the responses JavaScript owes
    /// for this many requests ended. `None` (a handler's file): its turn
    /// has come.
    gate: Option<u32>,
    /// The connection closes after this response.
    close: bool,
    /// A handler's file: the status the worker hears of at its end.
    reports: Option<u16>,
    /// The status its head says, counted at its end (`app.static`'s: a
    /// handler's file is counted by its worker).
    status: Option<u16>,
    /// The last time the client took bytes (or the head was queued), and
    /// what was queued then: a client that takes nothing for
    /// `body_timeout` is disconnected.
    progress_at: Instant,
    buffered_seen: usize,
}

impl FileSend {
    pub(super) fn new(
        file: File,
        remaining: u64,
        head: Vec<u8>,
        gate: Option<u32>,
        close: bool,
        reports: Option<u16>,
        now: Instant,
    ) -> Self {
        FileSend {
            file,
            remaining,
            status: status_of(&head),
            head: Some(head),
            gate,
            close,
            reports,
            progress_at: now,
            buffered_seen: 0,
        }
    }

    /// When the client will have taken nothing for too long.
    pub(super) fn deadline(&self, timeout: Duration) -> Option<Instant> {
        self.head.is_none().then(|| self.progress_at + timeout)
    }

    /// The next piece, read at the file's offset.
    /// `read_exact` into a zeroed buffer: one `read` per piece from the
    /// page cache. (`take(n).read_to_end` made three or four: a read, the
    /// one that finds the end of the `Take`, and a small probe read when the
    /// capacity is exactly filled; 59 `read`s per 1 MiB file under strace.)
    /// A file that shrank fails with `UnexpectedEof`.
    fn read_piece(&mut self) -> io::Result<Bytes> {
        let n = self.remaining.min(PIECE);
        let mut piece = vec![0; n as usize];
        (&self.file).read_exact(&mut piece)?;
        self.remaining -= n;
        Ok(Bytes::from(piece))
    }
}

/// Where the front send stands after a move.
enum Moved {
    /// Waiting: for its turn, or for the client to take what is queued.
    Waiting,
    /// Its last byte is queued.
    Done,
    /// A read failed once the length was promised: the connection must
    /// close.
    Unreadable,
    /// The connection closed meanwhile (evicted, shutting down).
    Closed,
}

impl Core {
    /// Move the files being sent along: queue the front one's head once its
    /// turn came, then pieces while little is queued; at its end, the next
    /// one, and finally back to reading requests (or the end of the
    /// connection).
    pub(super) fn pump(&mut self, machine: &mut Machine, now: Instant) {
        while let Some(send) = self.sending.front_mut() {
            match move_send(send, machine, now) {
                Moved::Waiting => return,
                Moved::Unreadable => {
                    self.sending.clear();
                    self.last_request = true;
                    self.close_now(machine);
                    return;
                }
                Moved::Closed => {
                    self.sending.clear();
                    self.state = ReadState::Done;
                    return;
                }
                Moved::Done => {
                    let done = self.sending.pop_front().expect("the front send");
                    let outbound = &machine.connection.outbound;
                    match done.reports {
                        Some(status) => {
                            outbound.end_own_response(done.close);
                            self.file_done(machine, status, true, now);
                        }
                        None => {
                            self.count(machine, done.status, now);
                            if done.close {
                                outbound.push_own_response(self.dispatched, &[], true);
                                self.state = ReadState::Done;
                            }
                        }
                    }
                    self.idle_since = now;
                }
            }
        }
    }

    /// A file is being sent and the client took nothing for `timeout`:
    /// it is disconnected.
    pub(super) fn send_stalled(&mut self, machine: &mut Machine, now: Instant, timeout: Duration) {
        let Some(send) = self.sending.front_mut() else {
            return;
        };
        let buffered = machine.connection.outbound.buffered();
        if send.head.is_some() || now < send.progress_at + timeout {
            return;
        }
        if buffered < send.buffered_seen {
            // It did take some, unseen by a top-up.
            send.progress_at = now;
            send.buffered_seen = buffered;
            return;
        }
        self.sending.clear();
        self.state = ReadState::Done;
        machine.fail_with(1006, "", now);
    }

    /// Whether a file is being sent (its head queued): the reactor then
    /// services the connection again while the socket takes everything.
    pub(super) fn sending(&self) -> bool {
        matches!(self.sending.front(), Some(send) if send.head.is_none())
    }
}

fn move_send(send: &mut FileSend, machine: &mut Machine, now: Instant) -> Moved {
    let outbound = &machine.connection.outbound;
    if let Some(head) = send.head.take() {
        let queued = match send.gate {
            Some(before) => {
                let queued = outbound.push_own_response(before, &head, false);
                if !queued {
                    // Responses before it are pending: their end wakes us.
                    send.head = Some(head);
                    return Moved::Waiting;
                }
                true
            }
            None => outbound.push_own_bytes(Bytes::from(head)),
        };
        if !queued {
            return Moved::Closed;
        }
        send.progress_at = now;
    } else if outbound.buffered() < send.buffered_seen {
        send.progress_at = now;
    }
    while send.remaining > 0 && outbound.buffered() < QUEUE_LOW {
        let Ok(piece) = send.read_piece() else {
            // The length is promised: only closing tells the client.
            return Moved::Unreadable;
        };
        if !outbound.push_own_bytes(piece) {
            // Closed meanwhile (evicted, shutting down).
            return Moved::Closed;
        }
    }
    send.buffered_seen = outbound.buffered();
    if send.remaining == 0 {
        Moved::Done
    } else {
        Moved::Waiting
    }
}
