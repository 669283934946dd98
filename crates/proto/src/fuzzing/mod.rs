//! The logic of the `cargo fuzz` targets in `crates/proto/fuzz`, as plain
//! functions so unit tests run them on stable without libFuzzer. Each one
//! panics when an invariant breaks; any input must be handled without a
//! panic otherwise.
//!
//! Compiled for tests and with the `fuzzing` feature only; not part of the
//! supported API.

use crate::http::{
    accept_key, parse_request_head, switching_protocols_response, validate_upgrade, HeadLimits,
};
use crate::rpc::{decode, decode_preface, encode, encoded_len, peek_header, SequenceCheck};
use crate::ws::deflate::{negotiate, Compressor, Decompressor, DeflateConfig, DeflateParams};
use crate::ws::extensions::parse_extensions;
use crate::ws::{Decoder, DecoderConfig, Event, Flow, ProtocolError, Role};

/// An [`Event`] that owns its data, for comparing decoder runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnedEvent {
    /// [`Event::Text`]
    Text(Vec<u8>),
    /// [`Event::Binary`]
    Binary(Vec<u8>),
    /// [`Event::Ping`]
    Ping(Vec<u8>),
    /// [`Event::Pong`]
    Pong(Vec<u8>),
    /// [`Event::Close`]: code and reason.
    Close(Option<u16>, String),
}

impl From<Event<'_>> for OwnedEvent {
    fn from(event: Event<'_>) -> Self {
        match event {
            Event::Text(b) => OwnedEvent::Text(b.to_vec()),
            Event::Binary(b) => OwnedEvent::Binary(b.to_vec()),
            Event::Ping(b) => OwnedEvent::Ping(b.to_vec()),
            Event::Pong(b) => OwnedEvent::Pong(b.to_vec()),
            Event::Close(c) => OwnedEvent::Close(c.code, c.reason.to_owned()),
        }
    }
}

/// The outcome of decoding a byte stream: events until the first error.
pub type Outcome = (Vec<OwnedEvent>, Option<ProtocolError>);

/// Feeds `input` to `decoder` cut at the given ascending offsets (each piece
/// copied into a fresh buffer, as the runtime's shared read buffer would
/// be), collecting events until the first error.
pub fn decode_split(mut decoder: Decoder, input: &[u8], cuts: &[usize]) -> Outcome {
    let mut events = Vec::new();
    let mut start = 0;
    for &end in cuts.iter().chain(std::iter::once(&input.len())) {
        let end = end.clamp(start, input.len());
        let mut piece = input[start..end].to_vec();
        start = end;
        let result = decoder.feed(&mut piece, |e| {
            events.push(OwnedEvent::from(e));
            Flow::Continue
        });
        if let Err(e) = result {
            return (events, Some(e));
        }
        if decoder.is_finished() {
            break;
        }
    }
    // An idle decoder holds no reassembly buffer.
    if decoder.is_finished() {
        assert_eq!(
            decoder.buffer_capacity(),
            0,
            "finished decoder must free its buffer"
        );
    }
    (events, None)
}

/// Errors found inside one compressed message's payload may be found in a
/// different order depending on how the payload was split (inflate first,
/// or validate UTF-8 first), so they are equivalent for comparison.
fn same_error(a: Option<ProtocolError>, b: Option<ProtocolError>, compressed: bool) -> bool {
    let payload = |e: Option<ProtocolError>| {
        matches!(
            e,
            Some(
                ProtocolError::InvalidUtf8 | ProtocolError::MessageTooBig | ProtocolError::Inflate
            )
        )
    };
    a == b || (compressed && payload(a) && payload(b))
}

/// Builds a decoder as the fuzz input's first byte describes.
fn fuzz_decoder(selector: u8) -> (Decoder, bool) {
    let role = if selector & 1 == 0 {
        Role::Server
    } else {
        Role::Client
    };
    let max_payload_length = match (selector >> 2) & 3 {
        0 => 0,
        1 => 125,
        2 => 4096,
        _ => crate::ws::DEFAULT_MAX_PAYLOAD_LENGTH,
    };
    let max_fragments = usize::from((selector >> 4) & 3);
    let mut decoder = Decoder::new(DecoderConfig {
        max_payload_length,
        max_fragments,
        role,
    });
    let compressed = selector & 2 != 0;
    if compressed {
        let params = DeflateParams {
            client_no_context_takeover: selector & 0x40 != 0,
            server_no_context_takeover: selector & 0x40 != 0,
            client_max_window_bits: if selector & 0x80 != 0 { 9 } else { 15 },
            server_max_window_bits: if selector & 0x80 != 0 { 9 } else { 15 },
            ..DeflateParams::default()
        };
        decoder.set_decompressor(Decompressor::new(&params, role));
    }
    (decoder, compressed)
}

