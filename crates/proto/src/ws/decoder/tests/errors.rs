//! Every `ProtocolError` variant from byte vectors, and UTF-8 fail-fast.

use super::*;
use crate::fuzzing::OwnedEvent;
use OwnedEvent::{Binary, Text};

#[test]
fn invalid_opcodes() {
    for op in [3u8, 4, 5, 6, 7, 0xB, 0xC, 0xD, 0xE, 0xF] {
        let err = error(server(), &masked(0x80 | op, b""));
        assert_eq!(err, ProtocolError::InvalidOpcode(op));
        assert_eq!(
            (err.code(), err.close_code()),
            ("ERR_WS_INVALID_OPCODE", 1002)
        );
    }
}

#[test]
fn masking_rules() {
    let err = error(server(), &hex("81 05 48 65 6c 6c 6f"));
    assert_eq!(
        (err, err.code()),
        (ProtocolError::UnmaskedFrame, "ERR_WS_UNMASKED_FRAME")
    );
    let err = error(client(), &masked(0x81, b"Hello"));
    assert_eq!(
        (err, err.code()),
        (ProtocolError::MaskedFrame, "ERR_WS_MASKED_FRAME")
    );
}

#[test]
fn reserved_bits() {
    for b0 in [0xA1, 0x91, 0xC1, 0xF1, 0xC9] {
        let err = error(server(), &masked(b0, b"x"));
        assert_eq!(
            (err, err.code()),
            (ProtocolError::ReservedBits, "ERR_WS_RESERVED_BITS"),
            "{b0:02x}"
        );
    }
    // With deflate: RSV1 is fine on a first data frame only.
    let params = DeflateParams::default();
    let make = || with_deflate(server(), &params);
    for input in [
        masked(0xC9, b""),                                          // control frame
        concat(&[masked(0x41, &[0xf2, 0x48]), masked(0xC0, &[0])]), // continuation
        masked(0xE1, &[0xf2]),                                      // RSV2 still invalid
    ] {
        assert_eq!(
            decode_everywhere(&make, &input).1,
            Some(ProtocolError::ReservedBits)
        );
    }
}

#[test]
fn control_frame_rules() {
    let err = error(server(), &masked(0x89, &[0u8; 126]));
    assert_eq!(
        (err, err.code()),
        (
            ProtocolError::ControlFrameTooBig,
            "ERR_WS_CONTROL_FRAME_TOO_BIG"
        )
    );
    let err = error(server(), &masked(0x09, b""));
    assert_eq!(
        (err, err.code()),
        (
            ProtocolError::FragmentedControl,
            "ERR_WS_FRAGMENTED_CONTROL"
        )
    );
    // Detected from the header alone.
    let mut d = Decoder::new(server());
    let header = &masked(0x8A, &[0u8; 200])[..8];
    assert_eq!(
        d.feed(&mut header.to_vec(), |_| Flow::Continue),
        Err(ProtocolError::ControlFrameTooBig)
    );
}

#[test]
fn continuation_rules() {
    let err = error(server(), &masked(0x80, b"lo"));
    assert_eq!(
        (err, err.code()),
        (
            ProtocolError::UnexpectedContinuation,
            "ERR_WS_UNEXPECTED_CONTINUATION"
        )
    );
    // A complete message does not leave a message open.
    let err = error(server(), &concat(&[masked(0x81, b"a"), masked(0x80, b"b")]));
    assert_eq!(err, ProtocolError::UnexpectedContinuation);
    for second in [0x81u8, 0x82, 0x01] {
        let err = error(
            server(),
            &concat(&[masked(0x01, b"Hel"), masked(second, b"lo")]),
        );
        assert_eq!(
            (err, err.code()),
            (
                ProtocolError::ExpectedContinuation,
                "ERR_WS_EXPECTED_CONTINUATION"
            )
        );
    }
}

#[test]
fn message_too_big_from_the_header() {
    let config = DecoderConfig {
        max_payload_length: 10,
        ..server()
    };
    assert_eq!(
        events(config.clone(), &masked(0x82, &[0; 10])),
        [Binary(vec![0; 10])]
    );
    let err = error(config.clone(), &masked(0x82, &[0; 11]));
    assert_eq!(
        (err, err.code(), err.close_code()),
        (ProtocolError::MessageTooBig, "ERR_WS_MESSAGE_TOO_BIG", 1009)
    );
    // The header is enough: no payload is needed (or buffered) to decide.
    let mut d = Decoder::new(config.clone());
    let header = &masked(0x82, &[0; 11])[..6];
    assert_eq!(
        d.feed(&mut header.to_vec(), |_| Flow::Continue),
        Err(ProtocolError::MessageTooBig)
    );
    // Across fragments: 6 + 5 > 10, detected at the second header.
    let input = concat(&[masked(0x02, &[0; 6]), masked(0x80, &[0; 5])]);
    assert_eq!(error(config.clone(), &input), ProtocolError::MessageTooBig);
    // A huge announced length.
    assert_eq!(
        error(config, &hex("82 FF 7F FF FF FF FF FF FF FF 00 00 00 00")),
        ProtocolError::MessageTooBig
    );
}

