//! The HTTP session with no socket and no clock: requests in, records for
//! the worker and bytes on the wire out; JavaScript's responses are queued
//! the way a worker queues them (`http::respond`).

use std::time::Duration;

use crate::config::{FileCacheConfig, HttpRouteConfig, ServerConfig};
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

/// A directory of files for the static-file tests (removed when dropped).
pub(super) struct Files(pub(super) std::path::PathBuf);

impl Files {
    pub(super) fn new(name: &str, files: &[(&str, &[u8])]) -> Self {
        let dir =
            std::env::temp_dir().join(format!("switchboard-files-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (path, bytes) in files {
            let path = dir.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
        Self(std::fs::canonicalize(dir).unwrap())
    }

    /// Serve the files at `/static`, from the disk (the tests of reading
    /// and streaming); `kept_tests.rs` has those of files kept in memory.
    pub(super) fn serve(&self, config: &mut ServerConfig) {
        let mut dir = crate::config::StaticDirConfig::new("/static", &self.0);
        dir.cache = None;
        config.static_dirs.push(dir);
    }

    /// Serve the files at `/static`, kept in memory as `cache` says.
    pub(super) fn serve_kept(&self, config: &mut ServerConfig, cache: FileCacheConfig) {
        let mut dir = crate::config::StaticDirConfig::new("/static", &self.0);
        dir.cache = Some(cache);
        config.static_dirs.push(dir);
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `n` printable bytes that repeat every 89 (a prime: no piece boundary
/// lines up with it), so a piece out of place shows.
pub(super) fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| b'!' + (i % 89) as u8).collect()
}

impl Harness {
    /// Turns until nothing more goes out.
    pub(super) fn turns_until_quiet(&mut self, ms: u64) {
        loop {
            let before = self.wire.len();
            self.turn(ms);
            if self.wire.len() == before {
                return;
            }
        }
    }
}

#[test]
fn a_small_file_is_answered_natively_in_order_with_the_core_s_other_answers() {
    let files = Files::new(
        "small",
        &[("a.txt", b"hello"), ("docs/index.html", b"<p>docs")],
    );
    let mut h = http(&[], |c| files.serve(c));
    h.feed(
        b"GET /static/a.txt HTTP/1.1\r\nHost: a\r\n\r\n\
          GET /static/missing.txt HTTP/1.1\r\nHost: a\r\n\r\n\
          GET /static/docs?x=1 HTTP/1.1\r\nHost: a\r\n\r\n\
          GET /static/docs/ HTTP/1.1\r\nHost: a\r\n\r\n\
          GET /static/%2e%2e/x HTTP/1.1\r\nHost: a\r\n\r\n\
          GET /static/a%zz HTTP/1.1\r\nHost: a\r\n\r\n",
        1,
    );
    h.turn(1);
    let responses = h.responses();
    assert_eq!(responses.len(), 6, "{responses:?}");
    assert_eq!(responses[0], "HTTP/1.1 200 OK | hello");
    assert!(responses[1].starts_with("HTTP/1.1 404 Not Found | ERR_HTTP_NOT_FOUND"));
    assert_eq!(responses[2], "HTTP/1.1 301 Moved Permanently | ");
    assert_eq!(responses[3], "HTTP/1.1 200 OK | <p>docs");
    assert!(responses[4].starts_with("HTTP/1.1 404 Not Found"));
    assert!(responses[5].starts_with("HTTP/1.1 400 Bad Request | ERR_HTTP_BAD_REQUEST"));
    let wire = String::from_utf8_lossy(&h.wire).into_owned();
    for line in [
        "Content-Type: text/plain; charset=utf-8\r\n",
        "Accept-Ranges: bytes\r\n",
        "Cache-Control: no-cache\r\n",
        "ETag: \"5-",
        "Last-Modified: ",
        "Location: /static/docs/?x=1\r\n",
        "Content-Type: text/html; charset=utf-8\r\n",
    ] {
        assert!(wire.contains(line), "{line:?} in {wire}");
    }
    assert!(h.events().is_empty(), "the worker never heard of them");
    assert!(h.session.wants_read(), "the connection reads on");
}

#[test]
fn a_large_file_streams_with_a_bounded_amount_queued() {
    let body = pattern(1_000_000 + 17);
    let files = Files::new("large", &[("big.bin", &body), ("a.txt", b"after")]);
    let mut h = http(&[], |c| files.serve(c));
    // The file, and a request pipelined behind it.
    h.feed(
        b"GET /static/big.bin HTTP/1.1\r\nHost: a\r\n\r\nGET /static/a.txt HTTP/1.1\r\nHost: a\r\n\r\n",
        1,
    );
    assert!(
        !h.session.wants_read(),
        "nothing more is read while a file is sent"
    );
    let mut most_queued = 0;
    for turn in 0.. {
        assert!(turn < 1000, "the file never ended");
        // A client that takes 100 KB a turn.
        h.set_room(100_000);
        let before = h.wire.len();
        h.turn(2);
        most_queued = most_queued.max(h.session.connection().outbound.buffered());
        if h.wire.len() == before {
            break;
        }
        // The socket is full: the next turn comes with writability.
        assert!(!h.session.wants_another_turn());
    }
    assert!(
        most_queued <= 256 * 1024 + 64 * 1024,
        "at most a top-up and a piece queued, not the file: {most_queued}"
    );
    let responses = h.responses();
    assert_eq!(responses.len(), 2, "the file, then the request behind it");
    assert!(responses[0].starts_with("HTTP/1.1 200 OK | "));
    assert_eq!(responses[1], "HTTP/1.1 200 OK | after");
    let wire = &h.wire;
    let start = wire.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert_eq!(
        &wire[start..start + body.len()],
        &body[..],
        "the file, intact"
    );
    assert!(h.session.wants_read(), "reading resumed after the file");
}

#[test]
fn a_socket_that_takes_everything_asks_for_another_turn() {
    let body = pattern(600_000);
    let files = Files::new("turns", &[("big.bin", &body)]);
    let mut h = http(&[], |c| files.serve(c));
    h.feed(b"GET /static/big.bin HTTP/1.1\r\nHost: a\r\n\r\n", 1);
    h.turn(1);
    assert!(
        h.session.wants_another_turn(),
        "everything queued was written: no writability edge will come"
    );
    h.turns_until_quiet(2);
    assert!(!h.session.wants_another_turn(), "the file ended");
    let wire = &h.wire;
    let start = wire.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert_eq!(&wire[start..], &body[..]);
}

#[test]
fn files_wait_behind_a_pending_javascript_response() {
    let body = pattern(300_000);
    let files = Files::new("order", &[("big.bin", &body), ("a.txt", b"small")]);
    let mut h = http(&[("GET", "/users/:id")], |c| files.serve(c));
    let mut bytes = GET_USER.to_vec();
    bytes.extend_from_slice(b"GET /static/big.bin HTTP/1.1\r\nHost: a\r\n\r\n");
    bytes.extend_from_slice(b"GET /static/a.txt HTTP/1.1\r\nHost: a\r\n\r\n");
    h.feed(&bytes, 1);
    h.turn(1);
    assert!(
        h.wire.is_empty(),
        "no byte of the file before the first response"
    );
    assert!(
        !h.session.wants_another_turn(),
        "it waits for the response's end, not for the socket"
    );
    answer(&h, "user 42", true);
    h.turns_until_quiet(2);
    let responses = h.responses();
    assert_eq!(
        responses.len(),
        3,
        "{:?}",
        responses.iter().map(|r| &r[..30]).collect::<Vec<_>>()
    );
    assert_eq!(responses[0], "HTTP/1.1 200 OK | user 42");
    assert!(responses[1].starts_with("HTTP/1.1 200 OK | "));
    assert_eq!(responses[2], "HTTP/1.1 200 OK | small");
}

#[test]
fn a_small_file_waits_behind_a_pending_javascript_response() {
    let files = Files::new("order-small", &[("a.txt", b"small")]);
    let mut h = http(&[("GET", "/users/:id")], |c| files.serve(c));
    let mut bytes = GET_USER.to_vec();
    bytes.extend_from_slice(b"GET /static/a.txt HTTP/1.1\r\nHost: a\r\n\r\n");
    h.feed(&bytes, 1);
    h.turn(1);
    assert!(h.wire.is_empty());
    answer(&h, "user 42", true);
    h.turn(2);
    assert_eq!(
        h.responses(),
        ["HTTP/1.1 200 OK | user 42", "HTTP/1.1 200 OK | small"]
    );
}

#[test]
fn a_client_that_stops_reading_a_file_is_disconnected_after_the_body_timeout() {
    let files = Files::new("stall", &[("big.bin", &pattern(2_000_000))]);
    let mut h = http(&[], |c| {
        c.http.body_timeout = Duration::from_secs(30);
        files.serve(c);
    });
    h.feed(b"GET /static/big.bin HTTP/1.1\r\nHost: a\r\n\r\n", 0);
    h.set_room(50_000);
    h.turn(0);
    // It took some since the last top-up: progress, counted from now.
    h.set_room(0);
    h.turn(10_000);
    assert_eq!(h.session.next_deadline(), Some(h.at(40_000)));
    h.session.on_deadline(h.at(39_999));
    h.turn(39_999);
    assert!(!h.session.is_done());
    h.session.on_deadline(h.at(40_000));
    h.turn(40_000);
    // The rest of a piece on the wire waits the close timeout at most.
    let deadline = h.session.next_deadline().unwrap();
    assert!(deadline <= h.at(45_000), "{deadline:?}");
    assert_eq!(
        h.session.on_deadline(deadline),
        crate::session::Step::End,
        "disconnected"
    );
}

#[test]
fn a_file_that_shrinks_while_it_is_sent_ends_the_connection() {
    let files = Files::new("shrink", &[("big.bin", &pattern(2_000_000))]);
    let mut h = http(&[], |c| files.serve(c));
    h.feed(b"GET /static/big.bin HTTP/1.1\r\nHost: a\r\n\r\n", 1);
    h.turn(1);
    let sent = h.wire.len();
    assert!((256 * 1024..2_000_000).contains(&sent), "{sent}");
    // Cut the file under the reader: its length is promised already.
    std::fs::File::options()
        .write(true)
        .open(files.0.join("big.bin"))
        .unwrap()
        .set_len(300_000)
        .unwrap();
    h.turns_until_quiet(2);
    assert!(h.session.is_done(), "closed: only that tells the client");
    assert!(
        h.wire.len() < 2_000_000,
        "a body short of its Content-Length"
    );
}

mod metrics;