/// `ws_decoder` target: decoding whole and in seeded random pieces must give
/// the same events and the same error, and never panic.
///
/// Input layout: `[selector, seed, stream...]`; see `fuzz_decoder` for the
/// selector bits.
pub fn ws_decoder(data: &[u8]) {
    let [selector, seed, stream @ ..] = data else {
        return;
    };
    let whole = decode_split(fuzz_decoder(*selector).0, stream, &[]);
    let (decoder, compressed) = fuzz_decoder(*selector);
    // Cut points from the seed: a simple LCG walk, gaps of 1..=16 bytes, so
    // headers and payloads are cut everywhere.
    let mut cuts = Vec::new();
    let mut state = u32::from(*seed) | 1;
    let mut at = 0;
    while at < stream.len() {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        at += 1 + (state >> 16) as usize % 16;
        cuts.push(at);
    }
    let split = decode_split(decoder, stream, &cuts);
    assert_eq!(
        whole.0, split.0,
        "events differ between whole and split input"
    );
    assert!(
        same_error(whole.1, split.1, compressed),
        "errors differ: whole {:?}, split {:?}",
        whole.1,
        split.1
    );
    for event in &whole.0 {
        if let OwnedEvent::Text(bytes) = event {
            assert!(
                std::str::from_utf8(bytes).is_ok(),
                "text event with invalid UTF-8"
            );
        }
    }
    if let Some(e) = whole.1 {
        assert!(matches!(e.close_code(), 1002 | 1007 | 1009));
    }
}

/// `handshake` target: parse and validate arbitrary bytes; every outcome
/// must be consistent and every response buildable.
pub fn handshake(data: &[u8]) {
    let limits = HeadLimits {
        max_head_bytes: 4096,
        max_headers: 16,
    };
    match parse_request_head(data, &limits) {
        Ok(None) => assert!(data.len() < limits.max_head_bytes),
        Ok(Some((head, consumed))) => {
            assert!(consumed <= data.len() && consumed <= limits.max_head_bytes);
            // The head alone parses to the same result.
            let again = parse_request_head(&data[..consumed], &limits).expect("head re-parses");
            assert_eq!(again, Some((head.clone(), consumed)));
            match validate_upgrade(&head) {
                Ok(upgrade) => {
                    let accept = accept_key(&upgrade.key);
                    assert_eq!(accept.len(), 28);
                    let negotiated = negotiate(&upgrade.extensions, &DeflateConfig::default());
                    let extensions = negotiated.ok().flatten().map(|(_, value)| value);
                    let protocol = upgrade.protocols.first().map(String::as_str);
                    let response =
                        switching_protocols_response(&accept, protocol, extensions.as_deref());
                    assert!(response.ends_with(b"\r\n\r\n"));
                }
                Err(e) => check_error_response(e.status(), &e.response()),
            }
        }
        Err(e) => check_error_response(e.status(), &e.response()),
    }
}

pub(super) fn check_error_response(status: u16, response: &[u8]) {
    let mut headers = [httparse::EMPTY_HEADER; 16];
    let mut parsed = httparse::Response::new(&mut headers);
    let status_line = parsed
        .parse(response)
        .expect("our responses are valid HTTP");
    assert!(status_line.is_complete());
    assert_eq!(parsed.code, Some(status));
}

