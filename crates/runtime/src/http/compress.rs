//! Compressing a whole response body, on the worker thread that responds
//! (it holds the bytes; the I/O thread stays free for reading and
//! writing). JavaScript decides whether a response is worth it (its type,
//! its size: `packages/server/src/http/response.ts`) and which coding the
//! request accepted (negotiated by the I/O thread from `Accept-Encoding`,
//! `switchboard_proto::http1::AcceptEncoding`); here the body is encoded
//! and its `Content-Encoding` line added to the handler's headers.
//!
//! Memory: one gzip encoder per thread and level, reset between responses
//! (zlib's `deflateReset` keeps its ~256 KiB of window and hash tables), and
//! one output buffer per thread. Brotli's encoder has no reset: it is made
//! per response, its window and tables sized for the body (`lgwin` from the
//! body's length), and dropped after it.

use std::cell::RefCell;

use brotli::enc::backward_references::BrotliEncoderMode;
use brotli::enc::encode::{
    BrotliEncoderOperation, BrotliEncoderParameter, BrotliEncoderStateStruct,
};
use brotli::enc::StandardAlloc;
use flate2::{Compress, Compression, FlushCompress, Status};
use switchboard_proto::http1::ContentCoding;

use crate::config::CompressionConfig;

/// An output buffer that grew past this is dropped after its response, so
/// one large body does not stay allocated on the thread.
const KEEP_OUTPUT_UP_TO: usize = 1024 * 1024;

/// The smallest and largest brotli windows (RFC 7932 §9.1: 10..=24 bits).
/// 22 is the reference encoder's default; a body is never larger than the
/// window needs to be for it.
const BROTLI_MIN_LGWIN: u32 = 10;
const BROTLI_MAX_LGWIN: u32 = 22;

