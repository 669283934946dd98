//! RFC 6455 framing, client side: masked frames out, unmasked frames in.
//!
//! Incoming frames are parsed in place from the read buffer; a message is
//! handed out as a slice of that buffer, so nothing is allocated per message.
//! Only fragmented messages (rare: servers fragment only very large
//! messages) are assembled in a per-connection buffer.

pub const OP_CONT: u8 = 0x0;
pub const OP_TEXT: u8 = 0x1;
pub const OP_BINARY: u8 = 0x2;
pub const OP_CLOSE: u8 = 0x8;
pub const OP_PING: u8 = 0x9;
pub const OP_PONG: u8 = 0xA;

/// xorshift64*: a few cycles per mask, and masks that differ from frame to
/// frame as RFC 6455 §5.3 requires (a fixed mask is not allowed). Not a
/// cryptographic generator: the load generator only talks to its own server.
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> Self {
        // A zero state would stay zero forever.
        XorShift(seed | 1)
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    #[inline]
    pub fn next_mask(&mut self) -> [u8; 4] {
        // The high half of xorshift64* output is the better-mixed half.
        ((self.next_u64() >> 32) as u32).to_ne_bytes()
    }
}

/// XORs `data` with the 4-byte `mask`, starting at mask offset 0, eight bytes
/// at a time (the compiler vectorises the word loop further).
#[inline]
pub fn apply_mask(data: &mut [u8], mask: [u8; 4]) {
    let word = u64::from_ne_bytes([
        mask[0], mask[1], mask[2], mask[3], mask[0], mask[1], mask[2], mask[3],
    ]);
    let mut chunks = data.chunks_exact_mut(8);
    for chunk in &mut chunks {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(chunk);
        chunk.copy_from_slice(&(u64::from_ne_bytes(bytes) ^ word).to_ne_bytes());
    }
    // The tail starts at a multiple of 8, so at mask offset 0 again.
    for (i, b) in chunks.into_remainder().iter_mut().enumerate() {
        *b ^= mask[i & 3];
    }
}

