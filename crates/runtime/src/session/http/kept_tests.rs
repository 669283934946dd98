//! Static files kept in memory (`http/file_cache.rs`) with no socket:
//! answered from memory until `revalidate` passed on the session's own
//! clock, then checked against the disk; ranges and a 304 from memory.

use std::time::Duration;

use super::files_tests::Files;
use super::tests::http;
use crate::config::FileCacheConfig;

const GET_A: &[u8] = b"GET /static/a.txt HTTP/1.1\r\nHost: a\r\n\r\n";

fn cache(revalidate_ms: u64) -> FileCacheConfig {
    FileCacheConfig {
        revalidate: Duration::from_millis(revalidate_ms),
        ..FileCacheConfig::default()
    }
}

#[test]
fn a_kept_file_is_answered_from_memory_until_it_is_due_for_a_check() {
    let files = Files::new("kept", &[("a.txt", b"hello")]);
    let mut h = http(&[], |c| files.serve_kept(c, cache(1000)));
    h.feed(GET_A, 1);
    h.turn(1);
    // Another length, so the disk's answer differs whatever the clock's
    // resolution for modification times.
    std::fs::write(files.0.join("a.txt"), b"hello, again").unwrap();
    h.feed(GET_A, 500);
    h.turn(500);
    h.feed(GET_A, 1002);
    h.turn(1002);
    h.feed(GET_A, 1003);
    h.turn(1003);
    assert_eq!(
        h.responses(),
        [
            "HTTP/1.1 200 OK | hello",
            "HTTP/1.1 200 OK | hello",
            "HTTP/1.1 200 OK | hello, again",
            "HTTP/1.1 200 OK | hello, again",
        ],
        "kept, kept before it is due, checked and read again, kept again"
    );
}

#[test]
fn a_kept_file_removed_from_the_disk_is_not_found_once_checked() {
    let files = Files::new("kept-removed", &[("a.txt", b"hello")]);
    let mut h = http(&[], |c| files.serve_kept(c, cache(0)));
    h.feed(GET_A, 1);
    h.turn(1);
    std::fs::remove_file(files.0.join("a.txt")).unwrap();
    h.feed(GET_A, 2);
    h.turn(2);
    let responses = h.responses();
    assert_eq!(responses[0], "HTTP/1.1 200 OK | hello");
    assert!(
        responses[1].starts_with("HTTP/1.1 404 Not Found"),
        "{responses:?}"
    );
}

#[test]
fn ranges_and_validators_of_a_kept_file_are_those_of_the_file() {
    let files = Files::new("kept-range", &[("d.txt", b"0123456789")]);
    let mut h = http(&[], |c| files.serve_kept(c, cache(60_000)));
    h.feed(b"GET /static/d.txt HTTP/1.1\r\nHost: a\r\n\r\n", 1);
    h.turn(1);
    let wire = String::from_utf8_lossy(&h.wire).into_owned();
    let etag = wire
        .lines()
        .find_map(|line| line.strip_prefix("ETag: "))
        .expect("an ETag")
        .to_owned();
    let requests = format!(
        "GET /static/d.txt HTTP/1.1\r\nHost: a\r\nRange: bytes=2-4\r\n\r\n\
         GET /static/d.txt HTTP/1.1\r\nHost: a\r\nIf-None-Match: {etag}\r\n\r\n\
         GET /static/d.txt HTTP/1.1\r\nHost: a\r\nRange: bytes=20-\r\n\r\n"
    );
    h.feed(requests.as_bytes(), 2);
    h.turn(2);
    let responses = h.responses();
    assert_eq!(responses[0], "HTTP/1.1 200 OK | 0123456789");
    assert_eq!(responses[1], "HTTP/1.1 206 Partial Content | 234");
    assert_eq!(responses[2], "HTTP/1.1 304 Not Modified | ");
    assert!(
        responses[3].starts_with("HTTP/1.1 416 Range Not Satisfiable"),
        "{responses:?}"
    );
    let wire = String::from_utf8_lossy(&h.wire).into_owned();
    assert!(wire.contains("Content-Range: bytes 2-4/10\r\n"));
    assert!(wire.contains("Content-Range: bytes */10\r\n"));
    assert_eq!(wire.matches(&format!("ETag: {etag}")).count(), 3);
}
