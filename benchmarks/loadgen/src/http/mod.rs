//! The HTTP/1.1 mode (`--protocol http`): the closed-loop scenarios of
//! SCENARIOS.md's HTTP section over keep-alive connections, with or without
//! pipelining. Connect, warm up, measure, print one JSON step (the
//! WebSocket steps' format plus an `"http"` object), exit 0 only when every
//! response was right and no connection was lost.
//!
//! - `request.rs`: the requests of each scenario and the answers they must get;
//! - `response.rs`: the incremental response parser (pure, tested split at every byte);
//! - `engine.rs`: the epoll loop;
//! - `cli.rs`: the command line.

pub mod cli;
mod engine;
mod request;
pub(crate) mod response;

use crate::frame::XorShift;
use crate::metrics::{Cpu, HttpFigures, Server, Step};
use crate::procfs::{Proc, ProcSample};
use crate::sys;
use engine::Engine;
use request::{Kind, Workload};

struct Snapshot {
    at_ns: u64,
    own: (f64, f64),
    server: Option<ProcSample>,
}

fn snapshot(engine: &Engine, server: Option<&Proc>) -> Result<Snapshot, String> {
    Ok(Snapshot {
        at_ns: engine.now(),
        own: sys::self_cpu_seconds(),
        server: server.map(Proc::sample).transpose()?,
    })
}

fn cpu(user_s: f64, sys_s: f64, secs: f64) -> Cpu {
    let cpu_util = if secs > 0.0 {
        (user_s + sys_s) / secs
    } else {
        0.0
    };
    Cpu {
        user_s,
        sys_s,
        cpu_util,
    }
}

/// post's request body: random bytes (so no layer can compress or
/// special-case them), the same for every request.
fn random_body(size: usize) -> Vec<u8> {
    let mut rng = XorShift::new(0x5eed_f00d_b0d1);
    let mut body = Vec::with_capacity(size + 8);
    while body.len() < size {
        body.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    body.truncate(size);
    body
}

/// Runs the scenario; returns the JSON step and, when the run was not
/// clean (a wrong response, a lost connection, no response at all), why.
pub fn run(cfg: &cli::Config) -> Result<(String, Option<String>), String> {
    let server = cfg
        .server_pid
        .map(|pid| Proc::new(pid, sys::clock_ticks_per_second()));
    if let Some(s) = &server {
        if !s.alive() {
            return Err(format!("no server process with pid {}", s.pid));
        }
    }
    let file = match &cfg.body_file {
        Some(path) => std::fs::read(path).map_err(|e| format!("cannot read {path}: {e}"))?,
        None => Vec::new(),
    };
    let post_body = if cfg.kind == Kind::Post {
        random_body(cfg.body_size)
    } else {
        Vec::new()
    };
    let host = format!("{}:{}", cfg.host, cfg.port);
    let work = Workload::new(cfg.kind, &host, cfg.path.as_deref(), post_body, file);
    let (method, path) = (cfg.kind.method(), work.path.clone());
    let payload = work.expected(1, &mut [0; 20]).len();
    eprintln!(
        "progress: opening {} connections to {host} for {method} {path}, {} in flight on each",
        cfg.connections, cfg.pipeline
    );
    let mut engine = Engine::connect(
        &cfg.host,
        cfg.port,
        cfg.connections,
        work,
        cfg.pipeline,
        server,
    )?;
    engine.start();
    eprintln!("progress: warming up {} s", cfg.warmup_s);
    engine.run_for(cfg.warmup_s)?;

    let a = snapshot(&engine, server.as_ref())?;
    engine.stats.reset_window();
    engine.body_bytes = 0;
    engine.stats.measuring = true;
    eprintln!("progress: measuring {} s", cfg.duration_s);
    engine.run_for(cfg.duration_s)?;
    engine.stats.measuring = false;
    let b = snapshot(&engine, server.as_ref())?;
    engine.stop();

    let secs = (b.at_ns - a.at_ns) as f64 / 1e9;
    let server = match (server, a.server, b.server) {
        (Some(p), Some(x), Some(y)) => Some(Server {
            pid: p.pid,
            cpu: cpu(y.user_s - x.user_s, y.sys_s - x.sys_s, secs),
            rss_kb: y.rss_kb,
            rss_peak_kb: y.rss_peak_kb,
            threads: y.threads,
        }),
        _ => None,
    };
    let step = Step {
        scenario: cfg.kind.name(),
        protocol: "http",
        connections: cfg.connections,
        connected: engine.connected(),
        payload,
        in_flight: Some(cfg.pipeline),
        rate: None,
        duration_s: secs,
        sent: engine.stats.sent,
        received: engine.stats.received,
        latency: engine.stats.latency(),
        errors: engine.stats.errors,
        loadgen: cpu(b.own.0 - a.own.0, b.own.1 - a.own.1, secs),
        server,
        idle: None,
        http: Some(HttpFigures {
            method,
            path,
            pipeline: cfg.pipeline,
            body_bytes: engine.body_bytes,
            bad: engine.failures.bad,
            first_error: engine.failures.first.clone(),
        }),
        xhr: None,
    };
    let per_s = step.received as f64 / secs.max(1e-9);
    eprintln!(
        "progress: {per_s:.0} responses/s, p50 {} us, p99 {} us, loadgen cpu {:.2}",
        step.latency.p50.map_or("-".into(), |v| v.to_string()),
        step.latency.p99.map_or("-".into(), |v| v.to_string()),
        step.loadgen.cpu_util
    );
    let f = &engine.failures;
    let problem = if f.bad > 0 || engine.closes() > 0 {
        Some(format!(
            "{} wrong response(s), {} lost connection(s); first: {}",
            f.bad,
            engine.closes(),
            f.first.as_deref().unwrap_or("?")
        ))
    } else if step.received == 0 {
        Some("no response completed in the measured window".to_string())
    } else {
        None
    };
    Ok((step.to_json(), problem))
}
