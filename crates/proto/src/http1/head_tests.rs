//! Byte-vector tests of the head parser: one test per strictness rule (see
//! the module docs of `scan.rs`, `fields.rs`, `target.rs`), the limits, and
//! the meaning of the fields.

use super::*;

fn limits() -> Limits {
    Limits::default()
}

/// Parses `input` whole and byte by byte (every prefix must need more,
/// unless it already fails the same way), returning the whole result.
fn parse_with(
    input: &[u8],
    limits: Limits,
) -> Result<Option<(Method, String, usize, BodyKind)>, HttpError> {
    let mut parser = HeadParser::new(limits);
    let whole = parser
        .parse(input)
        .map(|h| h.map(|h| (h.method, h.target.to_owned(), h.head_len, h.body)));
    // Fed one byte at a time to one parser, as a slow client would.
    let mut slow = HeadParser::new(limits);
    let mut slow_result = Ok(None);
    for end in 1..=input.len() {
        slow_result = slow
            .parse(&input[..end])
            .map(|h| h.map(|h| (h.method, h.target.to_owned(), h.head_len, h.body)));
        if !matches!(slow_result, Ok(None)) {
            break;
        }
    }
    assert_eq!(
        whole,
        slow_result,
        "whole and byte-by-byte differ: {:?}",
        String::from_utf8_lossy(input)
    );
    whole
}

fn parse(input: &str) -> Result<Option<(Method, String, usize, BodyKind)>, HttpError> {
    parse_with(input.as_bytes(), limits())
}

fn status(input: &str) -> u16 {
    match parse(input) {
        Err(e) => e.status(),
        Ok(Some(_)) => 200,
        Ok(None) => 0,
    }
}

fn assert_status(cases: &[&str], expected: u16) {
    for case in cases {
        assert_eq!(status(case), expected, "{case:?} -> {:?}", parse(case));
    }
}

#[test]
fn a_complete_head() {
    let input = b"POST /a/b?x=1&y HTTP/1.1\r\nHost: example.com:8080\r\nX-A:  one \t\r\nx-a: two\r\nContent-Length: 5\r\n\r\nhelloGET";
    let mut parser = HeadParser::new(limits());
    let head = parser.parse(input).unwrap().unwrap();
    assert_eq!(head.method, Method::Post);
    assert_eq!(
        (head.target, head.path, head.query),
        ("/a/b?x=1&y", "/a/b", Some("x=1&y"))
    );
    assert_eq!(head.version, Version::Http11);
    assert_eq!(head.head_len, input.len() - 8);
    assert_eq!(head.body, BodyKind::Length(5));
    assert_eq!(head.host, Some("example.com:8080"));
    assert!(head.keep_alive && !head.expect_continue && !head.upgrade);
    assert_eq!(
        head.headers_raw,
        b"Host: example.com:8080\r\nX-A:  one \t\r\nx-a: two\r\nContent-Length: 5\r\n"
    );
    let headers: Vec<_> = head.headers().collect();
    assert_eq!(
        headers,
        [
            ("Host", &b"example.com:8080"[..]),
            ("X-A", b"one"),
            ("x-a", b"two"),
            ("Content-Length", b"5")
        ]
    );
    assert_eq!(head.header("x-A"), Some(&b"one"[..]));
    assert_eq!(head.header("missing"), None);
}

#[test]
fn no_headers_and_leading_empty_lines() {
    let input = b"\r\n\nGET / HTTP/1.0\r\n\r\n";
    let mut parser = HeadParser::new(limits());
    let head = parser.parse(input).unwrap().unwrap();
    assert_eq!(head.head_len, input.len());
    assert_eq!(head.headers_raw, b"");
    assert_eq!(head.headers().count(), 0);
    assert_eq!(
        (head.version, head.host, head.keep_alive),
        (Version::Http10, None, false)
    );
}

#[test]
fn every_prefix_needs_more() {
    let input = b"GET /x HTTP/1.1\r\nHost: a\r\nA: b\r\n\r\n";
    let mut parser = HeadParser::new(limits());
    for end in 0..input.len() {
        assert!(matches!(parser.parse(&input[..end]), Ok(None)), "{end}");
    }
    assert!(parser.parse(input).unwrap().is_some());
    // A shorter buffer after a complete head starts a new request.
    assert!(matches!(parser.parse(&input[..3]), Ok(None)));
    assert!(parser.parse(input).unwrap().is_some());
}

#[test]
fn content_length_with_transfer_encoding_is_400() {
    assert_status(
        &[
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n",
        ],
        400,
    );
}

