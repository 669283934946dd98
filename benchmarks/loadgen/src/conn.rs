//! One client connection's state and its byte plumbing: reading into the
//! shared scratch buffer with a per-connection carry of partial frames, and
//! the per-connection outbox written once per loop turn.

use std::io::{self, Read, Write};

use mio::net::TcpStream;

use crate::frame::Deframer;

/// The largest message accepted from a server; far above any scenario's.
pub const MAX_MESSAGE: usize = 64 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Not started yet, or waiting to retry.
    Waiting,
    /// TCP connect in progress.
    Connecting,
    /// Upgrade request sent; waiting for the 101.
    Upgrading {
        accept: [u8; 28],
    },
    /// Waiting for Engine.IO's open packet or SockJS's `o`.
    Opening,
    /// Socket.IO namespace join sent; waiting for its answer.
    Joining,
    Ready,
    Closed,
}

impl Phase {
    /// Whether the connection counts against the handshake concurrency limit.
    pub fn opening(&self) -> bool {
        matches!(
            self,
            Phase::Connecting | Phase::Upgrading { .. } | Phase::Opening | Phase::Joining
        )
    }
}

/// Bytes queued for the socket. Appended to during a loop turn, written once
/// at its end (or when the socket becomes writable again).
#[derive(Default)]
pub struct Outbox {
    pub buf: Vec<u8>,
    /// How much of `buf` the socket has already taken.
    pub pos: usize,
    /// Whether the connection is on the engine's list to flush this turn.
    pub queued: bool,
}

