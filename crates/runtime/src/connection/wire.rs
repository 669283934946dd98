//! The Switchboard protocol's receiving side of one connection: the
//! preface, the HELLO, then frames, over a byte stream (TCP, Unix) or over
//! WebSocket binary messages.
//!
//! The runtime does what must not wait for JavaScript: it checks every
//! frame's structure and sequence (a bad peer is cut off here, before its
//! bytes reach a worker), answers heartbeats, and negotiates the handshake.
//! Every other frame goes to the connection's worker as its raw bytes, where
//! the shared TypeScript peer (`packages/protocol/src/peer`) gives them
//! meaning: the semantics live in one implementation that both ends run.
//!
//! Memory: like the WebSocket decoder, the reader owns a buffer only while
//! a frame is incomplete; complete frames are handled in place in the
//! I/O thread's read buffer.

use switchboard_proto::wire::{
    decode, decode_preface, peek_header, Frame, Hello, SequenceCheck, WireError, PREFACE,
};

/// Largest HELLO we accept, whatever `maxFrameSize` says: it arrives before
/// the client has proven anything, so it gets a small budget (connect data
/// is a token, not a payload).
const MAX_HELLO_BYTES: usize = 64 * 1024;

/// The longest frame header (type, descriptor, 6-byte length).
pub(super) const MAX_HEADER_BYTES: usize = 8;

/// The most bytes of smaller frames a sender batches into one WebSocket
/// message (docs/protocol.md §2); a receiver accepts at least this.
pub(super) const MAX_BATCH_BYTES: usize = 64 * 1024;

/// 16 bytes from the operating system's random source: the base of the
/// server's UUIDs on one connection (docs/protocol.md §6).
pub(super) fn random_seed() -> [u8; 16] {
    let mut seed = [0; 16];
    // The OS source failing (no /dev/urandom, no getrandom syscall) leaves
    // nothing sensible to do but stop.
    getrandom::fill(&mut seed).expect("the operating system's random source failed");
    seed
}

/// What the reader found, in order.
pub(super) enum WireEvent<'a> {
    /// The client's HELLO: negotiate and answer. `raw` is the whole frame.
    Hello { hello: Hello<'a>, raw: &'a [u8] },
    /// A frame for the worker, as received, and the highest call id of the
    /// peer's so far (for a GO_AWAY).
    Frame { raw: &'a [u8], last_call_id: u64 },
    /// A heartbeat ping: answer with a pong.
    Ping,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Preface,
    Hello,
    Open,
}

pub(super) struct WireReader {
    phase: Phase,
    /// The incomplete frame (or preface) at the end of the input so far.
    partial: Vec<u8>,
    check: SequenceCheck,
    max_frame_size: usize,
}

impl WireReader {
    /// `max_frame_size`: the largest frame body this side accepts (what our
    /// WELCOME announces).
    pub(super) fn new(max_frame_size: usize) -> Self {
        Self {
            phase: Phase::Preface,
            partial: Vec::new(),
            check: SequenceCheck::new(),
            max_frame_size,
        }
    }

    /// Whether the handshake is done.
    #[cfg(test)]
    pub(super) fn is_open(&self) -> bool {
        self.phase == Phase::Open
    }

    /// Whether the input so far ended on a frame boundary (required at the
    /// end of each WebSocket message).
    pub(super) fn at_boundary(&self) -> bool {
        self.partial.is_empty()
    }