/// `deflate_negotiate` target: arbitrary header values (split at `\n`) with a
/// config chosen by the first byte. An accepted offer must produce a
/// well-formed response whose parameters round-trip a message.
pub fn deflate_negotiate(data: &[u8]) {
    let [selector, rest @ ..] = data else {
        return;
    };
    let cfg = DeflateConfig {
        server_no_context_takeover: selector & 1 != 0,
        client_no_context_takeover: selector & 2 != 0,
        server_max_window_bits: 8 + (selector >> 2) % 9,
        client_max_window_bits: 8 + (selector >> 5) % 9,
        ..DeflateConfig::default()
    };
    let text = String::from_utf8_lossy(rest);
    let values: Vec<&str> = text.split('\n').collect();
    let Ok(Some((params, response))) = negotiate(&values, &cfg) else {
        return;
    };
    assert!((9..=15).contains(&params.server_max_window_bits));
    assert!((8..=15).contains(&params.client_max_window_bits));
    let offers = parse_extensions(&response).expect("our response is well-formed");
    assert_eq!(offers.len(), 1);
    assert_eq!(offers[0].name, "permessage-deflate");
    let message = b"fuzz fuzz fuzz fuzz fuzz fuzz";
    for (sender, receiver) in [(Role::Server, Role::Client), (Role::Client, Role::Server)] {
        let mut compressed = Vec::new();
        Compressor::new(&params, sender)
            .compress(message, &mut compressed)
            .expect("compress");
        let mut out = Vec::new();
        Decompressor::new(&params, receiver)
            .decompress_message(&compressed, message.len(), &mut out)
            .expect("inflate");
        assert_eq!(out, message);
    }
}

/// `rpc_decoder` target: decodes a stream of RPC frames until it needs
/// more bytes or fails. Every decoded frame must pass `validate`, re-encode
/// (in its smallest widths, so never longer) to bytes that decode to an equal
/// frame and re-encode identically; every shorter prefix must need more
/// bytes (or fail the same way); errors must carry a protocol code. Never
/// panics otherwise.
///
/// Input layout: `[selector, stream...]`; the selector's low two bits pick
/// `maxFrameSize` (1024, 4096, 65536 or the 16 MiB default), the next three
/// the features in effect for the sequence check.
pub fn rpc_decoder(data: &[u8]) {
    // The preface check runs on the raw input too: any verdict, no panic.
    if let Ok(Some(used)) = decode_preface(data) {
        assert_eq!(used, 4);
    }
    let [selector, stream @ ..] = data else {
        return;
    };
    let max = match selector & 3 {
        0 => 1024,
        1 => 4096,
        2 => 65536,
        _ => crate::rpc::DEFAULT_MAX_FRAME_SIZE as usize,
    };
    let features = u32::from(selector >> 2) & crate::rpc::ALL_FEATURES;
    let mut sequence = SequenceCheck::with_features(features);
    let mut rest = stream;
    loop {
        match decode(rest, max) {
            Ok(None) => break,
            Ok(Some((frame, used))) => {
                assert!(used >= 3 && used <= rest.len());
                let header = peek_header(rest, max).expect("header").expect("complete");
                assert_eq!(header.frame_len(), used);
                for n in 0..used.min(64) {
                    assert_eq!(decode(&rest[..n], max), Ok(None), "prefix of {n} bytes");
                }
                frame.validate().expect("a decoded frame is valid");
                let mut canonical = Vec::new();
                encode(&frame, &mut canonical);
                assert_eq!(canonical.len(), encoded_len(&frame));
                assert!(canonical.len() <= used, "smallest widths are never longer");
                let again = decode(&canonical, max).expect("re-decodes");
                assert_eq!(again, Some((frame.clone(), canonical.len())));
                let mut twice = Vec::new();
                encode(&again.expect("frame").0, &mut twice);
                assert_eq!(twice, canonical, "the canonical form is a fixed point");
                let last_call_id = sequence.last_call_id();
                match sequence.check(&frame) {
                    // A GO_AWAY's last call id only grows.
                    Ok(()) => assert!(sequence.last_call_id() >= last_call_id),
                    // The connection would end here; keep fuzzing the codec.
                    Err(_) => sequence = SequenceCheck::with_features(features),
                }
                rest = &rest[used..];
            }
            Err(e) => {
                check_wire_error(e);
                for n in 0..rest.len().min(64) {
                    match decode(&rest[..n], max) {
                        Ok(None) => {}
                        Err(early) => assert_eq!(early, e, "prefix of {n} bytes"),
                        Ok(Some(_)) => panic!("a prefix of a bad frame decoded"),
                    }
                }
                break;
            }
        }
    }
}