#[test]
fn repeated_or_listed_content_length_is_400() {
    assert_status(
        &[
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nx",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1, 1\r\n\r\nx",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1,1\r\n\r\nx",
        ],
        400,
    );
}

#[test]
fn content_length_must_be_digits_within_u64() {
    assert_status(
        &[
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4 2\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x10\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 18446744073709551616\r\n\r\n",
        ],
        400,
    );
    // Surrounding whitespace is not part of the value; leading zeros are digits.
    assert_eq!(
        parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length:  003 \r\n\r\n")
            .unwrap()
            .unwrap()
            .3,
        BodyKind::Length(3)
    );
    assert_eq!(
        parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n")
            .unwrap()
            .unwrap()
            .3,
        BodyKind::Empty
    );
    assert_eq!(
        parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 18446744073709551615\r\n\r\n")
            .unwrap()
            .unwrap()
            .3,
        BodyKind::Length(u64::MAX)
    );
}

#[test]
fn transfer_encoding_rules() {
    let te = |value: &str| {
        status(&format!(
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: {value}\r\n\r\n"
        ))
    };
    assert_eq!(te("chunked"), 200);
    assert_eq!(te("CHUNKED"), 200);
    assert_eq!(te(" , chunked ,"), 200);
    // The last coding must be chunked.
    assert_eq!(te("gzip"), 400);
    assert_eq!(te("chunked, gzip"), 400);
    assert_eq!(te("pigeons"), 400);
    assert_eq!(te("chunkedchunked"), 400);
    assert_eq!(te(""), 400);
    // chunked at most once, across lines too.
    assert_eq!(te("chunked, chunked"), 400);
    assert_eq!(
        status("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"),
        400
    );
    // Codings we do not decode: 501.
    assert_eq!(te("gzip, chunked"), 501);
    assert_eq!(te("x-custom;q=\"1,2\", chunked"), 501);
    assert_eq!(
        status("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: deflate\r\nTransfer-Encoding: chunked\r\n\r\n"),
        501
    );
    // Malformed lists and parameters on chunked: 400.
    assert_eq!(te("chunked;x=1"), 400);
    assert_eq!(te("gzip chunked"), 400);
    assert_eq!(te("\"chunked\""), 400);
    // HTTP/1.0 has no transfer codings.
    assert_eq!(
        status("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"),
        400
    );
}

#[test]
fn obs_fold_and_space_before_colon_are_400() {
    assert_status(
        &[
            "GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n\tb\r\n\r\n",
            "GET / HTTP/1.1\r\n Host: a\r\n\r\n",
            "GET / HTTP/1.1\r\nHost : a\r\n\r\n",
            "GET / HTTP/1.1\r\nHost\t: a\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: a\r\n: empty name\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: a\r\nBad@Name: x\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: a\r\nNo colon\r\n\r\n",
        ],
        400,
    );
}

#[test]
fn host_rules() {
    assert_status(
        &[
            "GET / HTTP/1.1\r\n\r\n",
            "GET / HTTP/1.1\r\nX: y\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: a b\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: user@a\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: a:b\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n",
            "GET http://a/ HTTP/1.1\r\n\r\n",
        ],
        400,
    );
    assert_status(
        &[
            "GET / HTTP/1.1\r\nHost:\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n",
            "GET / HTTP/1.0\r\n\r\n",
        ],
        200,
    );
    // Absolute-form: the target's authority replaces Host (RFC 9112 §3.2.2).
    let input = b"GET http://target.example/p?q HTTP/1.1\r\nHost: other\r\n\r\n";
    let mut parser = HeadParser::new(limits());
    let head = parser.parse(input).unwrap().unwrap();
    assert_eq!(
        (head.host, head.path, head.query),
        (Some("target.example"), "/p", Some("q"))
    );
}

#[test]
fn control_characters_and_bare_cr_are_400() {
    assert_status(
        &[
            "GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: a\r\nX: a\0b\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: a\r\nX: a\x0cb\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: a\r\nX: a\x7fb\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: a\r\nX\x01: b\r\n\r\n",
            "GET /\x00 HTTP/1.1\r\nHost: a\r\n\r\n",
            "\0GET / HTTP/1.1\r\nHost: a\r\n\r\n",
            "GET / HTTP/1.1\rHost: a\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: a\r\n\r\r\n",
        ],
        400,
    );
    // HTAB and obs-text are allowed in values.
    let mut parser = HeadParser::new(limits());
    let head = parser
        .parse(b"GET / HTTP/1.1\r\nHost: a\r\nX: a\tb\xff\r\n\r\n")
        .unwrap()
        .unwrap();
    assert_eq!(head.header("x"), Some(&b"a\tb\xff"[..]));
}

