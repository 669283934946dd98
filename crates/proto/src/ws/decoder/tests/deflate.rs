//! Compressed messages (RFC 7692) through the decoder.

use super::*;
use crate::fuzzing::OwnedEvent;
use OwnedEvent::{Binary, Ping, Text};

/// RFC 7692 §7.2.3.1: "Hello" compressed, then the same in two fragments.
#[test]
fn rfc7692_compressed_hello() {
    let params = DeflateParams::default();
    let make = || with_deflate(client(), &params);
    let single = hex("c1 07 f2 48 cd c9 c9 07 00");
    assert_eq!(
        decode_everywhere(&make, &single),
        (vec![Text(b"Hello".to_vec())], None)
    );
    let fragmented = hex("41 03 f2 48 cd 80 04 c9 c9 07 00");
    assert_eq!(
        decode_everywhere(&make, &fragmented),
        (vec![Text(b"Hello".to_vec())], None)
    );
    // §7.2.3.2: with context takeover the second message refers to the first.
    let two = hex("c1 07 f2 48 cd c9 c9 07 00 c1 05 f2 00 11 00 00");
    assert_eq!(
        decode_everywhere(&make, &two),
        (vec![Text(b"Hello".to_vec()), Text(b"Hello".to_vec())], None)
    );
    // An empty compressed message.
    assert_eq!(
        decode_everywhere(&make, &hex("c2 01 00")),
        (vec![Binary(vec![])], None)
    );
}

#[test]
fn compressed_round_trip_with_interleaved_control() {
    for no_ctx in [false, true] {
        let params = DeflateParams {
            server_no_context_takeover: no_ctx,
            client_no_context_takeover: no_ctx,
            client_max_window_bits: 10,
            ..DeflateParams::default()
        };
        let mut c = crate::ws::deflate::Compressor::new(&params, Role::Client);
        let msg = "Switchboard ".repeat(40);
        let mut z = Vec::new();
        c.compress(msg.as_bytes(), &mut z).unwrap();
        let (a, b) = z.split_at(z.len() / 2);
        let mut z2 = Vec::new();
        c.compress(msg.as_bytes(), &mut z2).unwrap();
        let input = concat(&[
            masked(0x41, a),
            masked(0x89, b"p"),
            masked(0x80, b),
            masked(0xC1, &z2),
            masked(0x82, b"raw"),
        ]);
        let make = || with_deflate(server(), &params);
        let (events, err) = decode_everywhere(&make, &input);
        assert_eq!(err, None);
        assert_eq!(
            events,
            [
                Ping(b"p".to_vec()),
                Text(msg.clone().into_bytes()),
                Text(msg.clone().into_bytes()),
                Binary(b"raw".to_vec())
            ]
        );
    }
}

#[test]
fn inflate_limit() {
    let params = DeflateParams::default();
    let mut z = Vec::new();
    crate::ws::deflate::Compressor::new(&params, Role::Client)
        .compress(&[b'a'; 5000], &mut z)
        .unwrap();
    let input = masked(0xC2, &z);
    let at_limit = || {
        with_deflate(
            DecoderConfig {
                max_payload_length: 5000,
                ..server()
            },
            &params,
        )
    };
    assert_eq!(
        decode_everywhere(&at_limit, &input),
        (vec![Binary(vec![b'a'; 5000])], None)
    );
    let below = || {
        with_deflate(
            DecoderConfig {
                max_payload_length: 4999,
                ..server()
            },
            &params,
        )
    };
    assert_eq!(
        decode_everywhere(&below, &input).1,
        Some(ProtocolError::MessageTooBig)
    );
}

#[test]
fn corrupt_compressed_data() {
    let params = DeflateParams::default();
    let make = || with_deflate(server(), &params);
    let err = decode_everywhere(&make, &masked(0xC1, &[0xff, 0xff, 0xff]))
        .1
        .unwrap();
    assert_eq!(
        (err, err.code(), err.close_code()),
        (ProtocolError::Inflate, "ERR_WS_INFLATE", 1007)
    );
}

#[test]
fn compressed_text_is_utf8_checked() {
    let params = DeflateParams::default();
    let mut z = Vec::new();
    crate::ws::deflate::Compressor::new(&params, Role::Client)
        .compress(b"ok\xff", &mut z)
        .unwrap();
    let make = || with_deflate(server(), &params);
    assert_eq!(
        decode_everywhere(&make, &masked(0xC1, &z)).1,
        Some(ProtocolError::InvalidUtf8)
    );
}

#[test]
fn compressed_buffer_is_released() {
    let params = DeflateParams::default();
    let mut d = with_deflate(server(), &params);
    d.feed(&mut masked(0xC1, &hex("f2 48 cd c9 c9 07 00")), |_| {
        Flow::Continue
    })
    .unwrap();
    assert_eq!(d.buffer_capacity(), 0);
}
