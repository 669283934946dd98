//! Byte-vector tests of the body decoder: lengths, chunk lines, extensions,
//! trailers, limits, and that every split of the input decodes alike.

use super::*;

/// Decodes `input` cut at `cuts` (ascending), the pieces arriving one after
/// another as a runtime's reads would: (body, bytes consumed, done, error).
/// After an error the count is 0: the connection is closed, so where the
/// framing broke off does not matter (and depends on the cuts).
fn decode_split(
    kind: BodyKind,
    limits: BodyLimits,
    input: &[u8],
    cuts: &[usize],
) -> (Vec<u8>, usize, bool, Option<HttpError>) {
    let mut decoder = match BodyDecoder::new(kind, limits) {
        Ok(d) => d,
        Err(e) => return (Vec::new(), 0, false, Some(e)),
    };
    let (mut body, mut used) = (Vec::new(), 0);
    let mut available = 0;
    for &end in cuts.iter().chain(std::iter::once(&input.len())) {
        available = end.clamp(available, input.len());
        loop {
            match decoder.decode(&input[used..available]) {
                Ok(chunk) => {
                    body.extend_from_slice(chunk.data);
                    used += chunk.consumed;
                    assert_eq!(decoder.received(), body.len() as u64);
                    if chunk.done {
                        assert!(decoder.is_done());
                        return (body, used, true, None);
                    }
                    if chunk.consumed == 0 {
                        assert_eq!(used, available, "no progress with input left");
                        break;
                    }
                }
                Err(e) => return (body, 0, false, Some(e)),
            }
        }
    }
    (body, used, false, None)
}

/// Decodes whole and split at every position and one byte at a time; all
/// must agree. Returns the whole result.
fn decode(
    kind: BodyKind,
    limits: BodyLimits,
    input: &[u8],
) -> (Vec<u8>, usize, bool, Option<HttpError>) {
    let whole = decode_split(kind, limits, input, &[]);
    for cut in 0..=input.len() {
        assert_eq!(
            decode_split(kind, limits, input, &[cut]),
            whole,
            "cut at {cut}"
        );
    }
    let every: Vec<usize> = (1..input.len()).collect();
    assert_eq!(
        decode_split(kind, limits, input, &every),
        whole,
        "byte by byte"
    );
    whole
}

fn chunked(input: &str) -> (Vec<u8>, usize, bool, Option<HttpError>) {
    decode(BodyKind::Chunked, BodyLimits::default(), input.as_bytes())
}

fn ok(input: &str) -> (String, usize) {
    let (body, used, done, err) = chunked(input);
    assert_eq!((done, err), (true, None), "{input:?}");
    (String::from_utf8(body).unwrap(), used)
}

fn err(input: &str) -> HttpError {
    let (_, _, done, err) = chunked(input);
    assert!(!done, "{input:?}");
    err.unwrap_or_else(|| panic!("{input:?} did not fail"))
}

#[test]
fn fixed_lengths() {
    let limits = BodyLimits::default();
    assert_eq!(
        decode(BodyKind::Length(5), limits, b"helloGET /"),
        (b"hello".to_vec(), 5, true, None)
    );
    assert_eq!(
        decode(BodyKind::Length(5), limits, b"hel"),
        (b"hel".to_vec(), 3, false, None)
    );
    assert_eq!(
        decode(BodyKind::Empty, limits, b"GET"),
        (vec![], 0, true, None)
    );
    assert_eq!(
        decode(BodyKind::Length(0), limits, b"GET"),
        (vec![], 0, true, None)
    );
    let mut d = BodyDecoder::new(BodyKind::Length(3), limits).unwrap();
    let chunk = d.decode(b"abcdef").unwrap();
    assert_eq!(
        (chunk.consumed, chunk.data, chunk.done),
        (3, &b"abc"[..], true)
    );
    // Done: nothing more is consumed.
    assert_eq!(
        d.decode(b"def").unwrap(),
        BodyChunk {
            consumed: 0,
            data: b"",
            done: true
        }
    );
}

#[test]
fn chunked_bodies() {
    let rest = "GET / HTTP/1.1\r\n";
    let (body, used) = ok(&format!("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n{rest}"));
    assert_eq!(body, "hello world");
    assert_eq!(used, 26);
    assert_eq!(
        ok("a\r\n0123456789\r\nA\r\n0123456789\r\n000\r\n\r\n").0,
        "01234567890123456789"
    );
    assert_eq!(ok("0\r\n\r\n"), (String::new(), 5));
    // Leading zeros are not an overflow.
    assert_eq!(ok("00000000000000000000001\r\nx\r\n0\r\n\r\n").0, "x");
}

