use super::carriage::*;

#[test]
fn a_carried_message_is_padded_standard_base64_in_one_frame() {
    let mut out = Vec::new();
    write_carried_message(&mut out, &[0xfb, 0xff, 0x00]);
    assert_eq!(out, b"a[\"+/8A\"]");
    out.clear();
    write_carried_message(&mut out, b"ab");
    assert_eq!(out, b"a[\"YWI=\"]");
    out.clear();
    write_carried_message(&mut out, b"");
    assert_eq!(out, b"a[\"\"]");
}

#[test]
fn carried_len_is_four_per_three_rounded_up() {
    assert_eq!(carried_len(0), 0);
    assert_eq!(carried_len(1), 4);
    assert_eq!(carried_len(3), 4);
    assert_eq!(carried_len(4), 8);
    assert_eq!(carried_len(65_536), 87_384);
}

#[test]
fn every_byte_round_trips() {
    let bytes: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
    let mut frame = Vec::new();
    write_carried_message(&mut frame, &bytes);
    let text = std::str::from_utf8(&frame[3..frame.len() - 2]).unwrap();
    assert_eq!(text.len(), carried_len(bytes.len()));
    let mut back = vec![7];
    decode_carried(text, &mut back).unwrap();
    assert_eq!(back[0], 7, "appends");
    assert_eq!(&back[1..], &bytes[..]);
}

#[test]
fn the_decoder_refuses_all_but_canonical_padded_base64() {
    let mut out = Vec::new();
    for broken in [
        "YWI",      // unpadded
        "YW=I",     // padding inside
        "YWJ=",     // bits set past the data (canonical: YWI=)
        "YW I=",    // a space
        "YWI=\n",   // a line break
        "YW-_",     // the URL-safe alphabet
        "YWI=YWI=", // padding in the middle of the whole
        "é===",
    ] {
        assert_eq!(
            decode_carried(broken, &mut out),
            Err(BrokenBase64),
            "{broken:?}"
        );
    }
    decode_carried("", &mut out).unwrap();
    assert!(out.is_empty());
}
