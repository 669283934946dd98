//! The HTTP session with no socket and no clock: requests in, records for
//! the worker and bytes on the wire out; JavaScript's responses are queued
//! the way a worker queues them (`http::respond`).

use std::time::Duration;

use crate::config::{HttpRouteConfig, ServerConfig};
use crate::connection::ConnectionKind;
use crate::http::respond::{self, ResponseParts, RESPOND_KEEP_ALIVE, RESPOND_ROUTE_SHIFT};
use crate::session::tests::{start, Harness};

pub(super) fn http(routes: &[(&str, &str)], tune: impl FnOnce(&mut ServerConfig)) -> Harness {
    let mut config = ServerConfig {
        workers: 1,
        http_routes: routes
            .iter()
            .map(|(method, pattern)| HttpRouteConfig {
                method: Some((*method).to_owned()),
                pattern: (*pattern).to_owned(),
                max_body_bytes: None,
            })
            .collect(),
        ..ServerConfig::default()
    };
    tune(&mut config);
    start(config, ConnectionKind::Http)
}

/// A worker's whole response, queued as `httpRespond` queues it.
pub(super) fn answer(h: &Harness, body: &str, keep_alive: bool) {
    let parts = ResponseParts {
        status: 200,
        headers: b"",
        body: body.as_bytes(),
        // Route 0 (plus one, as JavaScript sends it).
        flags: (if keep_alive { RESPOND_KEEP_ALIVE } else { 0 }) | 1 << RESPOND_ROUTE_SHIFT,
        length: 0,
        started: 0,
    };
    respond::respond(h.session.connection(), &parts, None, &h.server.http_metrics);
}

impl Harness {
    /// The I/O thread's turn after other threads queued, as the reactor
    /// takes it: what the ended responses let through, the queue, writes.
    pub(super) fn turn(&mut self, ms: u64) -> bool {
        let resumed = self.session.read_resumed(self.at(ms));
        self.outbound(ms);
        self.flush();
        resumed
    }

    /// The status lines and bodies written so far, in order.
    pub(super) fn responses(&self) -> Vec<String> {
        let text = String::from_utf8_lossy(&self.wire).into_owned();
        let mut out = Vec::new();
        let mut rest = text.as_str();
        while let Some(end) = rest.find("\r\n\r\n") {
            let head = &rest[..end];
            let status = head.lines().next().unwrap_or_default().to_owned();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("Content-Length: "))
                .map_or(0, |n| n.parse::<usize>().unwrap());
            let body = &rest[end + 4..end + 4 + length];
            out.push(format!("{status} | {body}"));
            rest = &rest[end + 4 + length..];
        }
        out
    }
}

pub(super) const GET_USER: &[u8] = b"GET /users/42?x=1 HTTP/1.1\r\nHost: a\r\n\r\n";