#[test]
fn chunk_extensions() {
    for good in [
        "5;a\r\nhello\r\n0\r\n\r\n",
        "5;a=b;c=\"d e\"\r\nhello\r\n0;last\r\n\r\n",
        "5;a=\"q\\\"uoted; \\\\x\";b\r\nhello\r\n0\r\n\r\n",
        // BWS where RFC 9112 §7.1.1 has it.
        "5 ;a = b\t; c\r\nhello\r\n0\r\n\r\n",
    ] {
        assert_eq!(ok(good).0, "hello", "{good:?}");
    }
    for bad in [
        "5;\r\nhello\r\n0\r\n\r\n",
        "5 erfrferferf\r\nhello\r\n0\r\n\r\n",
        "5 \r\nhello\r\n0\r\n\r\n",
        "5;a \r\nhello\r\n0\r\n\r\n",
        "5;a=b \r\nhello\r\n0\r\n\r\n",
        "5;a=\r\nhello\r\n0\r\n\r\n",
        "5;=b\r\nhello\r\n0\r\n\r\n",
        "5;a=\"unterminated\r\nhello\r\n0\r\n\r\n",
        "5;a=\"x\ny\"\r\nhello\r\n0\r\n\r\n",
        "5;a=b\nhello\r\n0\r\n\r\n",
        "5;a@b\r\nhello\r\n0\r\n\r\n",
        "5;a=\"x\"y\r\nhello\r\n0\r\n\r\n",
    ] {
        assert_eq!(err(bad).status(), 400, "{bad:?}");
    }
}

#[test]
fn chunk_size_rules() {
    for bad in [
        "\r\nhello\r\n",
        "x\r\n",
        "-5\r\nhello\r\n",
        "+5\r\n",
        "0x5\r\nhello\r\n",
        "5\nhello\r\n0\r\n\r\n",
        "5\r\r\nhello",
        " 5\r\nhello",
        // 17 significant hex digits do not fit u64.
        "10000000000000000\r\n",
    ] {
        assert_eq!(err(bad).status(), 400, "{bad:?}");
    }
    assert_eq!(
        err("10000000000000000\r\n"),
        HttpError::BadRequest("chunk size overflows")
    );
    // 16 digits fit, but exceed the body limit: 413 when announced.
    assert_eq!(err("ffffffffffffffff\r\n"), HttpError::BodyTooLarge);
}

#[test]
fn chunk_data_must_end_with_crlf() {
    for bad in [
        "5\r\nhelloX\r\n0\r\n\r\n",
        "5\r\nhello\n0\r\n\r\n",
        "5\r\nhello\rX",
        "5\r\nABCDE0\r\n\r\n",
    ] {
        assert_eq!(
            err(bad),
            HttpError::BadRequest("chunk data not followed by CRLF"),
            "{bad:?}"
        );
    }
}

#[test]
fn chunk_line_limit() {
    let limits = BodyLimits {
        max_chunk_line_bytes: 8,
        ..BodyLimits::default()
    };
    let fits = b"5;abcdef\r\nhello\r\n0\r\n\r\n";
    assert!(decode(BodyKind::Chunked, limits, fits).2);
    let over = b"5;abcdefg\r\nhello\r\n0\r\n\r\n";
    assert_eq!(
        decode(BodyKind::Chunked, limits, over).3,
        Some(HttpError::BadRequest("chunk-size line too long"))
    );
    // Long runs of zeros hit the line limit too.
    let zeros = b"000000000\r\n";
    assert_eq!(
        decode(BodyKind::Chunked, limits, zeros)
            .3
            .map(|e| e.status()),
        Some(400)
    );
}