    /// Feed received bytes; `on` sees every complete frame in order. An
    /// error from `on` stops reading and is returned.
    pub(super) fn feed(
        &mut self,
        mut input: &[u8],
        on: &mut dyn FnMut(WireEvent<'_>) -> Result<(), WireError>,
    ) -> Result<(), WireError> {
        while !self.partial.is_empty() || self.phase == Phase::Preface {
            if input.is_empty() {
                return Ok(());
            }
            // Complete what is pending with just the bytes it needs, so a
            // large frame is copied once and the frames after it are
            // handled in place.
            let need = self.bytes_needed()?;
            let take = need.min(input.len());
            self.partial.extend_from_slice(&input[..take]);
            input = &input[take..];
            let mut pending = std::mem::take(&mut self.partial);
            let used = self.process(&pending, on)?;
            pending.drain(..used);
            // Keep no buffer once nothing is pending: an idle connection
            // owns none.
            self.partial = if pending.is_empty() {
                Vec::new()
            } else {
                pending
            };
        }
        let used = self.process(input, on)?;
        self.partial.extend_from_slice(&input[used..]);
        Ok(())
    }

    /// How many more bytes the pending data needs before it can be parsed
    /// further (at least 1).
    fn bytes_needed(&self) -> Result<usize, WireError> {
        if self.phase == Phase::Preface {
            return Ok(PREFACE.len() - self.partial.len());
        }
        Ok(match peek_header(&self.partial, self.limit())? {
            Some(header) => header.frame_len().saturating_sub(self.partial.len()).max(1),
            None => MAX_HEADER_BYTES.saturating_sub(self.partial.len()).max(1),
        })
    }

    fn limit(&self) -> usize {
        match self.phase {
            Phase::Open => self.max_frame_size,
            _ => MAX_HELLO_BYTES.min(self.max_frame_size),
        }
    }

    /// Handle every complete unit at the start of `buf`; returns the bytes
    /// used.
    fn process(
        &mut self,
        buf: &[u8],
        on: &mut dyn FnMut(WireEvent<'_>) -> Result<(), WireError>,
    ) -> Result<usize, WireError> {
        let mut used = 0;
        if self.phase == Phase::Preface {
            match decode_preface(buf)? {
                Some(n) => {
                    used = n;
                    self.phase = Phase::Hello;
                }
                None => return Ok(0),
            }
        }
        while let Some((frame, size)) = decode(&buf[used..], self.limit())? {
            let raw = &buf[used..used + size];
            used += size;
            match self.phase {
                Phase::Hello => match frame {
                    Frame::Hello(hello) => {
                        self.phase = Phase::Open;
                        on(WireEvent::Hello { hello, raw })?;
                    }
                    _ => return Err(WireError::Handshake("the first frame is not HELLO")),
                },
                _ => {
                    self.check.check(&frame)?;
                    match frame {
                        Frame::Heartbeat { pong: false } => on(WireEvent::Ping)?,
                        // Any frame is a sign of life; the session counted it.
                        Frame::Heartbeat { pong: true } => {}
                        _ => on(WireEvent::Frame {
                            raw,
                            last_call_id: self.check.last_call_id(),
                        })?,
                    }
                }
            }
        }
        Ok(used)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_proto::wire::{encode, encode_heartbeat, Settings};

    fn hello_bytes() -> Vec<u8> {
        let mut out = PREFACE.to_vec();
        let hello = Hello {
            settings: Settings {
                seed: switchboard_proto::wire::uuid::seed_from_random([7; 16]),
                max_frame_size: 4096,
                initial_window: 4096,
                max_concurrent_calls: 8,
                heartbeat_ms: 0,
                features: 7,
            },
            codecs: vec!["raw"],
            data: b"token",
        };
        encode(&Frame::Hello(hello), &mut out);
        out
    }

    /// Frames as the reader reports them: "hello", "ping", or the hex of a
    /// delivered frame.
    fn run(reader: &mut WireReader, input: &[u8], chunk: usize) -> Result<Vec<String>, WireError> {
        let mut seen = Vec::new();
        for piece in input.chunks(chunk) {
            reader.feed(piece, &mut |event| {
                seen.push(match event {
                    WireEvent::Hello { hello, raw } => {
                        assert_eq!(hello.data, b"token");
                        assert_eq!(raw[0], 0x01);
                        "hello".to_owned()
                    }
                    WireEvent::Ping => "ping".to_owned(),
                    WireEvent::Frame { raw, .. } => {
                        raw.iter().map(|b| format!("{b:02x}")).collect()
                    }
                });
                Ok(())
            })?;
        }
        Ok(seen)
    }

    fn session_bytes() -> Vec<u8> {
        let mut input = hello_bytes();
        // A call (docs/protocol.md §9), a ping, a pong, a large call.
        input.extend_from_slice(&[0x03, 0x10, 0x07, 0x05, 0x03, b'a', b'd', b'd', 1, 2]);
        encode_heartbeat(false, &mut input);
        encode_heartbeat(true, &mut input);
        let mut big = vec![0x03, 0x11, 0x04, 0x01, 0x06, 0x01, b'x'];
        big.extend(std::iter::repeat_n(9u8, 0x0104 - 3));
        input.extend_from_slice(&big);
        input
    }

    #[test]
    fn frames_arrive_whole_whatever_the_chunking() {
        let input = session_bytes();
        let whole = run(&mut WireReader::new(1 << 20), &input, input.len()).unwrap();
        assert_eq!(whole.len(), 4);
        assert_eq!(whole[0], "hello");
        assert_eq!(whole[1], "03100705036164640102");
        assert_eq!(whole[2], "ping");
        assert_eq!(whole[3].len(), 2 * (0x0104 + 4));
        for chunk in [1, 2, 3, 5, 7, 64] {
            let mut reader = WireReader::new(1 << 20);
            assert_eq!(
                run(&mut reader, &input, chunk).unwrap(),
                whole,
                "chunk {chunk}"
            );
            assert!(reader.at_boundary());
            assert!(reader.is_open());
        }
    }

    #[test]
    fn a_bad_preface_is_refused_at_its_first_wrong_byte() {
        let error = run(&mut WireReader::new(1 << 20), b"GET / HTTP/1.1\r\n", 1).unwrap_err();
        assert_eq!(error.code(), "ERR_PROTOCOL_PREFACE");
        let error = run(&mut WireReader::new(1 << 20), b"SWB\x02", 4).unwrap_err();
        assert_eq!(error.code(), "ERR_PROTOCOL_VERSION");
    }

    #[test]
    fn the_first_frame_must_be_hello() {
        let mut input = PREFACE.to_vec();
        encode_heartbeat(false, &mut input);
        let error = run(&mut WireReader::new(1 << 20), &input, 3).unwrap_err();
        assert_eq!(error.code(), "ERR_PROTOCOL_HANDSHAKE");
    }

    #[test]
    fn an_oversized_frame_is_refused_from_its_header() {
        let mut input = hello_bytes();
        // Length 0x10000 in 4 bytes, no body sent.
        input.extend_from_slice(&[0x03, 0x12, 0x00, 0x00, 0x01, 0x00]);
        let error = run(&mut WireReader::new(4096), &input, 1).unwrap_err();
        assert_eq!(error.code(), "ERR_PROTOCOL_FRAME_TOO_LARGE");
    }

    #[test]
    fn call_ids_must_increase() {
        let mut input = hello_bytes();
        let call = [0x03, 0x00, 0x03, 0x05, 0x01, b'a'];
        input.extend_from_slice(&call);
        input.extend_from_slice(&call);
        let error = run(&mut WireReader::new(4096), &input, 4).unwrap_err();
        assert_eq!(error.code(), "ERR_PROTOCOL_CALL_ID");
    }

    #[test]
    fn an_incomplete_frame_leaves_the_reader_off_a_boundary() {
        let mut input = hello_bytes();
        input.extend_from_slice(&[0x03, 0x10, 0x07, 0x05]);
        let mut reader = WireReader::new(4096);
        run(&mut reader, &input, input.len()).unwrap();
        assert!(!reader.at_boundary());
    }
}