fn check_wire_error(e: crate::rpc::ProtocolError) {
    assert!(e.code().starts_with("ERR_PROTOCOL_"), "{e:?}");
    assert!(matches!(e.ws_close_code(), 1002 | 1009), "{e:?}");
    assert!(!e.to_string().is_empty());
}

mod http1;
pub use http1::{http1_pipeline, http1_request, OwnedRequest, PipelineEnd};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{hex, Rng};

    fn arbitrary_inputs() -> Vec<Vec<u8>> {
        let mut inputs = vec![
            vec![],
            vec![0],
            hex("00 07 81 85 37 fa 21 3d 7f 9f 4d 51 58"),
            hex("01 00 81 05 48 65 6c 6c 6f 89 00 88 02 03 e8"),
            hex("03 2a c1 07 f2 48 cd c9 c9 07 00 41 03 f2 48 cd 80 04 c9 c9 07 00"),
            hex("02 05 c1 03 ff ff ff"),
            b"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n".to_vec(),
            b"\x03permessage-deflate; server_max_window_bits=10\nfoo, permessage-deflate".to_vec(),
            b"\xffpermessage-deflate; client_max_window_bits=8; server_no_context_takeover".to_vec(),
        ];
        let mut rng = Rng::new(7);
        for len in [3, 10, 40, 200, 1000] {
            for _ in 0..20 {
                inputs.push((0..len).map(|_| rng.below(256) as u8).collect());
            }
        }
        inputs
    }

    #[test]
    fn targets_survive_arbitrary_inputs() {
        for input in arbitrary_inputs() {
            ws_decoder(&input);
            rpc_decoder(&input);
            handshake(&input);
            deflate_negotiate(&input);
            http1_request(&input);
        }
    }

    #[test]
    fn ws_decoder_target_sees_valid_streams() {
        // A valid masked stream for every selector with role Server.
        let stream = hex("01 83 00 00 00 00 48 65 6c 89 80 00 00 00 00 80 82 00 00 00 00 6c 6f 88 82 00 00 00 00 03 e8");
        for selector in (0..=255u8).filter(|s| s & 1 == 0) {
            for seed in [0, 1, 77] {
                let mut data = vec![selector, seed];
                data.extend_from_slice(&stream);
                ws_decoder(&data);
            }
        }
    }

    #[test]
    fn rpc_decoder_target_sees_valid_streams() {
        // The worked examples of docs/protocol.md §9, a HELLO, a MESSAGE
        // with an attachment and its STREAM_OPEN, a non-minimal END, a
        // GO_AWAY, then a frame cut short.
        let stream = hex(concat!(
            "03 10 07 05 03 61 64 64 01 02  04 10 02 05 03  06 10 03 05 2c 01  0e 00 00  0e 10 00",
            "01 00 2e 00 00 00 00 00 00 40 00 80 00 00 00 00 00 00 00 00 04 00 00 00 04 00 00",
            "00 00 00 00 00 00 00 00 07 00 00 00 02 04 6a 73 6f 6e 03 72 61 77",
            "03 50 05 06 01 01 61 07  08 00 01 01  05 0d 06 00 09 00 00 00 00 00",
            "0f 00 13 06 0e 45 52 52 5f 47 4f 49 4e 47 5f 41 57 41 59 62 79 65  03 10 07 05"
        ));
        let mut frames = 0;
        let mut rest = &stream[..];
        while let Some((_, used)) = decode(rest, 1024).expect("valid stream") {
            frames += 1;
            rest = &rest[used..];
        }
        assert_eq!((frames, rest.len()), (10, 4), "10 frames, then a cut one");
        for selector in 0..4u8 {
            let mut data = vec![selector];
            data.extend_from_slice(&stream);
            rpc_decoder(&data);
            // Every cut of the stream, too.
            for cut in 0..data.len() {
                rpc_decoder(&data[..cut]);
            }
        }
        // Invalid frames: unknown type, reserved bit, too large, malformed.
        for bad in [
            "03 00 00",
            "10",
            "0e 20 00",
            "09 03 00 00 00 01 00 00",
            "03 00 02 01 00",
        ] {
            let mut data = vec![0];
            data.extend_from_slice(&hex(bad));
            rpc_decoder(&data);
        }
    }
}
