//! The server's counters in Prometheus's text exposition format (version
//! 0.0.4), as the metrics endpoint serves them. Pure: a snapshot in, text
//! out; the I/O thread that answers the request renders it, so a scrape
//! needs no worker and still answers when every worker is busy or stuck.

use std::fmt::Write;

use super::metrics::{RouteSnapshot, BUCKETS_US};
use crate::stats::StatsSnapshot;

/// The `Content-Type` of the format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Every metric of the server, in the order the docs list them.
pub fn render(stats: &StatsSnapshot, routes: &[RouteSnapshot]) -> String {
    let mut out = String::with_capacity(4096 + routes.len() * 2048);
    let scalars: [(&str, &str, &str, u64); 14] = [
        ("connections_open", "gauge", "Connections open (WebSocket, protocol and HTTP).", stats.connections_open),
        ("connections_total", "counter", "Connections opened since the server started.", stats.connections_total),
        ("handshakes_rejected_total", "counter", "Upgrades and requests refused before a connection opened (bad request, origin, capacity, upgrade hook).", stats.handshakes_rejected),
        ("messages_in_total", "counter", "WebSocket and protocol messages received.", stats.messages_in),
        ("bytes_in_total", "counter", "Bytes read from the sockets of sessions (WebSocket framing and HTTP requests included).", stats.bytes_in),
        ("messages_out_total", "counter", "Messages queued for delivery, one per recipient.", stats.messages_out),
        ("bytes_out_total", "counter", "Bytes written to sockets, framing included.", stats.bytes_out),
        ("messages_dropped_total", "counter", "Messages refused by a full queue (slow-consumer policy).", stats.messages_dropped),
        ("protocol_errors_total", "counter", "Connections closed for breaking their protocol.", stats.protocol_errors),
        ("outbound_buffered_bytes", "gauge", "Bytes queued for writing over all connections.", stats.outbound_buffered_bytes),
        ("channels", "gauge", "Channels with at least one subscriber.", stats.channels),
        ("subscriptions", "gauge", "Subscriptions over all channels.", stats.subscriptions),
        ("http_requests_received_total", "counter", "HTTP requests read (answered natively or handed to a worker).", stats.http_requests),
        ("broker_publishes_lost_total", "counter", "Publishes the broker accepted and lost because Redis failed while they were sent.", stats.broker_publishes_lost),
    ];
    // The nodes sharing a broker (docs/scale-out.md, "Nodes").
    let nodes = [
        (
            "broker_nodes",
            "gauge",
            "Live nodes sharing the broker, this one included (0 without a broker).",
            stats.broker_nodes_live,
        ),
        (
            "broker_node_messages_invalid_total",
            "counter",
            "Node messages from the broker that were malformed and ignored.",
            stats.broker_node_messages_invalid,
        ),
    ];
    for (name, kind, help, value) in scalars.into_iter().chain(nodes) {
        header(&mut out, name, kind, help);
        let _ = writeln!(out, "switchboard_{name} {value}");
    }
    type WorkerValue = fn(&crate::stats::WorkerSnapshot) -> u64;
    let per_worker: [(&str, &str, &str, WorkerValue); 3] = [
        (
            "worker_connections_open",
            "gauge",
            "Connections pinned to each worker.",
            |w| w.connections_open,
        ),
        (
            "worker_messages_in_total",
            "counter",
            "Messages handed to each worker.",
            |w| w.messages_in,
        ),
        (
            "worker_queued_event_bytes",
            "gauge",
            "Bytes of events waiting for each worker to take them: its queue depth.",
            |w| w.queued_event_bytes,
        ),
    ];
    for (name, kind, help, value) in per_worker {
        header(&mut out, name, kind, help);
        for (i, worker) in stats.workers.iter().enumerate() {
            let _ = writeln!(
                out,
                "switchboard_{name}{{worker=\"{i}\"}} {}",
                value(worker)
            );
        }
    }
    header(
        &mut out,
        "http_requests_total",
        "counter",
        "HTTP responses that ended, by route pattern (or why there was none) and status code.",
    );
    for route in routes {
        let label = escape(&route.route);
        for (code, n) in &route.statuses {
            let _ = writeln!(
                out,
                "switchboard_http_requests_total{{route=\"{label}\",code=\"{code}\"}} {n}"
            );
        }
    }
    header(
        &mut out,
        "http_request_duration_seconds",
        "histogram",
        "Time from a request's head being read to its response's end, by route.",
    );
    for route in routes {
        let label = escape(&route.route);
        let mut cumulative = 0;
        for (i, n) in route.buckets.iter().enumerate() {
            cumulative += n;
            let le = match BUCKETS_US.get(i) {
                Some(us) => seconds(*us),
                None => "+Inf".to_owned(),
            };
            let _ = writeln!(
                out,
                "switchboard_http_request_duration_seconds_bucket{{route=\"{label}\",le=\"{le}\"}} {cumulative}"
            );
        }
        let _ = writeln!(
            out,
            "switchboard_http_request_duration_seconds_sum{{route=\"{label}\"}} {}",
            seconds(route.sum_us)
        );
        let _ = writeln!(
            out,
            "switchboard_http_request_duration_seconds_count{{route=\"{label}\"}} {}",
            route.count
        );
    }
    out
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    // Help texts are ours: no backslash or newline to escape.
    let _ = writeln!(out, "# HELP switchboard_{name} {help}");
    let _ = writeln!(out, "# TYPE switchboard_{name} {kind}");
}

