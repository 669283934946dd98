//! Static files served by the session (`files.rs`, `sending.rs`) with no
//! socket: answered natively in order with the core's other answers,
//! streamed with a bounded queue, behind pending JavaScript responses,
//! and the endings (a client that stops reading, a file that shrinks).
//! `Files` makes the directories the other file tests use too.

use std::time::Duration;

use super::tests::{answer, http, GET_USER};
use crate::config::{FileCacheConfig, ServerConfig};
use crate::session::tests::Harness;

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
