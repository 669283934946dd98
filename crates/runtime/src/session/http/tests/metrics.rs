//! Responses counted by route and status (`http/metrics.rs`): JavaScript's
//! by the worker's `respond`, the core's own by the session as it queues
//! them, a held one only once its turn came.

use super::*;
use crate::http::metrics::RouteSnapshot;

/// Counting is on only when the counts are served.
fn counted(config: &mut ServerConfig) {
    config.metrics_path = Some("/metrics".to_owned());
}

fn route<'a>(snapshot: &'a [RouteSnapshot], label: &str) -> &'a RouteSnapshot {
    snapshot
        .iter()
        .find(|r| r.route == label)
        .unwrap_or_else(|| panic!("no {label} in {snapshot:?}"))
}

#[test]
fn each_response_counts_in_its_route_s_row_once_it_is_queued() {
    let mut h = http(&[("GET", "/users/:id"), ("POST", "/users/:id")], counted);
    // JavaScript's request, then a 404 and a 405 pipelined behind it.
    let mut bytes = GET_USER.to_vec();
    bytes.extend_from_slice(b"GET /missing HTTP/1.1\r\nHost: a\r\n\r\n");
    bytes.extend_from_slice(b"DELETE /users/1 HTTP/1.1\r\nHost: a\r\n\r\n");
    h.feed(&bytes, 1);
    h.turn(1);
    assert!(
        h.server.http_metrics.snapshot().is_empty(),
        "the 404 waits, uncounted, behind the first response"
    );
    answer(&h, "user 42", true);
    h.turn(2);
    h.turn(3);
    let snapshot = h.server.http_metrics.snapshot();
    let users = route(&snapshot, "/users/:id");
    assert_eq!(users.statuses, [("200".to_owned(), 1)]);
    assert_eq!(users.count, 1);
    let missing = route(&snapshot, "(not-found)");
    assert_eq!(missing.statuses, [("404".to_owned(), 1)]);
    assert_eq!(missing.buckets.iter().sum::<u64>(), 1);
    let method = route(&snapshot, "(method-not-allowed)");
    assert_eq!(method.statuses, [("405".to_owned(), 1)]);
    assert_eq!(snapshot.len(), 3);
}

#[test]
fn without_the_metrics_option_nothing_is_counted_or_carried() {
    let mut h = http(&[("GET", "/users/:id")], |_| {});
    h.feed(GET_USER, 1);
    // No REQUEST_COUNTED flag (32): flags 1 is keep-alive alone.
    assert_eq!(
        h.events(),
        ["http-open", "request 0 /users/42?x=1 [\"42\"] flags 1"]
    );
    answer(&h, "user 42", true);
    h.feed(b"GET /missing HTTP/1.1\r\nHost: a\r\n\r\n", 2);
    h.turn(2);
    assert!(h.server.http_metrics.snapshot().is_empty());
}

#[test]
fn a_malformed_request_and_a_slow_head_count_as_bad_requests() {
    let mut h = http(&[("GET", "/users/:id")], counted);
    h.feed(b"GET / HTTP/1.1\r\nHost: a\r\nBad Name: x\r\n\r\n", 1);
    h.turn(1);
    let snapshot = h.server.http_metrics.snapshot();
    assert_eq!(
        route(&snapshot, "(bad-request)").statuses,
        [("400".to_owned(), 1)]
    );

    let mut h = http(&[("GET", "/users/:id")], |c| {
        counted(c);
        c.http.header_timeout = Duration::from_millis(100);
    });
    h.feed(b"GET /users/1 HTTP/1.1\r\n", 1);
    h.session.on_deadline(h.at(101));
    h.turn(101);
    let snapshot = h.server.http_metrics.snapshot();
    let slow = route(&snapshot, "(bad-request)");
    assert_eq!(slow.statuses, [("408".to_owned(), 1)]);
    // From the head's first byte to the answer.
    assert!(slow.sum_us >= 100_000, "{slow:?}");
}
