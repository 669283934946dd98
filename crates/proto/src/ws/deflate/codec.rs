//! The RFC 7692 §7.2 message transform: raw DEFLATE, each message ended by a
//! sync flush whose trailing `00 00 ff ff` is removed by the sender and
//! appended again by the receiver.

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

use super::{DeflateError, DeflateParams};
use crate::ws::Role;

/// The 4 bytes a sync flush ends with; stripped on the wire (RFC 7692 §7.2.1).
const TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// Smallest step by which an output buffer grows, so tiny messages do not
/// cost a reallocation per few bytes.
const MIN_GROW: usize = 256;

/// Compresses outgoing messages of one connection (or, with no context
/// takeover, of any number of connections sharing the same parameters).
#[derive(Debug)]
pub struct Compressor {
    /// zlib state; `None` between messages when contexts are not kept, so an
    /// idle connection holds none of its ~256 KiB.
    state: Option<Compress>,
    window_bits: u8,
    level: u32,
    no_context_takeover: bool,
    threshold: usize,
}

impl Compressor {
    /// A compressor for messages sent by `role` under `params`.
    pub fn new(params: &DeflateParams, role: Role) -> Self {
        let (bits, no_context_takeover) = match role {
            Role::Server => (
                params.server_max_window_bits,
                params.server_no_context_takeover,
            ),
            Role::Client => (
                params.client_max_window_bits,
                params.client_no_context_takeover,
            ),
        };
        Compressor {
            state: None,
            // zlib cannot emit raw deflate with an 8-bit window; 9 stays
            // within the "8" limit only for a peer that accepts it, which is
            // why negotiation never agrees to 8 for our own side.
            window_bits: bits.clamp(9, 15),
            level: params.level.min(9),
            no_context_takeover,
            threshold: params.threshold,
        }
    }

    /// Whether a message of `len` bytes is worth compressing (at least the
    /// negotiated threshold).
    pub fn should_compress(&self, len: usize) -> bool {
        len >= self.threshold
    }

    /// Appends the compressed form of one whole message to `out`; send it
    /// with RSV1 set on the first frame.
    ///
    /// Errors only if zlib reports an internal failure, which valid use
    /// cannot cause; the caller may then send the message uncompressed. The
    /// state is dropped on error so the next message starts clean.
    pub fn compress(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(), DeflateError> {
        let (bits, level) = (self.window_bits, self.level);
        let state = self.state.get_or_insert_with(|| {
            Compress::new_with_window_bits(Compression::new(level), false, bits)
        });
        let start = out.len();
        // A guess that fits compressible text in one go; incompressible data
        // grows the buffer once or twice more.
        out.reserve(input.len() / 2 + 16);
        let mut rest = input;
        let result = loop {
            if out.len() == out.capacity() {
                out.reserve((out.len() - start).max(MIN_GROW));
            }
            let before = state.total_in();
            if state.compress_vec(rest, out, FlushCompress::Sync).is_err() {
                break Err(DeflateError::Compress);
            }
            rest = &rest[(state.total_in() - before) as usize..];
            // zlib's contract: output space left over means the flush is done.
            if rest.is_empty() && out.len() < out.capacity() {
                break Ok(());
            }
        };
        if result.is_err() {
            out.truncate(start);
            self.state = None;
            return result;
        }
        if out[start..].ends_with(&TAIL) {
            out.truncate(out.len() - TAIL.len());
        }
        if self.no_context_takeover {
            self.state = None;
        }
        Ok(())
    }
}

/// Inflates incoming compressed messages of one connection.
#[derive(Debug)]
pub struct Decompressor {
    /// zlib state; `None` between messages when the peer does not keep its
    /// context, so an idle connection holds none of its ~40 KiB.
    state: Option<Decompress>,
    window_bits: u8,
    no_context_takeover: bool,
    /// The sender ended the DEFLATE stream (BFINAL) inside this message;
    /// the rest of the message is ignored and the state must be reset.
    stream_ended: bool,
}

impl Decompressor {
    /// A decompressor for messages received by `role` under `params`.
    pub fn new(params: &DeflateParams, role: Role) -> Self {
        let (bits, no_context_takeover) = match role {
            Role::Server => (
                params.client_max_window_bits,
                params.client_no_context_takeover,
            ),
            Role::Client => (
                params.server_max_window_bits,
                params.server_no_context_takeover,
            ),
        };
        Decompressor {
            state: None,
            // An inflater window at least as large as the compressor's is
            // always correct; zlib's smallest raw window is 9 (see negotiate).
            window_bits: bits.clamp(9, 15),
            no_context_takeover,
            stream_ended: false,
        }
    }

