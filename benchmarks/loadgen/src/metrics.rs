//! Counters and latency of a measured window, and the JSON line each step
//! prints (the format is fixed by README.md: the runner parses it).

use hdrhistogram::Histogram;

/// Latencies above an hour are recorded as an hour (and the exact maximum is
/// kept beside the histogram).
const MAX_TRACKABLE_US: u64 = 3_600_000_000;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Errors {
    /// Failed connection attempts (TCP, HTTP upgrade or protocol open), all run.
    pub connect: u64,
    /// Connections the server closed or reset during the step.
    pub closed: u64,
    /// Protocol violations seen during the step.
    pub protocol: u64,
    /// Open-loop sends skipped during the window because the connection's
    /// unsent bytes were over the cap.
    pub backlogged: u64,
}

pub struct Stats {
    /// Whether the measured window is open: only then are messages counted.
    pub measuring: bool,
    pub sent: u64,
    pub received: u64,
    pub errors: Errors,
    hist: Histogram<u64>,
    sum_ns: u128,
    max_ns: u64,
}

/// Latency of a window; the fields are null when it received nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Latency {
    pub count: u64,
    pub mean_us: Option<f64>,
    pub p50: Option<u64>,
    pub p90: Option<u64>,
    pub p99: Option<u64>,
    pub p999: Option<u64>,
    pub max: Option<u64>,
}

impl Default for Stats {
    fn default() -> Self {
        Self::new()
    }
}

impl Stats {
    pub fn new() -> Stats {
        Stats {
            measuring: false,
            sent: 0,
            received: 0,
            errors: Errors::default(),
            // Three significant digits: 0.1 % resolution at every magnitude.
            hist: Histogram::new_with_bounds(1, MAX_TRACKABLE_US, 3)
                .expect("valid histogram bounds"),
            sum_ns: 0,
            max_ns: 0,
        }
    }

    /// Counts one received load message sent at `sent_ns`, received at
    /// `now_ns` (both on the load generator's clock).
    #[inline]
    pub fn record(&mut self, sent_ns: u64, now_ns: u64) {
        if !self.measuring {
            return;
        }
        // A stamp from the future can only be a server's corruption; count
        // it as zero rather than wrap.
        let ns = now_ns.saturating_sub(sent_ns);
        self.received += 1;
        self.sum_ns += ns as u128;
        self.max_ns = self.max_ns.max(ns);
        self.hist.saturating_record(ns / 1000);
    }

    #[inline]
    pub fn count_sent(&mut self, n: u64) {
        if self.measuring {
            self.sent += n;
        }
    }

    #[inline]
    pub fn count_backlogged(&mut self) {
        if self.measuring {
            self.errors.backlogged += 1;
        }
    }

    /// Clears what a window measures; the step's error counts stay.
    pub fn reset_window(&mut self) {
        self.sent = 0;
        self.received = 0;
        self.hist.reset();
        self.sum_ns = 0;
        self.max_ns = 0;
        self.errors.backlogged = 0;
    }

    /// Clears the per-step error counts (connect failures are for the run).
    pub fn reset_step_errors(&mut self) {
        self.errors = Errors {
            connect: self.errors.connect,
            ..Errors::default()
        };
    }