#[test]
fn too_many_fragments() {
    let config = DecoderConfig {
        max_fragments: 2,
        ..server()
    };
    let two = concat(&[masked(0x01, b"a"), masked(0x80, b"b")]);
    assert_eq!(events(config.clone(), &two), [Text(b"ab".to_vec())]);
    let three = concat(&[masked(0x01, b"a"), masked(0x00, b""), masked(0x80, b"b")]);
    let err = error(config, &three);
    assert_eq!(
        (err, err.code(), err.close_code()),
        (
            ProtocolError::TooManyFragments,
            "ERR_WS_TOO_MANY_FRAGMENTS",
            1009
        )
    );
}

#[test]
fn invalid_length() {
    let err = error(server(), &hex("82 FF 80 00 00 00 00 00 00 00 00 00 00 00"));
    assert_eq!(
        (err, err.code()),
        (ProtocolError::InvalidLength, "ERR_WS_INVALID_LENGTH")
    );
}

#[test]
fn close_payload_errors() {
    let err = error(server(), &masked(0x88, b"\x03"));
    assert_eq!(
        (err, err.code()),
        (
            ProtocolError::InvalidClosePayload,
            "ERR_WS_INVALID_CLOSE_PAYLOAD"
        )
    );
    let err = error(server(), &masked(0x88, b"\x03\xed"));
    assert_eq!(
        (err, err.code()),
        (
            ProtocolError::InvalidCloseCode(1005),
            "ERR_WS_INVALID_CLOSE_CODE"
        )
    );
    let err = error(server(), &masked(0x88, b"\x03\xe8\xce\xba\xe1\xbd"));
    assert_eq!((err, err.close_code()), (ProtocolError::InvalidUtf8, 1007));
}

// ---- UTF-8 ----

#[test]
fn utf8_split_across_fragments_is_fine() {
    // "κόσμε" cut inside code points at every fragment boundary.
    let text = "κόσμε".as_bytes();
    let input = concat(&[
        masked(0x01, &text[..1]),
        masked(0x00, &text[1..4]),
        masked(0x80, &text[4..]),
    ]);
    assert_eq!(events(server(), &input), [Text(text.to_vec())]);
}

#[test]
fn invalid_utf8_fails_fast_across_fragments() {
    // Autobahn 6.4.1: the second fragment is invalid; the third never matters.
    let first = masked(0x01, "κόσμε".as_bytes());
    let second = masked(0x00, b"\xf4\x90\x80\x80");
    let mut d = Decoder::new(server());
    d.feed(&mut first.clone(), |_| Flow::Continue).unwrap();
    let err = d.feed(&mut second.clone(), |_| Flow::Continue).unwrap_err();
    assert_eq!(
        (err, err.code(), err.close_code()),
        (ProtocolError::InvalidUtf8, "ERR_WS_INVALID_UTF8", 1007)
    );
    let third = masked(0x80, b"edited");
    assert_eq!(
        error(server(), &concat(&[first, second, third])),
        ProtocolError::InvalidUtf8
    );
}

#[test]
fn invalid_utf8_fails_fast_inside_a_frame() {
    // Autobahn 6.4.3: one frame, delivered in pieces; the invalid bytes are
    // in the middle. The error must come before the frame is complete.
    let payload =
        b"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\xf4\x90\x80\x80\x65\x64\x69\x74\x65\x64";
    let frame = masked(0x81, payload);
    let mut d = Decoder::new(server());
    d.feed(&mut frame[..6 + 11].to_vec(), |_| Flow::Continue)
        .unwrap();
    let err = d.feed(&mut frame[17..19].to_vec(), |_| Flow::Continue);
    assert_eq!(err, Err(ProtocolError::InvalidUtf8));
}

#[test]
fn truncated_utf8_at_message_end() {
    assert_eq!(
        error(server(), &masked(0x81, b"ab\xe2\x82")),
        ProtocolError::InvalidUtf8
    );
    let input = concat(&[masked(0x01, b"ab\xe2"), masked(0x80, b"\x82")]);
    assert_eq!(error(server(), &input), ProtocolError::InvalidUtf8);
    // Binary messages are not validated.
    assert_eq!(
        events(server(), &masked(0x82, b"\xff")),
        [Binary(vec![0xff])]
    );
}