thread_local! {
    /// The thread's gzip encoder and the level it was made for.
    static GZIP: RefCell<Option<(u32, Compress)>> = const { RefCell::new(None) };
    /// The encoded body, then the headers with `Content-Encoding` added.
    static OUTPUT: RefCell<(Vec<u8>, Vec<u8>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// A body encoded, with the header lines to send it under.
pub(crate) struct Encoded<'a> {
    pub headers: &'a [u8],
    pub body: &'a [u8],
}

/// Encode `body` with `coding` and call `f` with it and `headers` plus
/// `Content-Encoding`; `f` gets `None` when the encoded body would not be
/// smaller (already compressed data under a text type) or the encoder
/// failed: send the body as it is then.
pub(crate) fn encode<R>(
    coding: ContentCoding,
    body: &[u8],
    headers: &[u8],
    config: &CompressionConfig,
    f: impl FnOnce(Option<Encoded<'_>>) -> R,
) -> R {
    OUTPUT.with(|output| {
        let mut output = output.borrow_mut();
        let (out, lines) = &mut *output;
        out.clear();
        let encoded = match coding {
            ContentCoding::Gzip => gzip(body, config.gzip_level, out),
            ContentCoding::Br => brotli(body, config.brotli_quality, out),
        };
        let result = if encoded && out.len() < body.len() {
            lines.clear();
            lines.extend_from_slice(headers);
            lines.extend_from_slice(b"Content-Encoding: ");
            lines.extend_from_slice(coding.as_str().as_bytes());
            lines.extend_from_slice(b"\r\n");
            f(Some(Encoded {
                headers: lines,
                body: out,
            }))
        } else {
            f(None)
        };
        if out.capacity() > KEEP_OUTPUT_UP_TO {
            *out = Vec::new();
        }
        result
    })
}

/// gzip (RFC 1952) of `input` appended to `out`, with the thread's encoder
/// for `level`; false if zlib failed (the encoder is dropped then).
fn gzip(input: &[u8], level: u32, out: &mut Vec<u8>) -> bool {
    GZIP.with(|slot| {
        let mut slot = slot.borrow_mut();
        let encoder = match &mut *slot {
            Some((made_for, encoder)) if *made_for == level => {
                encoder.reset();
                encoder
            }
            _ => {
                // zlib writes the gzip header and trailer itself (window
                // bits + 16); 15 bits, its default and the largest.
                let encoder = Compress::new_gzip(Compression::new(level), 15);
                &mut slot.insert((level, encoder)).1
            }
        };
        // Text shrinks by half at least; incompressible data grows the
        // buffer once or twice more.
        out.reserve(input.len() / 2 + 64);
        let mut rest = input;
        loop {
            if out.len() == out.capacity() {
                out.reserve(out.len().max(256));
            }
            let before = encoder.total_in();
            match encoder.compress_vec(rest, out, FlushCompress::Finish) {
                Ok(Status::StreamEnd) => return true,
                Ok(_) => rest = &rest[(encoder.total_in() - before) as usize..],
                Err(_) => {
                    *slot = None;
                    return false;
                }
            }
        }
    })
}

/// Brotli (RFC 7932) of `input` appended to `out`; false if the encoder
/// failed.
fn brotli(input: &[u8], quality: u32, out: &mut Vec<u8>) -> bool {
    let mut encoder = BrotliEncoderStateStruct::new(StandardAlloc::default());
    // The window: the smallest that holds the whole body, so a small body
    // gets a small ring buffer and hash table.
    let needed = usize::BITS - input.len().saturating_sub(1).leading_zeros();
    let lgwin = needed.clamp(BROTLI_MIN_LGWIN, BROTLI_MAX_LGWIN);
    for (parameter, value) in [
        (BrotliEncoderParameter::BROTLI_PARAM_QUALITY, quality),
        (BrotliEncoderParameter::BROTLI_PARAM_LGWIN, lgwin),
        (
            BrotliEncoderParameter::BROTLI_PARAM_MODE,
            // Every compressible type is text (JSON, HTML, SVG...).
            BrotliEncoderMode::BROTLI_MODE_TEXT as u32,
        ),
        (
            BrotliEncoderParameter::BROTLI_PARAM_SIZE_HINT,
            u32::try_from(input.len()).unwrap_or(u32::MAX),
        ),
    ] {
        encoder.set_parameter(parameter, value);
    }
    let start = out.len();
    // The encoder's own bound for the whole input in one go.
    out.resize(
        start + brotli::enc::BrotliEncoderMaxCompressedSize(input.len()).max(64),
        0,
    );
    let (mut available_in, mut in_offset) = (input.len(), 0);
    let mut out_offset = start;
    let mut total = None;
    loop {
        let mut available_out = out.len() - out_offset;
        let ok = encoder.compress_stream(
            BrotliEncoderOperation::BROTLI_OPERATION_FINISH,
            &mut available_in,
            input,
            &mut in_offset,
            &mut available_out,
            out,
            &mut out_offset,
            &mut total,
            &mut |_, _, _, _| (),
        );
        if !ok {
            out.truncate(start);
            return false;
        }
        if encoder.is_finished() {
            out.truncate(out_offset);
            return true;
        }
        if available_out == 0 {
            // Past the bound: cannot happen; grow rather than fail.
            let len = out.len();
            out.resize(len + len / 2 + 64, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    fn config() -> CompressionConfig {
        CompressionConfig::default()
    }

    fn gunzip(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(data)
            .read_to_end(&mut out)
            .expect("valid gzip");
        out
    }

    fn unbrotli(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        brotli::Decompressor::new(data, 4096)
            .read_to_end(&mut out)
            .expect("valid brotli");
        out
    }

    /// JSON-like text that compresses as an API response does.
    fn json(len: usize) -> Vec<u8> {
        let mut text = String::from("[");
        let mut i = 0;
        while text.len() < len {
            text.push_str(&format!(
                r#"{{"id":{i},"name":"user {i}","email":"user{i}@example.com","active":{}}},"#,
                i % 3 == 0
            ));
            i += 1;
        }
        text.truncate(len);
        text.into_bytes()
    }

    fn encoded(coding: ContentCoding, body: &[u8], headers: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
        encode(coding, body, headers, &config(), |encoded| {
            encoded.map(|e| (e.headers.to_vec(), e.body.to_vec()))
        })
    }

    #[test]
    fn gzip_round_trips_and_reuses_the_encoder() {
        for len in [1024, 1500, 16 * 1024, 100_000, 2 * 1024 * 1024] {
            let body = json(len);
            // Twice: the second response runs on the reset encoder.
            for _ in 0..2 {
                let (headers, data) = encoded(ContentCoding::Gzip, &body, b"A: b\r\n").unwrap();
                assert_eq!(headers, b"A: b\r\nContent-Encoding: gzip\r\n");
                assert!(data.len() < body.len() / 3, "{len}: {}", data.len());
                assert_eq!(gunzip(&data), body, "{len}");
            }
        }
    }

    #[test]
    fn brotli_round_trips() {
        for len in [1024, 1025, 4096, 70_000, 1024 * 1024] {
            let body = json(len);
            let (headers, data) = encoded(ContentCoding::Br, &body, b"").unwrap();
            assert_eq!(headers, b"Content-Encoding: br\r\n");
            assert!(data.len() < body.len() / 3, "{len}: {}", data.len());
            assert_eq!(unbrotli(&data), body, "{len}");
        }
    }

    #[test]
    fn levels_and_qualities() {
        let body = json(50_000);
        for level in [0, 1, 6, 9] {
            let config = CompressionConfig {
                gzip_level: level,
                ..config()
            };
            let mut out = Vec::new();
            assert!(gzip(&body, config.gzip_level, &mut out));
            assert_eq!(gunzip(&out), body, "level {level}");
        }
        for quality in [0, 1, 4, 5, 9, 11] {
            let mut out = Vec::new();
            assert!(brotli(&body, quality, &mut out));
            assert_eq!(unbrotli(&out), body, "quality {quality}");
        }
    }

    #[test]
    fn incompressible_bodies_go_as_they_are() {
        // A xorshift stream: no redundancy for either coding to find.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let noise: Vec<u8> = (0..20_000)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect();
        assert!(encoded(ContentCoding::Gzip, &noise, b"").is_none());
        assert!(encoded(ContentCoding::Br, &noise, b"").is_none());
        // Nor does an empty body shrink.
        assert!(encoded(ContentCoding::Gzip, b"", b"").is_none());
        assert!(encoded(ContentCoding::Br, b"", b"").is_none());
    }

    /// Time per response and size for each coding and setting, on JSON
    /// of typical API sizes:
    /// `cargo test --release -p switchboard-runtime -- --ignored --nocapture bench_compress`
    #[test]
    #[ignore = "benchmark"]
    fn bench_compress() {
        use std::hint::black_box;
        use std::time::Instant;
        for len in [1024, 2 * 1024, 16 * 1024, 128 * 1024] {
            let body = json(len);
            let runs = (4 * 1024 * 1024 / len).max(20) as u32;
            for (name, coding, level) in [
                ("gzip 1", ContentCoding::Gzip, 1),
                ("gzip 6", ContentCoding::Gzip, 6),
                ("br 1", ContentCoding::Br, 1),
                ("br 4", ContentCoding::Br, 4),
                ("br 5", ContentCoding::Br, 5),
                ("br 6", ContentCoding::Br, 6),
            ] {
                let config = CompressionConfig {
                    gzip_level: level,
                    brotli_quality: level,
                    ..config()
                };
                let mut size = 0;
                let start = Instant::now();
                for _ in 0..runs {
                    size = encode(coding, black_box(&body), b"", &config, |e| {
                        e.map_or(body.len(), |e| e.body.len())
                    });
                }
                let us = start.elapsed().as_secs_f64() * 1e6 / f64::from(runs);
                let mbs = len as f64 / us;
                println!(
                    "{len:>7} B  {name:<6} {us:8.1} us  {mbs:6.1} MB/s  {size:>6} B ({:4.1}%)",
                    size as f64 * 100.0 / len as f64
                );
            }
        }
    }

    #[test]
    fn a_large_output_buffer_is_not_kept() {
        let body = json(4 * 1024 * 1024);
        assert!(encoded(ContentCoding::Gzip, &body, b"").is_some());
        OUTPUT.with(|output| assert!(output.borrow().0.capacity() <= KEEP_OUTPUT_UP_TO));
    }
}