    /// Inflates the next piece of a compressed message, appending at most
    /// `max_output` bytes to `out`. Pass `fin = true` with the last piece
    /// (possibly empty) to end the message.
    ///
    /// Fails with [`DeflateError::TooBig`] as soon as more than `max_output`
    /// bytes would be produced, having grown `out` by at most one byte past
    /// the limit; with [`DeflateError::Corrupt`] on invalid data. After an
    /// error the connection must be failed; the state is dropped.
    pub fn decompress(
        &mut self,
        input: &[u8],
        fin: bool,
        max_output: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), DeflateError> {
        let limit = out.len().saturating_add(max_output);
        let mut result = self.inflate(input, limit, out);
        if fin && result.is_ok() {
            result = self.inflate(&TAIL, limit, out);
        }
        if result.is_err() || (fin && (self.no_context_takeover || self.stream_ended)) {
            self.state = None;
            self.stream_ended = false;
        }
        result
    }

    /// Convenience for a whole message payload: `decompress(payload, true, ..)`.
    pub fn decompress_message(
        &mut self,
        payload: &[u8],
        max_output: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), DeflateError> {
        self.decompress(payload, true, max_output, out)
    }

    /// Inflates `input` into `out` without letting `out` exceed `limit`
    /// bytes by more than one (the byte that proves the limit was passed).
    fn inflate(
        &mut self,
        mut input: &[u8],
        limit: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), DeflateError> {
        if self.stream_ended {
            return Ok(());
        }
        let bits = self.window_bits;
        let state = self
            .state
            .get_or_insert_with(|| Decompress::new_with_window_bits(false, bits));
        loop {
            if out.len() == out.capacity() {
                // Grow geometrically but never past limit + 1, so a
                // decompression bomb cannot make us allocate beyond the limit.
                let room = limit.saturating_add(1) - out.len();
                let want = out
                    .capacity()
                    .max(input.len().saturating_mul(2))
                    .max(MIN_GROW);
                out.reserve_exact(want.min(room));
            }
            let (before_in, before_out) = (state.total_in(), state.total_out());
            let status = state
                .decompress_vec(input, out, FlushDecompress::Sync)
                .map_err(|_| DeflateError::Corrupt)?;
            input = &input[(state.total_in() - before_in) as usize..];
            if out.len() > limit {
                return Err(DeflateError::TooBig);
            }
            if status == Status::StreamEnd {
                self.stream_ended = true;
                return Ok(());
            }
            let has_room = out.len() < out.capacity();
            if input.is_empty() && has_room {
                return Ok(());
            }
            let progressed = state.total_in() != before_in || state.total_out() != before_out;
            if !progressed && has_room {
                // zlib neither consumed input nor produced output despite
                // room for both: the data cannot be a valid stream.
                return Err(DeflateError::Corrupt);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(no_ctx: bool, server_bits: u8, client_bits: u8) -> DeflateParams {
        DeflateParams {
            server_no_context_takeover: no_ctx,
            client_no_context_takeover: no_ctx,
            server_max_window_bits: server_bits,
            client_max_window_bits: client_bits,
            ..DeflateParams::default()
        }
    }

    fn round_trip(p: &DeflateParams, messages: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut c = Compressor::new(p, Role::Server);
        let mut d = Decompressor::new(p, Role::Client);
        let mut wire = Vec::new();
        for m in messages {
            let mut compressed = Vec::new();
            c.compress(m, &mut compressed).unwrap();
            let mut inflated = Vec::new();
            d.decompress_message(&compressed, usize::MAX, &mut inflated)
                .unwrap();
            assert_eq!(&inflated, m);
            wire.push(compressed);
        }
        wire
    }

    #[test]
    fn rfc7692_hello_example() {
        let p = DeflateParams::default();
        let mut c = Compressor::new(&p, Role::Server);
        let mut out = Vec::new();
        c.compress(b"Hello", &mut out).unwrap();
        assert_eq!(out, [0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00]);
        let mut d = Decompressor::new(&p, Role::Client);
        let mut text = Vec::new();
        d.decompress_message(&out, 100, &mut text).unwrap();
        assert_eq!(text, b"Hello");
        // §7.2.3.2: with context takeover the second "Hello" is a back-reference.
        out.clear();
        c.compress(b"Hello", &mut out).unwrap();
        assert_eq!(out, [0xf2, 0x00, 0x11, 0x00, 0x00]);
        text.clear();
        d.decompress_message(&out, 100, &mut text).unwrap();
        assert_eq!(text, b"Hello");
    }

    #[test]
    fn rfc7692_stored_block_and_bfinal_examples() {
        let mut d = Decompressor::new(&DeflateParams::default(), Role::Client);
        let mut out = Vec::new();
        // §7.2.3.3: "Hello" in a stored (uncompressed) block.
        d.decompress_message(
            &[
                0x00, 0x05, 0x00, 0xfa, 0xff, 0x48, 0x65, 0x6c, 0x6c, 0x6f, 0x00,
            ],
            100,
            &mut out,
        )
        .unwrap();
        assert_eq!(out, b"Hello");
        // §7.2.3.4: a final block (BFINAL = 1); the appended tail is ignored.
        out.clear();
        d.decompress_message(
            &[0xf3, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0x00],
            100,
            &mut out,
        )
        .unwrap();
        assert_eq!(out, b"Hello");
        // The stream ended, so the next message starts a fresh one.
        out.clear();
        d.decompress_message(&[0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00], 100, &mut out)
            .unwrap();
        assert_eq!(out, b"Hello");
    }

    #[test]
    fn empty_message_compresses_to_one_byte() {
        let wire = round_trip(&DeflateParams::default(), &[b""]);
        assert_eq!(wire[0], [0x00]);
    }

    #[test]
    fn no_context_takeover_makes_messages_independent() {
        let msg: &[u8] = b"{\"channel\":\"prices\",\"data\":{\"bid\":1.2345,\"ask\":1.2347}}";
        let wire = round_trip(&params(true, 15, 15), &[msg, msg, msg]);
        assert_eq!(
            wire[0], wire[1],
            "same input, same bytes: compress once, send to many"
        );
        assert_eq!(wire[1], wire[2]);
        // And each message inflates on its own, with a fresh decompressor.
        let mut d = Decompressor::new(&params(true, 15, 15), Role::Client);
        let mut out = Vec::new();
        d.decompress_message(&wire[2], usize::MAX, &mut out)
            .unwrap();
        assert_eq!(out, msg);
    }

    #[test]
    fn context_takeover_shrinks_repeats() {
        let msg: &[u8] = b"{\"channel\":\"prices\",\"data\":{\"bid\":1.2345,\"ask\":1.2347}}";
        let wire = round_trip(&params(false, 15, 15), &[msg, msg]);
        assert!(
            wire[1].len() < wire[0].len() / 2,
            "{} vs {}",
            wire[1].len(),
            wire[0].len()
        );
    }

    #[test]
    fn every_window_size_round_trips() {
        let data: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for bits in 8..=15 {
            for no_ctx in [false, true] {
                let p = params(no_ctx, bits.max(9), bits);
                round_trip(&p, &[&data, &data[..5000], b"tail"]);
                // Client direction too (client_max_window_bits=8 inflates with 9).
                let mut c = Compressor::new(&p, Role::Client);
                let mut d = Decompressor::new(&p, Role::Server);
                for m in [&data[..], &data[100..900]] {
                    let mut z = Vec::new();
                    c.compress(m, &mut z).unwrap();
                    let mut out = Vec::new();
                    d.decompress_message(&z, usize::MAX, &mut out).unwrap();
                    assert_eq!(out, m, "bits {bits} no_ctx {no_ctx}");
                }
            }
        }
    }

    #[test]
    fn chunked_input_inflates_the_same() {
        let data: Vec<u8> = b"abcabcabd".repeat(500);
        let mut z = Vec::new();
        Compressor::new(&DeflateParams::default(), Role::Server)
            .compress(&data, &mut z)
            .unwrap();
        for chunk in [1, 3, 64] {
            let mut d = Decompressor::new(&DeflateParams::default(), Role::Client);
            let mut out = Vec::new();
            let pieces: Vec<&[u8]> = z.chunks(chunk).collect();
            for (i, piece) in pieces.iter().enumerate() {
                d.decompress(piece, i + 1 == pieces.len(), usize::MAX, &mut out)
                    .unwrap();
            }
            assert_eq!(out, data, "chunk {chunk}");
        }
    }

    #[test]
    fn inflate_limit_stops_a_bomb_early() {
        let zeros = vec![0u8; 10 << 20];
        let mut z = Vec::new();
        Compressor::new(&DeflateParams::default(), Role::Server)
            .compress(&zeros, &mut z)
            .unwrap();
        assert!(z.len() < 20_000, "{}", z.len());
        let mut d = Decompressor::new(&DeflateParams::default(), Role::Client);
        let mut out = Vec::new();
        assert_eq!(
            d.decompress_message(&z, 64 * 1024, &mut out),
            Err(DeflateError::TooBig)
        );
        assert!(out.capacity() <= 64 * 1024 + 1, "{}", out.capacity());
        // Exactly at the limit is fine.
        let mut out = Vec::new();
        let mut d = Decompressor::new(&DeflateParams::default(), Role::Client);
        d.decompress_message(&z, zeros.len(), &mut out).unwrap();
        assert_eq!(out.len(), zeros.len());
    }

    #[test]
    fn corrupt_stream_is_an_error() {
        let mut d = Decompressor::new(&DeflateParams::default(), Role::Client);
        let mut out = Vec::new();
        // BTYPE = 11 is reserved.
        assert_eq!(
            d.decompress_message(&[0xff, 0xff, 0xff], 100, &mut out),
            Err(DeflateError::Corrupt)
        );
        // Stored block whose NLEN is not the complement of LEN.
        let mut d = Decompressor::new(&DeflateParams::default(), Role::Client);
        assert_eq!(
            d.decompress_message(&[0x00, 0x05, 0x00, 0x00, 0x00], 100, &mut out),
            Err(DeflateError::Corrupt)
        );
    }

    #[test]
    fn threshold() {
        let c = Compressor::new(
            &DeflateParams {
                threshold: 10,
                ..DeflateParams::default()
            },
            Role::Server,
        );
        assert!(!c.should_compress(9));
        assert!(c.should_compress(10));
    }
}