#[test]
fn trailers() {
    let (body, used) = ok("5\r\nhello\r\n0\r\nVary: *\r\nContent-Type: text/plain\r\n\r\nNEXT");
    assert_eq!((body.as_str(), used), ("hello", 50));
    assert_eq!(ok("0\r\nX:\r\n\r\n").1, 9);
    assert_eq!(ok("0\r\nX: a\tb\u{a0}\r\n\r\n").0, "");
    for bad in [
        "0\r\nX : y\r\n\r\n",
        "0\r\n : y\r\n\r\n",
        "0\r\nX: y\r\n z\r\n\r\n",
        "0\r\nX: y\n\r\n",
        "0\r\nX: y\rz\r\n\r\n",
        "0\r\nX: \x01\r\n\r\n",
        "0\r\n:y\r\n\r\n",
        "0\r\nXy\r\n\r\n",
        "0\r\n\r\r\n",
        "0\r\n\n",
    ] {
        assert_eq!(err(bad).status(), 400, "{bad:?}");
    }
    let limits = BodyLimits {
        max_trailer_bytes: 10,
        ..BodyLimits::default()
    };
    // "X: 123456\r\n" is 11 bytes; the final CRLF does not count.
    assert!(decode(BodyKind::Chunked, limits, b"0\r\nX: 12345\r\n\r\n").2);
    assert_eq!(
        decode(BodyKind::Chunked, limits, b"0\r\nX: 123456\r\n\r\n").3,
        Some(HttpError::HeadersTooLarge)
    );
}

#[test]
fn body_limits() {
    let limits = BodyLimits {
        max_body_bytes: 10,
        ..BodyLimits::default()
    };
    assert_eq!(
        BodyDecoder::new(BodyKind::Length(11), limits).err(),
        Some(HttpError::BodyTooLarge)
    );
    assert!(BodyDecoder::new(BodyKind::Length(10), limits).is_ok());
    assert!(
        decode(
            BodyKind::Chunked,
            limits,
            b"5\r\nhello\r\n5\r\nworld\r\n0\r\n\r\n"
        )
        .2
    );
    let over = decode(
        BodyKind::Chunked,
        limits,
        b"5\r\nhello\r\n6\r\nworld!\r\n0\r\n\r\n",
    );
    assert_eq!(
        (over.0.as_slice(), over.3),
        (&b"hello"[..], Some(HttpError::BodyTooLarge))
    );
    // A route's limit set after routing applies to the declared length.
    let mut d = BodyDecoder::new(BodyKind::Length(8), BodyLimits::default()).unwrap();
    d.set_max_body_bytes(4);
    assert_eq!(d.decode(b"12345678"), Err(HttpError::BodyTooLarge));
    // The error sticks.
    assert_eq!(d.decode(b""), Err(HttpError::BodyTooLarge));
    let mut d = BodyDecoder::new(BodyKind::Chunked, BodyLimits::default()).unwrap();
    d.set_max_body_bytes(3);
    assert_eq!(d.decode(b"4\r\n"), Err(HttpError::BodyTooLarge));
}

#[test]
fn one_data_slice_per_call() {
    let input = b"2\r\nab\r\n3;x\r\ncde\r\n0\r\n\r\n";
    let mut d = BodyDecoder::new(BodyKind::Chunked, BodyLimits::default()).unwrap();
    let mut rest = &input[..];
    let mut calls = Vec::new();
    loop {
        let c = d.decode(rest).unwrap();
        calls.push((c.consumed, c.data.to_vec(), c.done));
        rest = &rest[c.consumed..];
        if c.done {
            break;
        }
    }
    assert_eq!(
        calls,
        [
            (5, b"ab".to_vec(), false),
            (10, b"cde".to_vec(), false),
            (7, vec![], true),
        ]
    );
}

#[test]
fn what_remains_is_known_for_a_length_and_not_for_chunks() {
    let limits = BodyLimits::default();
    let mut fixed = BodyDecoder::new(BodyKind::Length(10), limits).unwrap();
    assert_eq!(fixed.remaining(), Some(10));
    fixed.decode(b"0123").unwrap();
    assert_eq!(fixed.remaining(), Some(6));
    assert!(fixed.decode(b"456789").unwrap().done);
    assert_eq!(fixed.remaining(), Some(0));

    let mut chunked = BodyDecoder::new(BodyKind::Chunked, limits).unwrap();
    assert_eq!(chunked.remaining(), None);
    chunked.decode(b"4\r\nab").unwrap();
    assert_eq!(
        chunked.remaining(),
        None,
        "a chunk's size is not the body's"
    );
    let mut rest: &[u8] = b"cd\r\n0\r\n\r\n";
    while !chunked.is_done() {
        let chunk = chunked.decode(rest).unwrap();
        rest = &rest[chunk.consumed..];
    }
    assert_eq!(chunked.remaining(), Some(0));
}