    pub fn latency(&self) -> Latency {
        let count = self.hist.len();
        if count == 0 {
            return Latency::default();
        }
        let q = |q: f64| Some(self.hist.value_at_quantile(q));
        Latency {
            count,
            mean_us: Some(self.sum_ns as f64 / count as f64 / 1000.0),
            p50: q(0.5),
            p90: q(0.9),
            p99: q(0.99),
            p999: q(0.999),
            // Exact, not the histogram's bucket bound.
            max: Some(self.max_ns / 1000),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cpu {
    pub user_s: f64,
    pub sys_s: f64,
    pub cpu_util: f64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Server {
    pub pid: u32,
    pub cpu: Cpu,
    pub rss_kb: u64,
    pub rss_peak_kb: u64,
    pub threads: u64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Idle {
    pub rss_before_kb: u64,
    pub rss_after_kb: u64,
    pub bytes_per_connection: f64,
}

/// The HTTP mode's own figures (`"http"` in the JSON; null in WebSocket steps).
#[derive(Clone, Debug, PartialEq)]
pub struct HttpFigures {
    pub method: &'static str,
    /// The request path (`/user/<n>` for the varying one).
    pub path: String,
    /// Requests in flight per connection.
    pub pipeline: u32,
    /// Response body bytes received in the window.
    pub body_bytes: u64,
    /// Wrong answers over the whole run (warm-up included).
    pub bad: u64,
    /// The first thing that went wrong, in words.
    pub first_error: Option<String>,
}

/// The xhr-streaming transport's own figures of the window
/// (`"xhr_streaming"` in the JSON; null in the other protocols' steps).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XhrFigures {
    /// Streaming responses the server ended (at its response limit), each
    /// followed at once by the session's next xhr_streaming request.
    pub streams_ended: u64,
    /// Streams reopened on a new TCP connection (the response ended with
    /// its connection, or the server closed it between responses).
    pub stream_reconnects: u64,
    /// xhr_send requests answered.
    pub send_requests: u64,
    /// TCP connections opened for xhr_send (a server closes an idle
    /// keep-alive connection: Node's after 5 s).
    pub send_connects: u64,
    /// xhr_send requests sent again on a new connection because the server
    /// closed theirs before answering (an idle keep-alive connection closed
    /// as the request arrived).
    pub send_retries: u64,
}

/// `s` as a JSON string literal.
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// One step's result: one JSON object on one line of stdout.
pub struct Step<'a> {
    pub scenario: &'a str,
    pub protocol: &'a str,
    pub connections: usize,
    pub connected: usize,
    pub payload: usize,
    pub in_flight: Option<u32>,
    pub rate: Option<f64>,
    pub duration_s: f64,
    pub sent: u64,
    pub received: u64,
    pub latency: Latency,
    pub errors: Errors,
    pub loadgen: Cpu,
    pub server: Option<Server>,
    pub idle: Option<Idle>,
    pub http: Option<HttpFigures>,
    pub xhr: Option<XhrFigures>,
}

fn num(v: f64) -> String {
    if v.is_finite() {
        // Enough digits for every quantity reported; no exponent notation.
        let s = format!("{v:.3}");
        let s = s.trim_end_matches('0');
        s.trim_end_matches('.').to_string()
    } else {
        "null".to_string()
    }
}

fn opt<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map_or_else(|| "null".to_string(), f)
}

fn cpu_json(c: &Cpu) -> String {
    format!(
        "\"user_s\": {}, \"sys_s\": {}, \"cpu_util\": {}",
        num(c.user_s),
        num(c.sys_s),
        num(c.cpu_util)
    )
}

impl Step<'_> {
    pub fn to_json(&self) -> String {
        let per_s = |n: u64| {
            if self.duration_s > 0.0 {
                num(n as f64 / self.duration_s)
            } else {
                "null".into()
            }
        };
        let l = &self.latency;
        let u = |v: Option<u64>| opt(v, |v| v.to_string());
        let latency = format!(
            "{{\"count\": {}, \"mean\": {}, \"p50\": {}, \"p90\": {}, \"p99\": {}, \"p999\": {}, \"max\": {}}}",
            l.count,
            opt(l.mean_us, |m| num((m * 10.0).round() / 10.0)),
            u(l.p50),
            u(l.p90),
            u(l.p99),
            u(l.p999),
            u(l.max)
        );
        let e = &self.errors;
        let server = opt(self.server.as_ref(), |s| {
            format!(
                "{{\"pid\": {}, {}, \"rss_kb\": {}, \"rss_peak_kb\": {}, \"threads\": {}}}",
                s.pid,
                cpu_json(&s.cpu),
                s.rss_kb,
                s.rss_peak_kb,
                s.threads
            )
        });
        let idle = opt(self.idle.as_ref(), |i| {
            format!(
                "{{\"rss_before_kb\": {}, \"rss_after_kb\": {}, \"bytes_per_connection\": {}}}",
                i.rss_before_kb,
                i.rss_after_kb,
                num(i.bytes_per_connection.round())
            )
        });
        let http = opt(self.http.as_ref(), |h| {
            format!(
                "{{\"method\": \"{}\", \"path\": {}, \"pipeline\": {}, \"body_bytes\": {}, \
                 \"body_bytes_per_s\": {}, \"bad\": {}, \"first_error\": {}}}",
                h.method,
                json_string(&h.path),
                h.pipeline,
                h.body_bytes,
                per_s(h.body_bytes),
                h.bad,
                opt(h.first_error.as_deref(), json_string)
            )
        });
        let xhr = opt(self.xhr.as_ref(), |x| {
            let per_send = if x.send_requests > 0 {
                num(self.sent as f64 / x.send_requests as f64)
            } else {
                "null".into()
            };
            format!(
                "{{\"streams_ended\": {}, \"stream_reconnects\": {}, \"send_requests\": {}, \
                 \"messages_per_send\": {per_send}, \"send_connects\": {}, \"send_retries\": {}}}",
                x.streams_ended,
                x.stream_reconnects,
                x.send_requests,
                x.send_connects,
                x.send_retries
            )
        });
        format!(
            "{{\"type\": \"step\", \"scenario\": \"{}\", \"protocol\": \"{}\", \"connections\": {}, \
             \"connected\": {}, \"payload\": {}, \"in_flight\": {}, \"rate\": {}, \"duration_s\": {}, \
             \"sent\": {}, \"received\": {}, \"sent_per_s\": {}, \"received_per_s\": {}, \
             \"latency_us\": {latency}, \"errors\": {{\"connect\": {}, \"closed\": {}, \"protocol\": {}, \
             \"backlogged\": {}}}, \"loadgen\": {{{}}}, \"server\": {server}, \"idle\": {idle}, \"http\": {http}, \
             \"xhr_streaming\": {xhr}}}",
            self.scenario,
            self.protocol,
            self.connections,
            self.connected,
            self.payload,
            opt(self.in_flight, |k| k.to_string()),
            opt(self.rate, num),
            num(self.duration_s),
            self.sent,
            self.received,
            per_s(self.sent),
            per_s(self.received),
            e.connect,
            e.closed,
            e.protocol,
            e.backlogged,
            cpu_json(&self.loadgen),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_only_counts_while_measuring() {
        let mut s = Stats::new();
        s.record(0, 5_000);
        s.count_sent(1);
        s.count_backlogged();
        assert_eq!((s.received, s.sent, s.errors.backlogged), (0, 0, 0));
        s.measuring = true;
        for us in [1u64, 2, 3, 4, 1000] {
            s.record(10_000, 10_000 + us * 1000 + 400);
        }
        s.record(5_000, 1_000); // from the future: zero
        let l = s.latency();
        assert_eq!(l.count, 6);
        assert_eq!(s.received, 6);
        assert_eq!(l.max, Some(1000));
        assert_eq!(l.p50, Some(2));
        assert!((l.mean_us.unwrap() - 1012.0 / 6.0).abs() < 1e-9);
        s.reset_window();
        assert_eq!(s.latency().count, 0);
        assert_eq!(s.latency().mean_us, None);
    }

    #[test]
    fn json_line() {
        let step = Step {
            scenario: "room",
            protocol: "ws",
            connections: 10,
            connected: 9,
            payload: 32,
            in_flight: None,
            rate: Some(2000.0),
            duration_s: 2.0,
            sent: 4000,
            received: 36000,
            latency: Latency::default(),
            errors: Errors {
                connect: 1,
                closed: 1,
                protocol: 0,
                backlogged: 3,
            },
            loadgen: Cpu {
                user_s: 0.5,
                sys_s: 0.25,
                cpu_util: 0.375,
            },
            server: None,
            idle: None,
            http: None,
            xhr: None,
        };
        let j = step.to_json();
        assert!(!j.contains('\n'));
        for part in [
            "\"type\": \"step\"",
            "\"in_flight\": null",
            "\"rate\": 2000,",
            "\"sent_per_s\": 2000,",
            "\"received_per_s\": 18000,",
            "\"mean\": null",
            "\"backlogged\": 3}",
            "\"loadgen\": {\"user_s\": 0.5, \"sys_s\": 0.25, \"cpu_util\": 0.375}",
            "\"server\": null, \"idle\": null, \"http\": null, \"xhr_streaming\": null}",
        ] {
            assert!(j.contains(part), "{part} in {j}");
        }
        let with_xhr = Step {
            xhr: Some(XhrFigures {
                streams_ended: 3,
                stream_reconnects: 1,
                send_requests: 1000,
                send_connects: 2,
                send_retries: 0,
            }),
            ..step
        };
        assert!(with_xhr.to_json().ends_with(
            "\"xhr_streaming\": {\"streams_ended\": 3, \"stream_reconnects\": 1, \"send_requests\": 1000, \
             \"messages_per_send\": 4, \"send_connects\": 2, \"send_retries\": 0}}"
        ));
    }
}
