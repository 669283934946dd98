//! Byte-vector tests for the decoder (RFC examples, streams, memory; errors
//! and deflate in the submodules): hex frames in, events or errors out.
//! Every vector is also fed byte by byte, at every split point, and in
//! random pieces, and must decode identically.

use super::*;
use crate::fuzzing::{decode_split, Outcome, OwnedEvent};
use crate::test_util::{hex, Rng};
use crate::ws::deflate::DeflateParams;
use OwnedEvent::{Binary, Close, Ping, Pong, Text};

mod deflate;
mod errors;

pub(super) const KEY: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

pub(super) fn server() -> DecoderConfig {
    DecoderConfig::default()
}

pub(super) fn client() -> DecoderConfig {
    DecoderConfig {
        role: Role::Client,
        ..DecoderConfig::default()
    }
}

pub(super) fn with_deflate(config: DecoderConfig, params: &DeflateParams) -> Decoder {
    let role = config.role;
    let mut d = Decoder::new(config);
    d.set_decompressor(Decompressor::new(params, role));
    d
}

/// A masked frame as a client sends it: `b0` is the first header byte.
pub(super) fn masked(b0: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![b0];
    match payload.len() {
        n @ 0..=125 => out.push(0x80 | n as u8),
        n @ 126..=0xFFFF => {
            out.push(0x80 | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(0x80 | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(&KEY);
    let start = out.len();
    out.extend_from_slice(payload);
    apply_mask(&mut out[start..], KEY, 0);
    out
}

pub(super) fn concat(frames: &[Vec<u8>]) -> Vec<u8> {
    frames.concat()
}

/// Decodes `input` whole, byte by byte, cut at every single point (and at
/// every pair of points for short inputs), and in random pieces; asserts all
/// agree and returns the outcome.
pub(super) fn decode_everywhere(make: &dyn Fn() -> Decoder, input: &[u8]) -> Outcome {
    let whole = decode_split(make(), input, &[]);
    let bytewise: Vec<usize> = (1..input.len()).collect();
    assert_eq!(
        decode_split(make(), input, &bytewise),
        whole,
        "byte by byte"
    );
    if input.len() <= 300 {
        for i in 0..=input.len() {
            assert_eq!(decode_split(make(), input, &[i]), whole, "split at {i}");
        }
    }
    if input.len() <= 40 {
        for i in 0..=input.len() {
            for j in i..=input.len() {
                assert_eq!(
                    decode_split(make(), input, &[i, j]),
                    whole,
                    "split at {i},{j}"
                );
            }
        }
    }
    let mut rng = Rng::new(input.len() as u64 + 1);
    for _ in 0..20 {
        let mut cuts = Vec::new();
        let mut at = 0;
        while at < input.len() {
            at += 1 + rng.below(input.len().min(4096));
            cuts.push(at);
        }
        assert_eq!(
            decode_split(make(), input, &cuts),
            whole,
            "random cuts {cuts:?}"
        );
    }
    whole
}

pub(super) fn decode(config: DecoderConfig, input: &[u8]) -> Outcome {
    decode_everywhere(&|| Decoder::new(config.clone()), input)
}

pub(super) fn events(config: DecoderConfig, input: &[u8]) -> Vec<OwnedEvent> {
    let (events, err) = decode(config, input);
    assert_eq!(err, None);
    events
}

pub(super) fn error(config: DecoderConfig, input: &[u8]) -> ProtocolError {
    decode(config, input).1.expect("an error")
}

// ---- RFC 6455 §5.7 examples ----

#[test]
fn rfc_single_frame_unmasked_text() {
    assert_eq!(
        events(client(), &hex("81 05 48 65 6c 6c 6f")),
        [Text(b"Hello".to_vec())]
    );
}

#[test]
fn rfc_single_frame_masked_text() {
    let input = hex("81 85 37 fa 21 3d 7f 9f 4d 51 58");
    assert_eq!(input, masked(0x81, b"Hello"));
    assert_eq!(events(server(), &input), [Text(b"Hello".to_vec())]);
}

#[test]
fn rfc_fragmented_unmasked_text() {
    let input = hex("01 03 48 65 6c 80 02 6c 6f");
    assert_eq!(events(client(), &input), [Text(b"Hello".to_vec())]);
}

#[test]
fn rfc_ping_and_masked_pong() {
    assert_eq!(
        events(client(), &hex("89 05 48 65 6c 6c 6f")),
        [Ping(b"Hello".to_vec())]
    );
    let pong = hex("8a 85 37 fa 21 3d 7f 9f 4d 51 58");
    assert_eq!(events(server(), &pong), [Pong(b"Hello".to_vec())]);
}

#[test]
fn rfc_256_byte_and_64k_binary() {
    let payload: Vec<u8> = (0..256u32).map(|i| i as u8).collect();
    let mut input = hex("82 7E 01 00");
    input.extend_from_slice(&payload);
    assert_eq!(events(client(), &input), [Binary(payload)]);

    let payload: Vec<u8> = (0..65536u32).map(|i| (i % 253) as u8).collect();
    let mut input = hex("82 7F 00 00 00 00 00 01 00 00");
    input.extend_from_slice(&payload);
    assert_eq!(events(client(), &input), [Binary(payload.clone())]);
    assert_eq!(events(server(), &masked(0x82, &payload)), [Binary(payload)]);
}

// ---- streams, control frames, close ----

#[test]
fn many_frames_in_one_input() {
    let input = concat(&[
        masked(0x81, b"one"),
        masked(0x82, &[1, 2, 3]),
        masked(0x89, b""),
        masked(0x81, b""),
        masked(0x8A, b"p"),
    ]);
    assert_eq!(
        events(server(), &input),
        [
            Text(b"one".to_vec()),
            Binary(vec![1, 2, 3]),
            Ping(vec![]),
            Text(vec![]),
            Pong(b"p".to_vec())
        ]
    );
}

#[test]
fn control_frames_interleaved_with_fragments() {
    let input = concat(&[
        masked(0x01, b"Hel"),
        masked(0x89, b"ping"),
        masked(0x00, b""),
        masked(0x8A, b"pong"),
        masked(0x80, b"lo"),
        masked(0x02, b"\x00"),
        masked(0x80, b"\x01"),
    ]);
    assert_eq!(
        events(server(), &input),
        [
            Ping(b"ping".to_vec()),
            Pong(b"pong".to_vec()),
            Text(b"Hello".to_vec()),
            Binary(vec![0, 1])
        ]
    );
}

#[test]
fn max_size_control_frame() {
    let payload = [7u8; 125];
    assert_eq!(
        events(server(), &masked(0x89, &payload)),
        [Ping(payload.to_vec())]
    );
}

#[test]
fn close_frames() {
    assert_eq!(
        events(server(), &masked(0x88, b"")),
        [Close(None, String::new())]
    );
    assert_eq!(
        events(server(), &masked(0x88, b"\x03\xe8bye")),
        [Close(Some(1000), "bye".into())]
    );
    assert_eq!(
        events(client(), &hex("88 02 0f a0")),
        [Close(Some(4000), String::new())]
    );
}

#[test]
fn close_codes_through_the_decoder() {
    for code in [
        1000u16, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 4999,
    ] {
        let got = events(server(), &masked(0x88, &code.to_be_bytes()));
        assert_eq!(got, [Close(Some(code), String::new())], "{code}");
    }
    for code in [
        0u16, 999, 1004, 1005, 1006, 1015, 1016, 2000, 2999, 5000, 65535,
    ] {
        assert_eq!(
            error(server(), &masked(0x88, &code.to_be_bytes())),
            ProtocolError::InvalidCloseCode(code),
            "{code}"
        );
    }
}

#[test]
fn everything_after_close_is_ignored() {
    let mut input = concat(&[
        masked(0x81, b"a"),
        masked(0x88, b"\x03\xe8"),
        masked(0x81, b"b"),
    ]);
    input.extend_from_slice(&hex("ff ff ff")); // garbage that would be an error
    assert_eq!(
        events(server(), &input),
        [Text(b"a".to_vec()), Close(Some(1000), String::new())]
    );

    let mut d = Decoder::new(server());
    d.feed(&mut masked(0x88, b""), |_| Flow::Continue).unwrap();
    assert!(d.is_finished());
    let mut seen = 0;
    d.feed(&mut masked(0x81, b"late"), |_| {
        seen += 1;
        Flow::Continue
    })
    .unwrap();
    assert_eq!(seen, 0);
}

#[test]
fn close_in_the_middle_of_a_fragmented_message() {
    let input = concat(&[
        masked(0x01, b"Hel"),
        masked(0x88, b"\x03\xe9"),
        masked(0x80, b"lo"),
    ]);
    assert_eq!(events(server(), &input), [Close(Some(1001), String::new())]);
}

#[test]
fn stop_ends_decoding() {
    let mut input = concat(&[masked(0x81, b"a"), masked(0x81, b"b"), masked(0x81, b"c")]);
    let mut d = Decoder::new(server());
    let mut seen = Vec::new();
    d.feed(&mut input, |e| {
        seen.push(OwnedEvent::from(e));
        if seen.len() == 2 {
            Flow::Stop
        } else {
            Flow::Continue
        }
    })
    .unwrap();
    assert_eq!(seen, [Text(b"a".to_vec()), Text(b"b".to_vec())]);
    assert!(d.is_finished());
    d.feed(&mut masked(0x81, b"d"), |_| panic!("no events after Stop"))
        .unwrap();
}

// ---- memory: zero copy and buffer release ----

#[test]
fn complete_frames_are_delivered_zero_copy() {
    let mut input = concat(&[
        masked(0x81, b"zero"),
        masked(0x89, b"ping"),
        masked(0x01, b"fr"),
        masked(0x80, b"ag"),
    ]);
    let range = input.as_ptr_range();
    let mut d = Decoder::new(server());
    let mut borrowed = Vec::new();
    d.feed(&mut input, |e| {
        let bytes = match e {
            Event::Text(b) | Event::Ping(b) => b,
            other => panic!("{other:?}"),
        };
        borrowed.push(range.contains(&bytes.as_ptr()));
        Flow::Continue
    })
    .unwrap();
    // Single frames point into the input; the reassembled message does not.
    assert_eq!(borrowed, [true, true, false]);
    assert_eq!(d.buffer_capacity(), 0);
}

#[test]
fn buffer_exists_only_while_a_message_is_partial() {
    let frame = masked(0x82, &[9u8; 1000]);
    let mut d = Decoder::new(server());
    assert_eq!(d.buffer_capacity(), 0);
    let (head, tail) = frame.split_at(500);
    d.feed(&mut head.to_vec(), |_| Flow::Continue).unwrap();
    let held = d.buffer_capacity();
    assert!(
        held > 0 && held < 1000,
        "grows with received bytes, not announced length: {held}"
    );
    let mut got = 0;
    d.feed(&mut tail.to_vec(), |e| {
        got = match e {
            Event::Binary(b) => b.len(),
            _ => 0,
        };
        Flow::Continue
    })
    .unwrap();
    assert_eq!(got, 1000);
    assert_eq!(
        d.buffer_capacity(),
        0,
        "released once the message completed"
    );
    assert!(d.is_idle(), "and nothing else is held");
}

#[test]
fn an_idle_decoder_is_small_and_holds_no_heap_state() {
    // Tens of thousands of idle connections each own one: it must stay a
    // few words, with whatever a frame in progress needs on the heap only
    // while one is.
    assert!(
        std::mem::size_of::<Decoder>() <= 64,
        "{}",
        std::mem::size_of::<Decoder>()
    );
    let mut d = Decoder::new(server());
    let mut frames = concat(&[
        masked(0x81, b"hello"),
        masked(0x89, b"p"),
        masked(0x82, &[1; 300]),
    ]);
    d.feed(&mut frames, |_| Flow::Continue).unwrap();
    assert!(d.is_idle(), "whole frames leave nothing behind");
    // A control frame cut in two is held, then released.
    let ping = masked(0x89, b"ping!");
    let (head, tail) = ping.split_at(8);
    d.feed(&mut head.to_vec(), |_| Flow::Continue).unwrap();
    assert!(!d.is_idle());
    let mut pinged = Vec::new();
    d.feed(&mut tail.to_vec(), |e| {
        if let Event::Ping(p) = e {
            pinged = p.to_vec();
        }
        Flow::Continue
    })
    .unwrap();
    assert_eq!(pinged, b"ping!");
    assert!(d.is_idle());
}

#[test]
fn a_header_alone_allocates_nothing() {
    let mut d = Decoder::new(server());
    // Announces 1 MiB but sends only the header.
    d.feed(&mut masked(0x82, &vec![0; 1 << 20])[..14].to_vec(), |_| {
        Flow::Continue
    })
    .unwrap();
    assert_eq!(d.buffer_capacity(), 0);
}

// ---- long random streams ----

#[test]
fn random_valid_streams_decode_identically_however_split() {
    let mut rng = Rng::new(42);
    for _ in 0..20 {
        let mut frames = Vec::new();
        let mut expected = Vec::new();
        for _ in 0..rng.below(12) + 1 {
            let len = [0, 1, 5, 125, 126, 300, 70_000][rng.below(7)];
            let payload: Vec<u8> = (0..len).map(|_| rng.below(128) as u8).collect();
            match rng.below(4) {
                0 => {
                    frames.push(masked(0x81, &payload));
                    expected.push(Text(payload));
                }
                1 => {
                    let cut = rng.below(payload.len() + 1);
                    frames.push(masked(0x02, &payload[..cut]));
                    frames.push(masked(0x89, b"hb"));
                    frames.push(masked(0x80, &payload[cut..]));
                    expected.push(Ping(b"hb".to_vec()));
                    expected.push(Binary(payload));
                }
                2 => {
                    frames.push(masked(0x8A, &payload[..len.min(125)]));
                    expected.push(Pong(payload[..len.min(125)].to_vec()));
                }
                _ => {
                    frames.push(masked(0x82, &payload));
                    expected.push(Binary(payload));
                }
            }
        }
        let input = concat(&frames);
        let make = || Decoder::new(server());
        let whole = decode_split(make(), &input, &[]);
        assert_eq!(whole, (expected, None));
        for _ in 0..10 {
            let mut cuts = Vec::new();
            let mut at = 0;
            while at < input.len() {
                at += 1 + rng.below(200);
                cuts.push(at);
            }
            assert_eq!(decode_split(make(), &input, &cuts), whole);
        }
    }
}
