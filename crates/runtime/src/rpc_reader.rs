//! The Switchboard protocol's reading side, pure: the preface, the HELLO,
//! then frames, over a byte stream (TCP, Unix, TLS) or over WebSocket
//! binary messages. It checks; the session (`rpc.rs`) acts.
//!
//! The runtime does what must not wait for JavaScript: it checks every
//! frame's structure and sequence (a bad peer is cut off here, before its
//! bytes reach a worker), answers heartbeats, and negotiates the handshake.
//! Every other frame goes to the connection's worker as its raw bytes, where
//! the shared TypeScript peer (`packages/rpc/src/peer`) gives them
//! meaning: the semantics live in one implementation that both ends run.
//!
//! Memory: like the WebSocket decoder, the reader owns a buffer only while
//! a frame is incomplete; complete frames are handled in place in the
//! I/O thread's read buffer. A large frame is reassembled in a buffer
//! grown towards its announced size (at most 8× what has arrived, so an
//! announcement alone reserves little), and that buffer is what reaches
//! the worker: its bytes are copied once, from the read buffer.

use switchboard_proto::rpc::{
    decode, decode_preface, peek_header, Frame, Hello, ProtocolError, SequenceCheck,
    MAX_HANDSHAKE_SIZE, PREFACE,
};

/// The longest frame header (type, descriptor, 6-byte length).
pub(crate) const MAX_HEADER_BYTES: usize = 8;

/// Frames at least this large that were reassembled across reads are
/// handed over in their own buffer ([`RpcEvent::Owned`]) instead of being
/// copied into the worker's batch.
pub(crate) const OWNED_FRAME_BYTES: usize = 64 * 1024;

/// The reassembly buffer's first reservation for a frame it grows towards.
const MIN_RESERVE: usize = 64 * 1024;

/// The most bytes of smaller frames a sender batches into one WebSocket
/// message (docs/protocol.md §2); a receiver accepts at least this.
pub(crate) const MAX_BATCH_BYTES: usize = 64 * 1024;

/// What the reader found, in order.
pub(crate) enum RpcEvent<'a> {
    /// The client's HELLO: negotiate and answer. `raw` is the whole frame.
    Hello { hello: Hello<'a>, raw: &'a [u8] },
    /// A frame for the worker, as received, and the highest call id of the
    /// peer's so far (for a GO_AWAY).
    Frame { raw: &'a [u8], last_call_id: u64 },
    /// The same for a large frame reassembled across reads: the buffer it
    /// was reassembled in, to be handed over without a copy.
    Owned { frame: Vec<u8>, last_call_id: u64 },
    /// A heartbeat ping: answer with a pong.
    Ping,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Preface,
    Hello,
    Open,
}

pub(crate) struct RpcReader {
    phase: Phase,
    /// The incomplete frame (or preface) at the end of the input so far.
    partial: Vec<u8>,
    check: SequenceCheck,
    max_frame_size: usize,
}

impl RpcReader {
    /// `max_frame_size`: the largest frame body this side accepts (what our
    /// WELCOME announces).
    pub(crate) fn new(max_frame_size: usize) -> Self {
        Self {
            phase: Phase::Preface,
            partial: Vec::new(),
            check: SequenceCheck::new(),
            max_frame_size,
        }
    }

    /// Whether the handshake is done.
    #[cfg(test)]
    pub(crate) fn is_open(&self) -> bool {
        self.phase == Phase::Open
    }

    /// Whether the input so far ended on a frame boundary (required at the
    /// end of each WebSocket message).
    pub(crate) fn at_boundary(&self) -> bool {
        self.partial.is_empty()
    }