#[test]
fn a_request_for_a_route_reaches_the_worker_with_its_route_and_parameters() {
    let mut h = http(&[("GET", "/"), ("GET", "/users/:id")], |_| {});
    h.feed(GET_USER, 1);
    assert_eq!(
        h.events(),
        ["http-open", "request 1 /users/42?x=1 [\"42\"] flags 1"]
    );
    // The next request of the connection: no second HTTP_OPEN.
    h.feed(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", 2);
    assert_eq!(h.events(), ["request 0 /? [] flags 1"]);
}

#[test]
fn a_response_of_ours_waits_for_the_responses_before_it() {
    let mut h = http(&[("GET", "/users/:id")], |_| {});
    // A request for JavaScript, then one the core answers (404), pipelined.
    let mut bytes = GET_USER.to_vec();
    bytes.extend_from_slice(b"GET /missing HTTP/1.1\r\nHost: a\r\n\r\n");
    h.feed(&bytes, 1);
    h.turn(1);
    assert!(h.wire.is_empty(), "the 404 may not pass the first response");
    assert!(!h.session.wants_read(), "nothing more is read meanwhile");
    answer(&h, "user 42", true);
    assert!(h.turn(2), "reading resumes");
    let responses = h.responses();
    assert_eq!(responses.len(), 2, "{responses:?}");
    assert_eq!(responses[0], "HTTP/1.1 200 OK | user 42");
    assert!(responses[1].starts_with("HTTP/1.1 404 Not Found | ERR_HTTP_NOT_FOUND"));
}

#[test]
fn pipelined_requests_beyond_the_limit_wait_in_the_socket() {
    let mut h = http(&[("GET", "/users/:id")], |c| c.http.max_pipelined = 2);
    h.feed(&GET_USER.repeat(3), 1);
    let events = h.events();
    assert_eq!(events.len(), 3, "open and two requests: {events:?}");
    assert!(!h.session.wants_read());
    answer(&h, "one", true);
    // A response ended: the waiting request goes to the worker, which is
    // at the limit again, so the socket still waits.
    assert!(!h.turn(2));
    assert_eq!(h.events().len(), 1, "the third request went to the worker");
    assert_eq!(h.responses(), ["HTTP/1.1 200 OK | one"]);
    assert!(!h.session.wants_read());
    answer(&h, "two", true);
    assert!(h.turn(3), "below the limit: reading resumes");
    assert!(h.session.wants_read());
}

#[test]
fn a_response_that_does_not_keep_the_connection_alive_ends_it() {
    let mut h = http(&[("GET", "/users/:id")], |_| {});
    h.feed(
        b"GET /users/1 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
        1,
    );
    assert_eq!(h.events()[1], "request 0 /users/1? [\"1\"] flags 0");
    answer(&h, "bye", false);
    h.turn(2);
    assert_eq!(h.responses(), ["HTTP/1.1 200 OK | bye"]);
    assert!(
        String::from_utf8_lossy(&h.wire).contains("Connection: close\r\n"),
        "the head says so"
    );
    assert!(
        h.session.is_done(),
        "the connection ends once it is written"
    );
}

#[test]
fn an_idle_connection_closes_after_the_keep_alive_timeout() {
    let mut h = http(&[("GET", "/users/:id")], |c| {
        c.http.keep_alive_timeout = Duration::from_secs(5)
    });
    h.feed(GET_USER, 0);
    // A request in the handlers' hands: not idle, however long it takes.
    let deadline = h.session.next_deadline().unwrap();
    h.session.on_deadline(deadline);
    h.turn(5_000);
    assert!(!h.session.is_done());
    answer(&h, "late", true);
    h.turn(6_000);
    let deadline = h.session.next_deadline().unwrap();
    assert!(
        deadline <= h.at(11_000),
        "idle from the response's end at the latest"
    );
    h.session.on_deadline(h.at(11_000));
    h.turn(11_000);
    assert!(h.session.is_done(), "idle for the timeout: closed");
}

#[test]
fn a_request_head_that_does_not_complete_in_time_gets_408() {
    let mut h = http(&[("GET", "/")], |c| {
        c.http.header_timeout = Duration::from_secs(2)
    });
    h.feed(b"GET / HTTP/1.1\r\nHo", 100);
    assert_eq!(h.session.next_deadline(), Some(h.at(2_100)));
    h.session.on_deadline(h.at(2_100));
    h.turn(2_100);
    let responses = h.responses();
    assert!(responses[0].starts_with("HTTP/1.1 408 Request Timeout | ERR_HTTP_REQUEST_TIMEOUT"));
    assert!(h.session.is_done());
    assert!(h.events().is_empty(), "the worker never heard of it");
}

#[test]
fn a_malformed_body_fails_the_request_and_closes_after_its_response() {
    let mut h = http(&[("POST", "/upload")], |_| {});
    h.feed(
        b"POST /upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\nzz\r\n",
        1,
    );
    assert_eq!(
        h.events(),
        [
            "http-open",
            "request 0 /upload? [] flags 5",
            "body abc false",
            "body-error 400"
        ]
    );
    assert!(!h.session.wants_read());
    answer(&h, "bad body", true);
    h.turn(2);
    assert_eq!(h.responses(), ["HTTP/1.1 200 OK | bad body"]);
    assert!(h.session.is_done(), "closed after the response");
}

#[test]
fn a_malformed_request_is_refused_without_reaching_the_worker() {
    let mut h = http(&[("POST", "/upload")], |_| {});
    h.feed(
        b"POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
        1,
    );
    h.turn(1);
    assert!(h.responses()[0].starts_with("HTTP/1.1 400 Bad Request | ERR_HTTP_BAD_REQUEST"));
    assert!(h.session.is_done());
    assert!(h.events().is_empty());
}

#[test]
fn bodies_cross_in_pieces_as_they_arrive() {
    let mut h = http(&[("POST", "/upload")], |_| {});
    h.feed(
        b"POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n0123",
        1,
    );
    h.feed(b"456", 2);
    h.feed(b"789POST /upload HTTP/1.1\r\nHost: a\r\n", 3);
    assert_eq!(
        h.events(),
        [
            "http-open",
            "request 0 /upload? [] flags 5",
            "body 0123 false",
            "body 456 false",
            "body 789 true"
        ]
    );
    // The next head completes later; a POST without a body has none.
    h.feed(b"\r\n", 4);
    assert_eq!(h.events(), ["request 0 /upload? [] flags 1"]);
}

#[test]
fn a_body_goes_no_further_than_a_window_ahead_of_its_handler() {
    let mut h = http(&[("POST", "/upload")], |c| c.http.body_window = 8);
    h.feed(
        b"POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 20\r\n\r\n0123456789",
        1,
    );
    assert_eq!(
        h.events(),
        [
            "http-open",
            "request 0 /upload? [] flags 5",
            "body 0123456789 false"
        ]
    );
    assert!(
        !h.session.wants_read(),
        "ten bytes handed over, none consumed"
    );
    h.feed(b"abcdefghij", 2);
    assert!(h.events().is_empty(), "the rest waits");
    h.session.connection().outbound.body_consumed(4);
    // Six bytes ahead is below the window: what waited goes on.
    assert!(h.turn(3), "reading resumes");
    assert_eq!(h.events(), ["body abcdefghij true"]);
}

#[test]
fn a_body_its_handler_did_not_read_is_discarded() {
    let mut h = http(&[("POST", "/upload")], |c| c.http.body_window = 8);
    let mut bytes = b"POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 30\r\n\r\n".to_vec();
    bytes.extend_from_slice(&[b'x'; 10]);
    h.feed(&bytes, 1);
    let mut rest = vec![b'y'; 20];
    rest.extend_from_slice(b"POST /upload HTTP/1.1\r\nHost: a\r\n\r\n");
    h.feed(&rest, 1);
    assert_eq!(h.events().len(), 3, "open, request, the first piece");
    // The handler answers without reading: the rest is discarded.
    answer(&h, "no thanks", true);
    h.session.connection().outbound.discard_body(0);
    h.turn(2);
    assert_eq!(
        h.events(),
        ["request 0 /upload? [] flags 1"],
        "no more of the body reached the worker; the next request did"
    );
    assert_eq!(h.responses(), ["HTTP/1.1 200 OK | no thanks"]);
}

#[test]
fn a_body_that_fills_the_window_as_its_input_ends_is_woken_by_the_next_consumption() {
    // The window fills exactly with the last byte read: nothing waits in
    // the input, yet the next consumption must wake the connection, or it
    // would never read again.
    let mut h = http(&[("POST", "/upload")], |c| c.http.body_window = 8);
    h.feed(
        b"POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 20\r\n\r\n01234567",
        1,
    );
    assert!(!h.session.wants_read());
    let outbound = &h.session.connection().outbound;
    assert!(
        outbound.http_awaited(),
        "the next consumption wakes the I/O thread"
    );
    outbound.body_consumed(8);
    assert!(
        !outbound.http_awaited(),
        "it did: the wake-up spent the flag"
    );
    assert!(h.turn(2), "reading resumes");
    assert!(h.session.wants_read());
}

#[test]
fn an_expected_continue_behind_a_pending_response_goes_out_once_it_ended() {
    let mut h = http(&[("GET", "/users/:id"), ("POST", "/upload")], |_| {});
    let mut bytes = GET_USER.to_vec();
    bytes.extend_from_slice(
        b"POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n",
    );
    h.feed(&bytes, 1);
    h.turn(1);
    assert!(h.wire.is_empty(), "no 100 before the first response");
    answer(&h, "user 42", true);
    h.turn(2);
    let wire = String::from_utf8_lossy(&h.wire).into_owned();
    assert!(
        wire.ends_with("user 42HTTP/1.1 100 Continue\r\n\r\n"),
        "the 100 follows the response before it: {wire:?}"
    );
}

#[test]
fn a_request_that_asked_to_upgrade_is_the_last_one_read() {
    let mut h = http(&[("GET", "/users/:id")], |_| {});
    let mut bytes =
        b"GET /users/1 HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n".to_vec();
    bytes.extend_from_slice(GET_USER);
    h.feed(&bytes, 1);
    assert_eq!(
        h.events(),
        ["http-open", "request 0 /users/1? [\"1\"] flags 0"],
        "served as plain HTTP without keep-alive; what followed was not read"
    );
}

#[test]
fn the_coding_accept_encoding_prefers_crosses_with_the_request() {
    let mut h = http(&[("GET", "/users/:id")], |_| {});
    let mut bytes = Vec::new();
    for accept in [
        "gzip, deflate, br",
        "gzip",
        "br;q=0, gzip;q=0.5",
        "identity;q=0",
        "*",
    ] {
        bytes.extend_from_slice(
            format!("GET /users/1 HTTP/1.1\r\nHost: a\r\nAccept-Encoding: {accept}\r\n\r\n")
                .as_bytes(),
        );
    }
    h.feed(&bytes, 1);
    let flags: Vec<String> = h
        .events()
        .iter()
        .skip(1)
        .map(|e| e.rsplit(' ').next().unwrap().to_owned())
        .collect();
    // Keep-alive (1), plus br (16) or gzip (8).
    assert_eq!(flags, ["17", "9", "9", "1", "17"]);
}

#[test]
fn without_compression_no_coding_crosses() {
    let mut h = http(&[("GET", "/users/:id")], |c| c.http.compression = None);
    h.feed(
        b"GET /users/1 HTTP/1.1\r\nHost: a\r\nAccept-Encoding: gzip, br\r\n\r\n",
        1,
    );
    assert_eq!(
        h.events(),
        ["http-open", "request 0 /users/1? [\"1\"] flags 1"]
    );
}

#[test]
fn a_compressed_response_carries_its_coding_and_encoded_length() {
    use crate::config::CompressionConfig;
    use crate::http::respond::{RESPOND_BR, RESPOND_GZIP, RESPOND_HEAD};
    let mut h = http(&[("GET", "/users/:id")], |_| {});
    h.feed(GET_USER, 1);
    let body = "hello compression ".repeat(200);
    let respond_with = |h: &Harness, flags: u32| {
        let parts = ResponseParts {
            status: 200,
            headers: b"Content-Type: text/plain\r\nVary: Accept-Encoding\r\n",
            body: body.as_bytes(),
            flags: RESPOND_KEEP_ALIVE | flags,
            length: 0,
            started: 0,
        };
        let config = CompressionConfig::default();
        let metrics = &h.server.http_metrics;
        respond::respond(h.session.connection(), &parts, Some(&config), metrics);
    };
    respond_with(&h, RESPOND_GZIP);
    h.turn(2);
    let wire = std::mem::take(&mut h.wire);
    let end = wire.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = String::from_utf8_lossy(&wire[..end]).into_owned();
    assert!(
        head.contains("Vary: Accept-Encoding\r\nContent-Encoding: gzip\r\n"),
        "{head}"
    );
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        length,
        wire.len() - end,
        "Content-Length is the encoded body's"
    );
    assert!(length < body.len() / 10);
    let mut decoded = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(&wire[end..]),
        &mut decoded,
    )
    .unwrap();
    assert_eq!(decoded, body);

    // HEAD is never encoded, whatever the flags say.
    h.feed(GET_USER, 3);
    respond_with(&h, RESPOND_BR | RESPOND_HEAD);
    h.turn(4);
    let wire = String::from_utf8_lossy(&std::mem::take(&mut h.wire)).into_owned();
    assert!(!wire.contains("Content-Encoding"), "{wire}");
    assert!(
        wire.contains(&format!("Content-Length: {}\r\n", body.len())),
        "{wire}"
    );

    // Brotli, decoded back.
    h.feed(GET_USER, 5);
    respond_with(&h, RESPOND_BR);
    h.turn(6);
    let wire = std::mem::take(&mut h.wire);
    let end = wire.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = String::from_utf8_lossy(&wire[..end]).into_owned();
    assert!(head.contains("Content-Encoding: br\r\n"), "{head}");
    let mut decoded = String::new();
    std::io::Read::read_to_string(
        &mut brotli::Decompressor::new(&wire[end..], 4096),
        &mut decoded,
    )
    .unwrap();
    assert_eq!(decoded, body);
}