/// Microseconds as seconds, exactly (`0.00025`, `2.5`, `10`).
fn seconds(us: u64) -> String {
    let (whole, fraction) = (us / 1_000_000, us % 1_000_000);
    if fraction == 0 {
        return whole.to_string();
    }
    let digits = format!("{fraction:06}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// A label value as the format requires: `\`, `"` and newline escaped.
fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::WorkerSnapshot;

    #[test]
    fn seconds_are_exact() {
        assert_eq!(seconds(0), "0");
        assert_eq!(seconds(100), "0.0001");
        assert_eq!(seconds(250), "0.00025");
        assert_eq!(seconds(2_500_000), "2.5");
        assert_eq!(seconds(10_000_000), "10");
        assert_eq!(seconds(1_234_567), "1.234567");
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape(r#"/a"b\c"#), r#"/a\"b\\c"#);
        assert_eq!(escape("a\nb"), "a\\nb");
    }

    #[test]
    fn renders_counters_workers_and_a_cumulative_histogram() {
        let stats = StatsSnapshot {
            connections_open: 3,
            messages_in: 7,
            workers: vec![WorkerSnapshot {
                connections_open: 3,
                messages_in: 7,
                queued_event_bytes: 12,
            }],
            ..StatsSnapshot::default()
        };
        let mut buckets = vec![0; BUCKETS_US.len() + 1];
        buckets[0] = 2;
        buckets[3] = 1;
        buckets[16] = 1;
        let routes = [RouteSnapshot {
            route: "/user/:id".to_owned(),
            statuses: vec![("200".to_owned(), 3), ("4xx".to_owned(), 1)],
            buckets,
            sum_us: 11_000_150,
            count: 4,
        }];
        let text = render(&stats, &routes);
        assert!(text.contains(
            "# TYPE switchboard_connections_open gauge\nswitchboard_connections_open 3\n"
        ));
        assert!(text.contains("switchboard_messages_in_total 7\n"));
        assert!(text.contains("switchboard_worker_queued_event_bytes{worker=\"0\"} 12\n"));
        assert!(
            text.contains("switchboard_http_requests_total{route=\"/user/:id\",code=\"200\"} 3\n")
        );
        assert!(
            text.contains("switchboard_http_requests_total{route=\"/user/:id\",code=\"4xx\"} 1\n")
        );
        assert!(text.contains("_bucket{route=\"/user/:id\",le=\"0.0001\"} 2\n"));
        assert!(text.contains("_bucket{route=\"/user/:id\",le=\"0.001\"} 3\n"));
        assert!(text.contains("_bucket{route=\"/user/:id\",le=\"10\"} 3\n"));
        assert!(text.contains("_bucket{route=\"/user/:id\",le=\"+Inf\"} 4\n"));
        assert!(text.contains("_sum{route=\"/user/:id\"} 11.00015\n"));
        assert!(text.contains("_count{route=\"/user/:id\"} 4\n"));
        // Every sample line belongs to a declared family.
        let mut declared = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                declared.push(rest.split(' ').next().unwrap().to_owned());
            } else if !line.starts_with('#') {
                let name = line.split(['{', ' ']).next().unwrap();
                assert!(
                    declared.iter().any(|d| name == d
                        || name
                            .strip_prefix(d.as_str())
                            .is_some_and(|s| { ["_bucket", "_sum", "_count"].contains(&s) })),
                    "{line}"
                );
            }
        }
    }
}