#[test]
fn line_endings_and_request_line_whitespace_agree_with_node() {
    // Node 20 answers 400 to every bare-LF line ending, to HTAB and to
    // leading or trailing whitespace in the request line...
    assert_status(
        &[
            "GET / HTTP/1.1\nHost: a\n\n",
            "GET / HTTP/1.1\nHost: a\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: a\n\r\n",
            "GET / HTTP/1.1\r\nHost: a\r\n\n",
            "GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n",
            "GET /\tHTTP/1.1\r\nHost: a\r\n\r\n",
            "GET / HTTP/1.1 \r\nHost: a\r\n\r\n",
            " GET / HTTP/1.1\r\nHost: a\r\n\r\n",
        ],
        400,
    );
    // ...and accepts several SPs between the parts, and empty lines
    // (CRLF or LF) before the request line.
    assert_status(
        &[
            "GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
            "GET /   HTTP/1.1\r\nHost: a\r\n\r\n",
            "\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
            "\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
        ],
        200,
    );
}

#[test]
fn request_target_forms() {
    assert_status(
        &[
            "GET /a?b HTTP/1.1\r\nHost: a\r\n\r\n",
            "GET http://a.example HTTP/1.1\r\nHost: a\r\n\r\n",
            "GET https://a.example:8443/x HTTP/1.1\r\nHost: a\r\n\r\n",
            "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
        ],
        200,
    );
    assert_status(
        &[
            "GET * HTTP/1.1\r\nHost: a\r\n\r\n",
            "GET a.example:443 HTTP/1.1\r\nHost: a\r\n\r\n",
            "GET ftp://a/ HTTP/1.1\r\nHost: a\r\n\r\n",
            "GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n",
            "GET /\u{e9} HTTP/1.1\r\nHost: a\r\n\r\n",
            "GET /foo bar/ HTTP/1.1\r\nHost: a\r\n\r\n",
            "GET / / HTTP/1.1\r\nHost: a\r\n\r\n",
        ],
        400,
    );
    assert_status(
        &["CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n"],
        501,
    );
}

#[test]
fn versions_and_methods() {
    assert_status(
        &[
            "GET / HTTP/2.0\r\nHost: a\r\n\r\n",
            "GET / HTTP/1.2\r\nHost: a\r\n\r\n",
            "GET / HTTP/5.6\r\nHost: a\r\n\r\n",
        ],
        505,
    );
    assert_status(
        &[
            "GET / HTTP/1.10\r\nHost: a\r\n\r\n",
            "GET / ICE/1.0\r\nHost: a\r\n\r\n",
            "GET /\r\n\r\n",
        ],
        400,
    );
    assert_status(
        &[
            "get / HTTP/1.1\r\nHost: a\r\n\r\n",
            "PROPFIND / HTTP/1.1\r\nHost: a\r\n\r\n",
            "M-SEARCH * HTTP/1.1\r\nHost: a\r\n\r\n",
        ],
        501,
    );
    for m in Method::ALL.into_iter().filter(|m| *m != Method::Connect) {
        let target = if m == Method::Options { "*" } else { "/" };
        let got = parse(&format!(
            "{} {target} HTTP/1.1\r\nHost: a\r\n\r\n",
            m.as_str()
        ));
        assert_eq!(got.unwrap().unwrap().0, m);
    }
}

#[test]
fn head_limits() {
    let input = "GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\n\r\n";
    let exact = Limits {
        max_head_bytes: input.len(),
        max_headers: 3,
        max_url_bytes: 1,
    };
    assert!(parse_with(input.as_bytes(), exact).unwrap().is_some());
    let small = Limits {
        max_head_bytes: input.len() - 1,
        ..exact
    };
    assert_eq!(
        parse_with(input.as_bytes(), small),
        Err(HttpError::HeadersTooLarge)
    );
    // Incomplete but already at the limit: no point waiting.
    assert_eq!(
        parse_with(&input.as_bytes()[..input.len() - 1], small),
        Err(HttpError::HeadersTooLarge)
    );
    assert_eq!(
        parse_with(&input.as_bytes()[..input.len() - 2], small),
        Ok(None)
    );
    let few = Limits {
        max_headers: 2,
        ..exact
    };
    assert_eq!(
        parse_with(input.as_bytes(), few),
        Err(HttpError::HeadersTooLarge)
    );
    let zero = Limits {
        max_headers: 0,
        ..exact
    };
    assert_eq!(
        parse_with(input.as_bytes(), zero),
        Err(HttpError::HeadersTooLarge)
    );
    assert!(parse_with(b"GET / HTTP/1.0\r\n\r\n", zero)
        .unwrap()
        .is_some());
}