mod metrics;

/// The body records drained so far: (`"owned"` or `"inline"`, bytes, last).
fn body_pieces(h: &Harness) -> Vec<(&'static str, Vec<u8>, bool)> {
    use crate::events::Record;

    let drained = h.server.queues[0].drain();
    let mut pieces = Vec::new();
    let mut at = 0;
    while at < drained.events.len() {
        let (record, used) = Record::read(&drained.events[at..]).unwrap();
        match record {
            Record::HttpBodyOwned { last, index, .. } => {
                pieces.push(("owned", drained.owned[index as usize].clone(), last))
            }
            Record::HttpBody { last, data, .. } => pieces.push(("inline", data.to_vec(), last)),
            _ => {}
        }
        at += used;
    }
    pieces
}

fn post_head(length: usize) -> Vec<u8> {
    format!("POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: {length}\r\n\r\n").into_bytes()
}

#[test]
fn a_known_length_within_the_window_crosses_whole_in_one_buffer() {
    let mut h = http(&[("POST", "/upload")], |c| c.http.body_window = 64 * 1024);
    let body: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
    let mut first = post_head(body.len());
    first.extend_from_slice(&body[..10_000]);
    h.feed(&first, 1);
    h.feed(&body[10_000..30_000], 2);
    assert!(body_pieces(&h).is_empty(), "nothing crosses before the end");
    h.feed(&body[30_000..], 3);
    assert_eq!(body_pieces(&h), [("owned", body, true)]);
}

