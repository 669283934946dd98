//! The one JSON line a run prints (README.md, "switchboard-rpcload"). Its
//! field names follow the Node driver's step (`benchmarks/rpc/driver.mjs`)
//! where they mean the same thing, so the RPC suite's report code reads
//! both: `ops`, `ops_per_s`, `latency_us`, `server`, `loadgen`, `errors`.

use crate::latency::Summary;

/// CPU of a process over the window.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Cpu {
    pub user_s: f64,
    pub sys_s: f64,
}

impl Cpu {
    pub fn total(&self) -> f64 {
        self.user_s + self.sys_s
    }
}

/// What went wrong, over the whole run (warm-up included).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Errors {
    /// Connections that could not be opened or whose handshake failed.
    pub connect: u64,
    /// Connections lost during the run (closed, reset, or given up after a
    /// protocol error).
    pub closed: u64,
    /// Bytes that broke the protocol (the connection was given up).
    pub protocol: u64,
    /// Answers that were not the right one (error replies, wrong payloads
    /// or codes): the call completed, but wrongly.
    pub bad: u64,
    /// The first of these, in words.
    pub first: Option<String>,
}

impl Errors {
    pub fn total(&self) -> u64 {
        self.connect + self.closed + self.protocol + self.bad
    }

    pub fn note(&mut self, what: impl FnOnce() -> String) {
        if self.first.is_none() {
            self.first = Some(what());
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Memory {
    pub rss_kb: u64,
    pub rss_peak_kb: u64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ServerFigures {
    pub pid: u32,
    pub cpu: Cpu,
    pub memory: Memory,
    pub threads: u64,
}

pub struct Step<'a> {
    pub protocol: &'a str,
    pub scenario: &'a str,
    pub connections: usize,
    pub connected: usize,
    pub in_flight: u32,
    pub payload: usize,
    pub duration_s: f64,
    pub ops: u64,
    pub latency: Summary,
    pub errors: &'a Errors,
    pub loadgen: Cpu,
    pub loadgen_memory: Memory,
    pub server: Option<ServerFigures>,
}

/// A number for JSON: at most `digits` decimals, no trailing zeros, no
/// exponent; null when not finite.
fn num(v: f64, digits: usize) -> String {
    if !v.is_finite() {
        return "null".into();
    }
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "null".into(), |v| num(v, 1))
}

/// A JSON string literal.
fn string(s: &str) -> String {
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

impl Step<'_> {
    pub fn to_json(&self) -> String {
        let secs = self.duration_s;
        let per_s = |v: f64| if secs > 0.0 { v / secs } else { f64::NAN };
        // CPU per call: what the figures cost, and how far each side is from
        // its own limit (one core = 1e9 ns per second).
        let per_call_ns = |cpu_s: f64| {
            if self.ops > 0 {
                num(cpu_s * 1e9 / self.ops as f64, 0)
            } else {
                "null".into()
            }
        };
        let l = &self.latency;
        let latency = format!(
            "{{\"count\": {}, \"mean\": {}, \"p50\": {}, \"p90\": {}, \"p99\": {}, \"p999\": {}, \"max\": {}}}",
            l.count,
            opt(l.mean),
            opt(l.p50),
            opt(l.p90),
            opt(l.p99),
            opt(l.p999),
            opt(l.max)
        );
        let e = self.errors;
        let errors = format!(
            "{{\"connect\": {}, \"closed\": {}, \"protocol\": {}, \"bad\": {}, \"first\": {}}}",
            e.connect,
            e.closed,
            e.protocol,
            e.bad,
            e.first.as_deref().map_or_else(|| "null".into(), string)
        );
        let cpu = |c: &Cpu| {
            format!(
                "\"user_s\": {}, \"sys_s\": {}, \"cpu_s\": {}, \"cpu_util\": {}, \"cpu_ns_per_call\": {}",
                num(c.user_s, 3),
                num(c.sys_s, 3),
                num(c.total(), 3),
                num(per_s(c.total()), 3),
                per_call_ns(c.total())
            )
        };
        let loadgen = format!(
            "{{{}, \"rss_kb\": {}, \"rss_peak_kb\": {}}}",
            cpu(&self.loadgen),
            self.loadgen_memory.rss_kb,
            self.loadgen_memory.rss_peak_kb
        );
        let server = self.server.as_ref().map_or_else(
            || "null".into(),
            |s| {
                format!(
                    "{{\"pid\": {}, {}, \"rss_kb\": {}, \"rss_peak_kb\": {}, \"threads\": {}}}",
                    s.pid,
                    cpu(&s.cpu),
                    s.memory.rss_kb,
                    s.memory.rss_peak_kb,
                    s.threads
                )
            },
        );
        format!(
            "{{\"type\": \"step\", \"client\": \"switchboard-rpcload\", \"peer\": \"{}\", \"scenario\": \"{}\", \
             \"config\": {{\"connections\": {}, \"in_flight\": {}, \"payload\": {}}}, \"connected\": {}, \
             \"duration_s\": {}, \"unit\": \"calls\", \"ops\": {}, \"ops_per_s\": {}, \
             \"latency_us\": {latency}, \"errors\": {errors}, \"loadgen\": {loadgen}, \"server\": {server}}}",
            self.protocol,
            self.scenario,
            self.connections,
            self.in_flight,
            self.payload,
            self.connected,
            num(secs, 3),
            self.ops,
            num(per_s(self.ops as f64), 1),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_line() {
        let errors = Errors {
            bad: 2,
            first: Some("a \"wrong\" body\n".into()),
            ..Errors::default()
        };
        let step = Step {
            protocol: "qrpc",
            scenario: "tiny-response",
            connections: 10,
            connected: 10,
            in_flight: 10,
            payload: 16,
            duration_s: 2.0,
            ops: 1_000_000,
            latency: Summary {
                count: 1_000_000,
                mean: Some(61.26),
                p50: Some(60.0),
                p90: Some(70.04),
                p99: Some(99.96),
                p999: Some(120.0),
                max: Some(900.5),
            },
            errors: &errors,
            loadgen: Cpu {
                user_s: 0.25,
                sys_s: 0.5,
            },
            loadgen_memory: Memory {
                rss_kb: 4000,
                rss_peak_kb: 4100,
            },
            server: Some(ServerFigures {
                pid: 7,
                cpu: Cpu {
                    user_s: 1.5,
                    sys_s: 0.5,
                },
                memory: Memory {
                    rss_kb: 80000,
                    rss_peak_kb: 90000,
                },
                threads: 7,
            }),
        };
        let j = step.to_json();
        assert!(!j.contains('\n'));
        for part in [
            "\"type\": \"step\"",
            "\"peer\": \"qrpc\"",
            "\"config\": {\"connections\": 10, \"in_flight\": 10, \"payload\": 16}",
            "\"ops\": 1000000, \"ops_per_s\": 500000,",
            "\"mean\": 61.3",
            "\"p90\": 70,",
            "\"p99\": 100,",
            "\"first\": \"a \\\"wrong\\\" body\\u000a\"",
            "\"loadgen\": {\"user_s\": 0.25, \"sys_s\": 0.5, \"cpu_s\": 0.75, \"cpu_util\": 0.375, \"cpu_ns_per_call\": 750,",
            "\"server\": {\"pid\": 7, \"user_s\": 1.5, \"sys_s\": 0.5, \"cpu_s\": 2, \"cpu_util\": 1, \"cpu_ns_per_call\": 2000,",
            "\"threads\": 7}}",
        ] {
            assert!(j.contains(part), "{part} in {j}");
        }
    }
}
