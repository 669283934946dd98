//! A handler's file (`res.file`) with no socket: the order is queued the
//! way the worker queues it (`Server::http_file`), the I/O thread answers
//! it in its turn, and the worker hears how it went.

use std::path::PathBuf;

use super::files_tests::{pattern, Files};
use super::tests::{answer, http, GET_USER};
use crate::http::file_order::{FILE_GET, FILE_KEEP_ALIVE};
use crate::http::FileOrder;

fn order(path: &str, root: Option<&PathBuf>, headers: &[u8], request: &[u8]) -> Box<FileOrder> {
    Box::new(FileOrder {
        status: 200,
        headers: headers.to_vec(),
        path: path.as_bytes().to_vec(),
        root: root.cloned(),
        request_headers: request.to_vec(),
        flags: FILE_KEEP_ALIVE | FILE_GET,
        max_age: 0,
        started: 0,
    })
}

#[test]
fn a_handlers_file_goes_out_in_its_turn_with_its_headers_and_ends_its_response() {
    let files = Files::new("order-small-js", &[("a.txt", b"hello")]);
    let mut h = http(&[("GET", "/users/:id")], |_| {});
    // A request for JavaScript, then one the core answers itself (404).
    let mut bytes = GET_USER.to_vec();
    bytes.extend_from_slice(b"GET /missing HTTP/1.1\r\nHost: a\r\n\r\n");
    h.feed(&bytes, 1);
    h.turn(1);
    assert!(h.wire.is_empty(), "the 404 waits for the first response");
    h.events();
    let headers = b"Content-Disposition: attachment\r\nCache-Control: private\r\n";
    let outbound = &h.session.connection().outbound;
    outbound.order_file(order("a.txt", Some(&files.0), headers, b"Host: a\r\n"));
    h.turn(2);
    let responses = h.responses();
    assert_eq!(responses.len(), 2, "{responses:?}");
    assert_eq!(responses[0], "HTTP/1.1 200 OK | hello");
    assert!(
        responses[1].starts_with("HTTP/1.1 404 Not Found"),
        "then ours"
    );
    let wire = String::from_utf8_lossy(&h.wire).into_owned();
    assert!(wire.contains("Content-Disposition: attachment\r\n"));
    assert!(wire.contains("Cache-Control: private\r\n"));
    assert!(
        !wire.contains("no-cache"),
        "the handler's Cache-Control only"
    );
    assert!(wire.contains("Content-Type: text/plain; charset=utf-8\r\n"));
    assert_eq!(
        h.events(),
        ["HttpFileDone { id: 7, status: 200, sent: true }"]
    );
}

#[test]
fn a_missing_file_sends_nothing_and_gives_the_response_back() {
    let files = Files::new("order-missing", &[("a.txt", b"hello")]);
    let mut h = http(&[("GET", "/users/:id")], |_| {});
    h.feed(GET_USER, 1);
    h.events();
    let outbound = &h.session.connection().outbound;
    outbound.order_file(order("gone.txt", Some(&files.0), b"", b""));
    h.turn(2);
    assert!(h.wire.is_empty());
    assert_eq!(
        h.events(),
        ["HttpFileDone { id: 7, status: 404, sent: false }"]
    );
    // The handler answers after all: its response is still the first.
    answer(&h, "no such file", true);
    h.turn(3);
    assert_eq!(h.responses(), ["HTTP/1.1 200 OK | no such file"]);
    // The next request's handler tries to leave the root.
    h.feed(GET_USER, 4);
    h.events();
    let outbound = &h.session.connection().outbound;
    outbound.order_file(order("../a.txt", Some(&files.0), b"", b""));
    h.turn(5);
    assert_eq!(
        h.events(),
        ["HttpFileDone { id: 7, status: 404, sent: false }"],
        "a path out of the root is not looked up"
    );
}

#[test]
fn conditions_and_ranges_come_from_the_request_lines() {
    let files = Files::new("order-range", &[("d.txt", b"0123456789")]);
    let mut h = http(&[("GET", "/users/:id")], |_| {});
    h.feed(GET_USER, 1);
    h.events();
    let request = b"Host: a\r\nRange: bytes=2-4\r\n";
    let outbound = &h.session.connection().outbound;
    outbound.order_file(order("d.txt", Some(&files.0), b"", request));
    h.turn(2);
    assert_eq!(h.responses(), ["HTTP/1.1 206 Partial Content | 234"]);
    assert_eq!(
        h.events(),
        ["HttpFileDone { id: 7, status: 206, sent: true }"]
    );
}

#[test]
fn a_large_handlers_file_streams_ahead_of_a_static_file_that_waits_for_it() {
    let body = pattern(700_000);
    let files = Files::new(
        "order-large",
        &[("big.bin", &body), ("after.txt", b"static after")],
    );
    let mut h = http(&[("GET", "/users/:id")], |c| files.serve(c));
    let mut bytes = GET_USER.to_vec();
    bytes.extend_from_slice(b"GET /static/after.txt HTTP/1.1\r\nHost: a\r\n\r\n");
    h.feed(&bytes, 1);
    h.turn(1);
    h.events();
    let outbound = &h.session.connection().outbound;
    outbound.order_file(order("big.bin", Some(&files.0), b"", b""));
    let mut most_queued = 0;
    for turn in 0.. {
        assert!(turn < 1000, "the file never ended");
        h.set_room(100_000);
        let before = h.wire.len();
        h.turn(2);
        most_queued = most_queued.max(h.session.connection().outbound.buffered());
        if h.wire.len() == before {
            break;
        }
    }
    assert!(most_queued <= 320 * 1024, "bounded: {most_queued}");
    let responses = h.responses();
    assert_eq!(responses.len(), 2);
    assert!(responses[0].starts_with("HTTP/1.1 200 OK | !\"#"));
    assert_eq!(responses[1], "HTTP/1.1 200 OK | static after");
    let start = h.wire.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert_eq!(&h.wire[start..start + body.len()], &body[..], "intact");
    assert_eq!(
        h.events(),
        ["HttpFileDone { id: 7, status: 200, sent: true }"]
    );
    assert!(h.session.wants_read(), "reading resumed");
}