impl Outbox {
    /// Bytes not yet taken by the socket.
    #[inline]
    pub fn pending(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Writes what the socket takes. A short write means the send buffer
    /// is full: the edge-triggered writable event calls this again later.
    pub fn flush<W: Write>(&mut self, w: &mut W) -> io::Result<()> {
        while self.pos < self.buf.len() {
            match w.write(&self.buf[self.pos..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.pos += n;
                    if self.pos < self.buf.len() {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
            // Idle connections should not keep a burst's worth of memory;
            // but a connection that queues a megabyte at a time (16
            // pipelined 64 KiB HTTP requests) would free and fault in its
            // buffer on every drain below 4 MiB.
            if self.buf.capacity() > 4 << 20 {
                self.buf = Vec::new();
            }
        } else if self.pos > self.buf.len() / 2 {
            // Keep appends amortised: drop the sent half once it dominates.
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        Ok(())
    }
}

pub struct Conn {
    pub stream: Option<TcpStream>,
    pub phase: Phase,
    pub attempts: u8,
    /// The unparsed tail (a partial frame) of the last read.
    pub carry: Vec<u8>,
    pub rx: Deframer,
    pub out: Outbox,
    /// channels: the server answered `joined`.
    pub joined: bool,
}

impl Conn {
    pub fn new() -> Conn {
        Conn {
            stream: None,
            phase: Phase::Waiting,
            attempts: 0,
            carry: Vec::new(),
            rx: Deframer::new(MAX_MESSAGE),
            out: Outbox::default(),
            joined: false,
        }
    }

    /// Forgets everything of a previous attempt (the engine drops the socket).
    pub fn reset(&mut self) {
        self.stream = None;
        self.carry = Vec::new();
        self.rx = Deframer::new(MAX_MESSAGE);
        self.out = Outbox::default();
        self.joined = false;
    }
}

impl Default for Conn {
    fn default() -> Self {
        Conn::new()
    }
}

/// How a burst of reads ended.
#[derive(Debug)]
pub enum ReadEnd {
    /// The socket has no more data for now.
    Drained,
    /// The read budget ran out with data possibly left: read again soon.
    Budget,
    /// The peer closed the connection.
    Eof,
    Error(io::Error),
}

/// Reads from `r` until it would block (or `max_reads` reads), handing
/// `process` the buffered bytes after each read: the carried-over partial
/// frame followed by the new data. `process` returns how many bytes it
/// consumed; the rest is carried to the next read (or the next call).
///
/// `scratch` is shared by all connections, so a busy connection's data is
/// read into memory that stays in cache; it grows only when one frame does
/// not fit in it.
pub fn pump<R: Read, E>(
    r: &mut R,
    scratch: &mut Vec<u8>,
    carry: &mut Vec<u8>,
    max_reads: usize,
    mut process: impl FnMut(&[u8]) -> Result<usize, E>,
) -> Result<ReadEnd, E> {
    let mut len = carry.len();
    if scratch.len() < len * 2 {
        scratch.resize((len * 2).next_power_of_two(), 0);
    }
    scratch[..len].copy_from_slice(carry);
    carry.clear();
    let mut end = ReadEnd::Budget;
    let mut reads = 0;
    while reads < max_reads {
        if len == scratch.len() {
            // One incomplete frame fills the buffer: make room for the rest
            // (the deframer refuses frames over MAX_MESSAGE first).
            let grown = (scratch.len() * 2).max(4096);
            scratch.resize(grown, 0);
        }
        let room = scratch.len() - len;
        match r.read(&mut scratch[len..]) {
            Ok(0) => {
                end = ReadEnd::Eof;
                break;
            }
            Ok(n) => {
                reads += 1;
                len += n;
                let used = match process(&scratch[..len]) {
                    Ok(used) => used,
                    Err(e) => {
                        // Nothing more from this connection will be parsed.
                        return Err(e);
                    }
                };
                scratch.copy_within(used..len, 0);
                len -= used;
                if n < room {
                    // A short read emptied the socket's receive queue; data
                    // arriving later raises a new edge-triggered event, so
                    // the read that would return WouldBlock can be skipped.
                    end = ReadEnd::Drained;
                    break;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                end = ReadEnd::Drained;
                break;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                end = ReadEnd::Error(e);
                break;
            }
        }
    }
    carry.extend_from_slice(&scratch[..len]);
    Ok(end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{Flow, Msg};
    use std::collections::VecDeque;

    /// Returns the queued chunks one per read, then WouldBlock.
    struct Chunks(VecDeque<Vec<u8>>);

    impl Read for Chunks {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let Some(mut chunk) = self.0.pop_front() else {
                return Err(io::ErrorKind::WouldBlock.into());
            };
            let n = chunk.len().min(buf.len());
            buf[..n].copy_from_slice(&chunk[..n]);
            if n < chunk.len() {
                self.0.push_front(chunk.split_off(n));
            }
            Ok(n)
        }
    }

    fn text_frame(payload: &[u8]) -> Vec<u8> {
        let mut f = vec![0x81];
        if payload.len() < 126 {
            f.push(payload.len() as u8);
        } else {
            f.push(126);
            f.extend_from_slice(&(payload.len() as u16).to_be_bytes());
        }
        f.extend_from_slice(payload);
        f
    }

    #[test]
    fn carries_partial_frames_between_bursts() {
        let msgs: Vec<Vec<u8>> = (0..200)
            .map(|i| vec![b'a' + (i % 26) as u8; 1 + i * 37 % 3000])
            .collect();
        let stream: Vec<u8> = msgs.iter().flat_map(|m| text_frame(m)).collect();
        for (chunk, scratch_len) in [(1, 64), (13, 64), (1000, 512), (4096, 1 << 16)] {
            let mut src = Chunks(stream.chunks(chunk).map(|c| c.to_vec()).collect());
            let mut scratch = vec![0u8; scratch_len];
            let mut carry = Vec::new();
            let mut rx = Deframer::new(MAX_MESSAGE);
            let mut got = Vec::new();
            loop {
                // A budget of 3 reads per burst, as a busy loop turn would have.
                let end = pump(&mut src, &mut scratch, &mut carry, 3, |buf| {
                    rx.feed(buf, |m| {
                        if let Msg::Text(t) = m {
                            got.push(t.to_vec());
                        }
                        Flow::Continue
                    })
                })
                .unwrap();
                if matches!(end, ReadEnd::Drained) && src.0.is_empty() {
                    break;
                }
            }
            assert!(carry.is_empty());
            assert_eq!(got, msgs, "chunk {chunk}, scratch {scratch_len}");
        }
    }

    #[test]
    fn eof_and_errors() {
        struct Eof;
        impl Read for Eof {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Ok(0)
            }
        }
        let (mut scratch, mut carry) = (vec![0u8; 16], Vec::new());
        let end = pump(&mut Eof, &mut scratch, &mut carry, 4, |_| {
            Ok::<usize, ()>(0)
        })
        .unwrap();
        assert!(matches!(end, ReadEnd::Eof));
        let mut src = Chunks(VecDeque::from([vec![1, 2, 3]]));
        assert_eq!(
            pump(
                &mut src,
                &mut scratch,
                &mut carry,
                4,
                |_| Err::<usize, &str>("bad")
            )
            .unwrap_err(),
            "bad"
        );
    }

    #[test]
    fn outbox_partial_writes() {
        /// Takes at most `cap` bytes per write, then blocks once.
        struct Slow {
            got: Vec<u8>,
            cap: usize,
            block_next: bool,
        }
        impl Write for Slow {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                if std::mem::replace(&mut self.block_next, false) {
                    return Err(io::ErrorKind::WouldBlock.into());
                }
                let n = b.len().min(self.cap);
                self.got.extend_from_slice(&b[..n]);
                self.block_next = true;
                Ok(n)
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut w = Slow {
            got: Vec::new(),
            cap: 3,
            block_next: false,
        };
        let mut out = Outbox::default();
        let data: Vec<u8> = (0..20).collect();
        out.buf.extend_from_slice(&data);
        let mut rounds = 0;
        while out.pending() > 0 {
            out.flush(&mut w).unwrap();
            rounds += 1;
            assert!(rounds < 100);
        }
        assert_eq!(w.got, data);
        assert_eq!((out.pos, out.buf.len()), (0, 0));
    }
}