    /// Feed received bytes; `on` sees every complete frame in order. An
    /// error from `on` stops reading and is returned.
    pub(crate) fn feed(
        &mut self,
        mut input: &[u8],
        on: &mut dyn FnMut(RpcEvent<'_>) -> Result<(), ProtocolError>,
    ) -> Result<(), ProtocolError> {
        while !self.partial.is_empty() || self.phase == Phase::Preface {
            if input.is_empty() {
                return Ok(());
            }
            // Complete what is pending with just the bytes it needs, so a
            // large frame is copied once and the frames after it are
            // handled in place.
            let need = self.bytes_needed()?;
            let take = need.min(input.len());
            let len = self.partial.len();
            if self.partial.capacity() - len < take {
                // Towards the frame's size in few steps (doubling would copy
                // a large frame about once more), but at most 8× what has
                // arrived.
                let target = (len + need).min((len + take).max(MIN_RESERVE) * 8);
                self.partial.reserve_exact(target - len);
            }
            self.partial.extend_from_slice(&input[..take]);
            input = &input[take..];
            let mut pending = std::mem::take(&mut self.partial);
            if pending.len() >= OWNED_FRAME_BYTES && self.phase == Phase::Open {
                if let Some(last_call_id) = self.check_whole_frame(&pending)? {
                    on(RpcEvent::Owned {
                        frame: pending,
                        last_call_id,
                    })?;
                    continue;
                }
            }
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

    /// When `pending` is exactly one complete frame (a large one is, once
    /// reassembled: the reader takes just the bytes it needs), check it as
    /// `process` would and return the peer's last call id; `None` when it
    /// is not (yet) one whole frame. Only called for large frames, so never
    /// for a heartbeat (its body must be empty).
    fn check_whole_frame(&mut self, pending: &[u8]) -> Result<Option<u64>, ProtocolError> {
        match decode(pending, self.limit())? {
            Some((frame, size)) if size == pending.len() => {
                self.check.check(&frame)?;
                Ok(Some(self.check.last_call_id()))
            }
            _ => Ok(None),
        }
    }

    /// How many more bytes the pending data needs before it can be parsed
    /// further (at least 1).
    fn bytes_needed(&self) -> Result<usize, ProtocolError> {
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
            // The client cannot know our maxFrameSize yet: the handshake's
            // own fixed limit applies (docs/protocol.md §2), above or below.
            _ => MAX_HANDSHAKE_SIZE,
        }
    }

    /// Handle every complete unit at the start of `buf`; returns the bytes
    /// used.
    fn process(
        &mut self,
        buf: &[u8],
        on: &mut dyn FnMut(RpcEvent<'_>) -> Result<(), ProtocolError>,
    ) -> Result<usize, ProtocolError> {
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
                        on(RpcEvent::Hello { hello, raw })?;
                    }
                    _ => return Err(ProtocolError::Handshake("the first frame is not HELLO")),
                },
                _ => {
                    self.check.check(&frame)?;
                    match frame {
                        Frame::Heartbeat { pong: false } => on(RpcEvent::Ping)?,
                        // Any frame is a sign of life; the session counted it.
                        Frame::Heartbeat { pong: true } => {}
                        _ => on(RpcEvent::Frame {
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
    use switchboard_proto::rpc::{encode, encode_heartbeat, Settings};

    fn hello_bytes() -> Vec<u8> {
        hello_with_data(b"token")
    }

    fn hello_with_data(data: &[u8]) -> Vec<u8> {
        let mut out = PREFACE.to_vec();
        let hello = Hello {
            settings: Settings {
                seed: switchboard_proto::rpc::uuid::seed_from_random([7; 16]),
                max_frame_size: 4096,
                initial_window: 4096,
                max_concurrent_calls: 8,
                heartbeat_ms: 0,
                features: 7,
            },
            codecs: vec!["raw"],
            data,
        };
        encode(&Frame::Hello(hello), &mut out);
        out
    }

    /// Frames as the reader reports them: "hello", "ping", or the hex of a
    /// delivered frame.
    fn run(
        reader: &mut RpcReader,
        input: &[u8],
        chunk: usize,
    ) -> Result<Vec<String>, ProtocolError> {
        let mut seen = Vec::new();
        for piece in input.chunks(chunk) {
            reader.feed(piece, &mut |event| {
                seen.push(match event {
                    RpcEvent::Hello { hello, raw } => {
                        assert_eq!(hello.data, b"token");
                        assert_eq!(raw[0], 0x01);
                        "hello".to_owned()
                    }
                    RpcEvent::Ping => "ping".to_owned(),
                    RpcEvent::Frame { raw, .. } => raw.iter().map(|b| format!("{b:02x}")).collect(),
                    RpcEvent::Owned { frame, .. } => {
                        let hex: String = frame.iter().map(|b| format!("{b:02x}")).collect();
                        format!("owned {hex}")
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
        let whole = run(&mut RpcReader::new(1 << 20), &input, input.len()).unwrap();
        assert_eq!(whole.len(), 4);
        assert_eq!(whole[0], "hello");
        assert_eq!(whole[1], "03100705036164640102");
        assert_eq!(whole[2], "ping");
        assert_eq!(whole[3].len(), 2 * (0x0104 + 4));
        for chunk in [1, 2, 3, 5, 7, 64] {
            let mut reader = RpcReader::new(1 << 20);
            assert_eq!(
                run(&mut reader, &input, chunk).unwrap(),
                whole,
                "chunk {chunk}"
            );
            assert!(reader.at_boundary());
            assert!(reader.is_open());
        }
    }

    /// A call (id 6) of `body_len` bytes, with a 4-byte length.
    fn large_call(body_len: usize) -> Vec<u8> {
        let mut frame = vec![0x03, 0x12];
        frame.extend_from_slice(&(body_len as u32).to_le_bytes());
        frame.extend_from_slice(&[0x06, 0x01, b'x']);
        frame.extend(std::iter::repeat_n(9u8, body_len - 3));
        frame
    }

    #[test]
    fn a_large_frame_split_across_reads_is_handed_over_in_its_own_buffer() {
        let mut input = hello_bytes();
        let big = large_call(200_000);
        input.extend_from_slice(&big);
        // The next call, id 7, right behind it.
        input.extend_from_slice(&[0x03, 0x10, 0x07, 0x07, 0x03, b'a', b'd', b'd', 1, 2]);
        let hex: String = big.iter().map(|b| format!("{b:02x}")).collect();
        // Whole in one read: handled in place, like any frame.
        let whole = run(&mut RpcReader::new(1 << 20), &input, input.len()).unwrap();
        assert_eq!(
            whole,
            [
                "hello".to_owned(),
                hex.clone(),
                "03100707036164640102".to_owned()
            ]
        );
        // Across reads: reassembled, then handed over; the same bytes.
        for chunk in [1000, 4096, 65_536, 150_000] {
            let mut reader = RpcReader::new(1 << 20);
            let seen = run(&mut reader, &input, chunk).unwrap();
            assert_eq!(seen[1], format!("owned {hex}"), "chunk {chunk}");
            assert_eq!(seen[2], "03100707036164640102", "chunk {chunk}");
            assert!(reader.at_boundary());
        }
    }

    #[test]
    fn an_announced_frame_reserves_at_most_eight_times_what_arrived() {
        let mut reader = RpcReader::new(64 << 20);
        let mut input = hello_bytes();
        input.extend_from_slice(&large_call(32 << 20)[..1000]);
        run(&mut reader, &input, input.len()).unwrap();
        assert!(
            reader.partial.capacity() < 1000 * 8 + 8 * MIN_RESERVE,
            "{}",
            reader.partial.capacity()
        );
        // More arrives: the buffer grows towards the frame, by steps.
        run(&mut reader, &vec![9u8; 600_000], 60_000).unwrap();
        let capacity = reader.partial.capacity();
        assert!(
            capacity >= reader.partial.len() && capacity <= 8 * reader.partial.len(),
            "{capacity}"
        );
    }

    #[test]
    fn a_bad_preface_is_refused_at_its_first_wrong_byte() {
        let error = run(&mut RpcReader::new(1 << 20), b"GET / HTTP/1.1\r\n", 1).unwrap_err();
        assert_eq!(error.code(), "ERR_PROTOCOL_PREFACE");
        let error = run(&mut RpcReader::new(1 << 20), b"SWB\x02", 4).unwrap_err();
        assert_eq!(error.code(), "ERR_PROTOCOL_VERSION");
    }

    #[test]
    fn the_first_frame_must_be_hello() {
        let mut input = PREFACE.to_vec();
        encode_heartbeat(false, &mut input);
        let error = run(&mut RpcReader::new(1 << 20), &input, 3).unwrap_err();
        assert_eq!(error.code(), "ERR_PROTOCOL_HANDSHAKE");
    }

    #[test]
    fn a_hello_is_limited_by_the_handshake_limit_not_by_max_frame_size() {
        let hello = |data_len: usize| hello_with_data(&vec![b't'; data_len]);
        // Body: 36 bytes of settings, the codec list (1 + 1 + 3), the data.
        let fits = hello(MAX_HANDSHAKE_SIZE - 41);
        let mut reader = RpcReader::new(4096);
        let mut opened = false;
        reader
            .feed(&fits, &mut |event| {
                opened |= matches!(event, RpcEvent::Hello { .. });
                Ok(())
            })
            .unwrap();
        assert!(opened, "a 64 KiB HELLO passes a 4 KiB maxFrameSize");
        let error = RpcReader::new(16 << 20)
            .feed(&hello(MAX_HANDSHAKE_SIZE - 40)[..12], &mut |_| Ok(()))
            .unwrap_err();
        assert_eq!(error.code(), "ERR_PROTOCOL_FRAME_TOO_LARGE");
    }

    #[test]
    fn an_oversized_frame_is_refused_from_its_header() {
        let mut input = hello_bytes();
        // Length 0x10000 in 4 bytes, no body sent.
        input.extend_from_slice(&[0x03, 0x12, 0x00, 0x00, 0x01, 0x00]);
        let error = run(&mut RpcReader::new(4096), &input, 1).unwrap_err();
        assert_eq!(error.code(), "ERR_PROTOCOL_FRAME_TOO_LARGE");
    }

    #[test]
    fn call_ids_must_increase() {
        let mut input = hello_bytes();
        let call = [0x03, 0x00, 0x03, 0x05, 0x01, b'a'];
        input.extend_from_slice(&call);
        input.extend_from_slice(&call);
        let error = run(&mut RpcReader::new(4096), &input, 4).unwrap_err();
        assert_eq!(error.code(), "ERR_PROTOCOL_CALL_ID");
    }

    #[test]
    fn an_incomplete_frame_leaves_the_reader_off_a_boundary() {
        let mut input = hello_bytes();
        input.extend_from_slice(&[0x03, 0x10, 0x07, 0x05]);
        let mut reader = RpcReader::new(4096);
        run(&mut reader, &input, input.len()).unwrap();
        assert!(!reader.at_boundary());
    }
}