#[test]
fn uri_limit() {
    let tight = Limits {
        max_url_bytes: 4,
        ..limits()
    };
    assert!(parse_with(b"GET /abc HTTP/1.1\r\nHost: a\r\n\r\n", tight)
        .unwrap()
        .is_some());
    assert_eq!(
        parse_with(b"GET /abcd HTTP/1.1\r\nHost: a\r\n\r\n", tight),
        Err(HttpError::UriTooLong)
    );
    // Without waiting for the rest of the head.
    assert_eq!(parse_with(b"GET /abcd", tight), Err(HttpError::UriTooLong));
    assert_eq!(parse_with(b"GET /abc", tight), Ok(None));
}

#[test]
fn connection_semantics() {
    let head = |input: &str| {
        let mut parser = HeadParser::new(limits());
        let h = parser.parse(input.as_bytes()).unwrap().unwrap();
        (h.keep_alive, h.upgrade, h.expect_continue)
    };
    assert_eq!(
        head("GET / HTTP/1.1\r\nHost: a\r\n\r\n"),
        (true, false, false)
    );
    assert_eq!(
        head("GET / HTTP/1.1\r\nHost: a\r\nConnection: Close\r\n\r\n"),
        (false, false, false)
    );
    assert_eq!(
        head("GET / HTTP/1.1\r\nHost: a\r\nConnection: a, CLOSE\r\n\r\n"),
        (false, false, false)
    );
    assert_eq!(head("GET / HTTP/1.0\r\n\r\n"), (false, false, false));
    assert_eq!(
        head("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"),
        (true, false, false)
    );
    assert_eq!(
        head("GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n"),
        (false, false, false)
    );
    assert_eq!(
        head("GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive,\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"),
        (true, true, false)
    );
    // Upgrade needs both the header and the Connection option.
    assert_eq!(
        head("GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n\r\n"),
        (true, false, false)
    );
    assert_eq!(
        head("GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\n\r\n"),
        (true, false, false)
    );
    assert_eq!(
        status("GET / HTTP/1.1\r\nHost: a\r\nConnection: a b\r\n\r\n"),
        400
    );
}

#[test]
fn expectations() {
    let expect = |version: &str, value: &str| {
        let input =
            format!("POST / {version}\r\nHost: a\r\nContent-Length: 1\r\nExpect: {value}\r\n\r\n");
        let mut parser = HeadParser::new(limits());
        parser
            .parse(input.as_bytes())
            .map(|h| h.unwrap().expect_continue)
    };
    assert_eq!(expect("HTTP/1.1", "100-continue"), Ok(true));
    assert_eq!(expect("HTTP/1.1", "100-Continue"), Ok(true));
    // Ignored on HTTP/1.0 (RFC 9110 §10.1.1).
    assert_eq!(expect("HTTP/1.0", "100-continue"), Ok(false));
    for other in ["foo", "", "100-continue, foo", "100-continue;x=1", "200-ok"] {
        assert_eq!(
            expect("HTTP/1.1", other),
            Err(HttpError::ExpectationFailed),
            "{other}"
        );
    }
    // Framing errors come first: the connection cannot continue anyway.
    assert_eq!(
        status("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: x\r\nExpect: foo\r\n\r\n"),
        400
    );
}

#[test]
fn slow_clients_cost_linear_time() {
    // A 16 KiB head fed one byte per call: each byte is scanned once (the
    // scanner resumes), so this finishes in microseconds per byte even in
    // debug builds; a rescan per call would be 2^27 byte visits.
    let mut input = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
    while input.len() < 16 * 1024 - 40 {
        input.extend_from_slice(b"X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
    }
    input.extend_from_slice(b"\r\n");
    let mut parser = HeadParser::new(Limits {
        max_headers: 1000,
        ..limits()
    });
    let start = std::time::Instant::now();
    for end in 1..input.len() {
        assert!(matches!(parser.parse(&input[..end]), Ok(None)));
    }
    assert_eq!(parser.parse(&input).unwrap().unwrap().head_len, input.len());
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
}