#[test]
fn longer_and_chunked_bodies_cross_as_read_large_pieces_in_their_own_buffers() {
    let big = super::body::OWNED_BODY_PIECE_BYTES;
    // Longer than the window: pieces as they are read.
    let mut h = http(&[("POST", "/upload")], |c| c.http.body_window = 4 * big);
    let mut bytes = post_head(8 * big);
    bytes.extend(std::iter::repeat_n(b'x', big));
    h.feed(&bytes, 1);
    h.feed(b"short", 2);
    assert_eq!(
        body_pieces(&h),
        [
            ("owned", vec![b'x'; big], false),
            ("inline", b"short".to_vec(), false)
        ]
    );

    // Chunked: the length is not known.
    let mut h = http(&[("POST", "/upload")], |_| {});
    let mut bytes =
        b"POST /upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    bytes.extend(format!("{big:x}\r\n").into_bytes());
    bytes.extend(std::iter::repeat_n(b'y', big));
    bytes.extend(b"\r\n3\r\nend\r\n0\r\n\r\n");
    h.feed(&bytes, 1);
    assert_eq!(
        body_pieces(&h),
        [
            ("owned", vec![b'y'; big], false),
            ("inline", b"end".to_vec(), false),
            ("inline", Vec::new(), true)
        ]
    );
}

#[test]
fn a_gathered_body_its_handler_discards_never_crosses() {
    let mut h = http(&[("POST", "/upload")], |_| {});
    let mut bytes = post_head(40_000);
    bytes.extend(std::iter::repeat_n(b'z', 20_000));
    h.feed(&bytes, 1);
    assert!(body_pieces(&h).is_empty());
    // The handler answers without reading: the rest is discarded.
    answer(&h, "no thanks", true);
    h.session.connection().outbound.discard_body(0);
    h.turn(2);
    h.feed(&[b'z'; 20_000], 3);
    assert!(body_pieces(&h).is_empty(), "none of the body crossed");
    assert_eq!(h.responses(), ["HTTP/1.1 200 OK | no thanks"]);
}