/// Appends the header of a masked frame (FIN set) whose payload of `len`
/// bytes the caller appends next; returns where that payload starts, for
/// [`finish_masked`].
#[inline]
pub fn begin_masked(out: &mut Vec<u8>, opcode: u8, len: usize, mask: [u8; 4]) -> usize {
    out.reserve(14 + len);
    out.push(0x80 | opcode);
    if len < 126 {
        out.push(0x80 | len as u8);
    } else if len <= 0xFFFF {
        out.push(0x80 | 126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0x80 | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    out.extend_from_slice(&mask);
    out.len()
}

/// Masks the payload appended since [`begin_masked`] returned `start`.
#[inline]
pub fn finish_masked(out: &mut [u8], start: usize, mask: [u8; 4]) {
    apply_mask(&mut out[start..], mask);
}

/// One complete message (or control frame) from the server.
#[derive(Debug, PartialEq, Eq)]
pub enum Msg<'a> {
    Text(&'a [u8]),
    Binary(&'a [u8]),
    Ping(&'a [u8]),
    Pong,
    /// The close code, if the frame carried one.
    Close(Option<u16>),
}

#[derive(Debug, PartialEq, Eq)]
pub enum FrameError {
    ReservedBits,
    /// RFC 6455 §5.1: a client must fail a connection whose server masks.
    MaskedByServer,
    BadOpcode(u8),
    BadControlFrame,
    UnexpectedContinuation,
    InterleavedMessage,
    TooLarge(u64),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::ReservedBits => {
                write!(f, "frame with RSV bits set (no extension was negotiated)")
            }
            FrameError::MaskedByServer => write!(f, "masked frame from the server"),
            FrameError::BadOpcode(op) => write!(f, "unknown opcode {op:#x}"),
            FrameError::BadControlFrame => write!(f, "fragmented or oversized control frame"),
            FrameError::UnexpectedContinuation => {
                write!(f, "continuation frame outside a fragmented message")
            }
            FrameError::InterleavedMessage => {
                write!(f, "new data message inside a fragmented message")
            }
            FrameError::TooLarge(n) => write!(f, "message of {n} bytes is over the limit"),
        }
    }
}

/// Whether the caller wants more messages from the current buffer.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Flow {
    Continue,
    Stop,
}

/// Per-connection parser state: only what a fragmented message needs.
pub struct Deframer {
    frag: Vec<u8>,
    /// Opcode of the fragmented message being assembled, 0 when none.
    frag_op: u8,
    max_message: usize,
}

impl Deframer {
    pub fn new(max_message: usize) -> Self {
        Deframer {
            frag: Vec::new(),
            frag_op: 0,
            max_message,
        }
    }

    /// Parses the complete frames at the start of `buf`, handing each
    /// message to `on_msg`; returns how many bytes it consumed. An incomplete
    /// frame at the end is left for the next call, with more bytes after it.
    /// Stops early (after the message) when `on_msg` returns [`Flow::Stop`].
    #[inline]
    pub fn feed<F>(&mut self, buf: &[u8], mut on_msg: F) -> Result<usize, FrameError>
    where
        F: FnMut(Msg<'_>) -> Flow,
    {
        let mut pos = 0;
        while buf.len() - pos >= 2 {
            let b0 = buf[pos];
            let b1 = buf[pos + 1];
            if b0 & 0x70 != 0 {
                return Err(FrameError::ReservedBits);
            }
            if b1 & 0x80 != 0 {
                return Err(FrameError::MaskedByServer);
            }
            let (len, head) = match b1 & 0x7F {
                126 => {
                    if buf.len() - pos < 4 {
                        break;
                    }
                    (u16::from_be_bytes([buf[pos + 2], buf[pos + 3]]) as u64, 4)
                }
                127 => {
                    if buf.len() - pos < 10 {
                        break;
                    }
                    let mut b = [0u8; 8];
                    b.copy_from_slice(&buf[pos + 2..pos + 10]);
                    (u64::from_be_bytes(b), 10)
                }
                n => (n as u64, 2),
            };
            if len > self.max_message as u64 {
                return Err(FrameError::TooLarge(len));
            }
            let len = len as usize;
            if buf.len() - pos < head + len {
                break;
            }
            let payload = &buf[pos + head..pos + head + len];
            pos += head + len;
            let fin = b0 & 0x80 != 0;
            let flow = match b0 & 0x0F {
                op @ (OP_TEXT | OP_BINARY) => {
                    if self.frag_op != 0 {
                        return Err(FrameError::InterleavedMessage);
                    }
                    if fin {
                        on_msg(if op == OP_TEXT {
                            Msg::Text(payload)
                        } else {
                            Msg::Binary(payload)
                        })
                    } else {
                        self.frag_op = op;
                        self.frag.clear();
                        self.frag.extend_from_slice(payload);
                        Flow::Continue
                    }
                }
                OP_CONT => {
                    if self.frag_op == 0 {
                        return Err(FrameError::UnexpectedContinuation);
                    }
                    if self.frag.len() + len > self.max_message {
                        return Err(FrameError::TooLarge((self.frag.len() + len) as u64));
                    }
                    self.frag.extend_from_slice(payload);
                    if fin {
                        let op = std::mem::replace(&mut self.frag_op, 0);
                        let flow = on_msg(if op == OP_TEXT {
                            Msg::Text(&self.frag)
                        } else {
                            Msg::Binary(&self.frag)
                        });
                        // Keep the allocation unless a huge message bloated it.
                        self.frag.clear();
                        if self.frag.capacity() > 1 << 20 {
                            self.frag = Vec::new();
                        }
                        flow
                    } else {
                        Flow::Continue
                    }
                }
                op @ (OP_CLOSE | OP_PING | OP_PONG) => {
                    if !fin || len > 125 {
                        return Err(FrameError::BadControlFrame);
                    }
                    on_msg(match op {
                        OP_PING => Msg::Ping(payload),
                        OP_PONG => Msg::Pong,
                        _ => Msg::Close(
                            (len >= 2).then(|| u16::from_be_bytes([payload[0], payload[1]])),
                        ),
                    })
                }
                op => return Err(FrameError::BadOpcode(op)),
            };
            if flow == Flow::Stop {
                break;
            }
        }
        Ok(pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An unmasked server frame.
    fn server_frame(fin: bool, op: u8, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![if fin { 0x80 | op } else { op }];
        if payload.len() < 126 {
            f.push(payload.len() as u8);
        } else if payload.len() <= 0xFFFF {
            f.push(126);
            f.extend_from_slice(&(payload.len() as u16).to_be_bytes());
        } else {
            f.push(127);
            f.extend_from_slice(&(payload.len() as u64).to_be_bytes());
        }
        f.extend_from_slice(payload);
        f
    }

    #[derive(Debug, PartialEq)]
    enum Owned {
        Text(Vec<u8>),
        Binary(Vec<u8>),
        Ping(Vec<u8>),
        Pong,
        Close(Option<u16>),
    }

    /// Feeds `stream` cut into chunks of `chunk` bytes, carrying the
    /// unconsumed tail over as the connection code does.
    fn parse_chunked(stream: &[u8], chunk: usize) -> Vec<Owned> {
        let mut d = Deframer::new(1 << 20);
        let mut out = Vec::new();
        let mut buf = Vec::new();
        for piece in stream.chunks(chunk) {
            buf.extend_from_slice(piece);
            let used = d
                .feed(&buf, |m| {
                    out.push(match m {
                        Msg::Text(t) => Owned::Text(t.to_vec()),
                        Msg::Binary(t) => Owned::Binary(t.to_vec()),
                        Msg::Ping(t) => Owned::Ping(t.to_vec()),
                        Msg::Pong => Owned::Pong,
                        Msg::Close(c) => Owned::Close(c),
                    });
                    Flow::Continue
                })
                .unwrap();
            buf.drain(..used);
        }
        assert!(buf.is_empty());
        out
    }

    #[test]
    fn frames_across_every_chunk_boundary() {
        let big = vec![b'y'; 70_000];
        let mid = vec![b'z'; 300];
        let mut stream = Vec::new();
        stream.extend(server_frame(true, OP_TEXT, b"hello"));
        stream.extend(server_frame(true, OP_PING, b"p"));
        stream.extend(server_frame(true, OP_TEXT, &mid));
        // A fragmented text message with a ping between its fragments.
        stream.extend(server_frame(false, OP_TEXT, b"ab"));
        stream.extend(server_frame(true, OP_PING, b""));
        stream.extend(server_frame(false, OP_CONT, b"cd"));
        stream.extend(server_frame(true, OP_CONT, b"ef"));
        stream.extend(server_frame(true, OP_BINARY, &big));
        stream.extend(server_frame(true, OP_PONG, b""));
        stream.extend(server_frame(true, OP_CLOSE, &1001u16.to_be_bytes()));
        let want = vec![
            Owned::Text(b"hello".to_vec()),
            Owned::Ping(b"p".to_vec()),
            Owned::Text(mid.clone()),
            Owned::Ping(vec![]),
            Owned::Text(b"abcdef".to_vec()),
            Owned::Binary(big.clone()),
            Owned::Pong,
            Owned::Close(Some(1001)),
        ];
        for chunk in [1, 2, 3, 5, 7, 64, 125, 126, 127, 4096, stream.len()] {
            assert_eq!(parse_chunked(&stream, chunk), want, "chunk size {chunk}");
        }
    }

    #[test]
    fn stop_leaves_the_rest() {
        let mut stream = server_frame(true, OP_TEXT, b"a");
        stream.extend(server_frame(true, OP_TEXT, b"b"));
        let mut d = Deframer::new(100);
        let used = d.feed(&stream, |_| Flow::Stop).unwrap();
        assert_eq!(used, 3);
    }

    #[test]
    fn protocol_violations() {
        let mut d = Deframer::new(100);
        let ok = |_: Msg<'_>| Flow::Continue;
        assert_eq!(
            d.feed(&[0x81, 0x81, 0, 0, 0, 0, 0], ok),
            Err(FrameError::MaskedByServer)
        );
        assert_eq!(d.feed(&[0xC1, 0x00], ok), Err(FrameError::ReservedBits));
        assert_eq!(d.feed(&[0x83, 0x00], ok), Err(FrameError::BadOpcode(3)));
        assert_eq!(d.feed(&[0x09, 0x00], ok), Err(FrameError::BadControlFrame));
        assert_eq!(
            d.feed(&[0x80, 0x00], ok),
            Err(FrameError::UnexpectedContinuation)
        );
        assert_eq!(
            d.feed(&[0x81, 127, 0, 0, 0, 0, 0, 0, 1, 0], ok),
            Err(FrameError::TooLarge(256))
        );
        let mut d = Deframer::new(100);
        assert_eq!(
            d.feed(&[0x01, 0x00, 0x81, 0x00], ok),
            Err(FrameError::InterleavedMessage)
        );
    }

    #[test]
    fn masked_frames_roundtrip() {
        let mut rng = XorShift::new(42);
        for len in [0usize, 1, 7, 8, 9, 125, 126, 65_535, 65_536] {
            let payload: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let mask = rng.next_mask();
            let mut out = Vec::new();
            let start = begin_masked(&mut out, OP_TEXT, len, mask);
            out.extend_from_slice(&payload);
            finish_masked(&mut out, start, mask);
            assert_eq!(out[0], 0x81);
            assert_eq!(out[1] & 0x80, 0x80, "mask bit");
            assert_eq!(&out[start - 4..start], &mask);
            // Unmask byte by byte, the RFC's way, and compare.
            let back: Vec<u8> = out[start..]
                .iter()
                .enumerate()
                .map(|(i, b)| b ^ mask[i % 4])
                .collect();
            assert_eq!(back, payload, "len {len}");
            let declared = match out[1] & 0x7F {
                126 => u16::from_be_bytes([out[2], out[3]]) as usize,
                127 => u64::from_be_bytes(out[2..10].try_into().unwrap()) as usize,
                n => n as usize,
            };
            assert_eq!(declared, len);
        }
    }

    #[test]
    fn masks_vary() {
        let mut rng = XorShift::new(7);
        let masks: std::collections::HashSet<[u8; 4]> =
            (0..1000).map(|_| rng.next_mask()).collect();
        assert!(masks.len() > 990);
    }
}
