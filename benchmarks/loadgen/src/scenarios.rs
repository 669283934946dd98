//! The four scenarios of SCENARIOS.md as sequences of engine phases:
//! connect, (join), warm up, measure, report; over any transport's engine
//! (`load.rs`).

use crate::cli::{Config, Scenario, Transport};
use crate::engine::Engine;
use crate::load::Load;
use crate::metrics::{Cpu, Idle, Server, Step};
use crate::procfs::{Proc, ProcSample};
use crate::sys;

/// CPU and memory readings at one instant, for the deltas of a window.
struct Snapshot {
    at_ns: u64,
    user_s: f64,
    sys_s: f64,
    server: Option<ProcSample>,
}

fn snapshot(engine: &impl Load, server: Option<&Proc>) -> Result<Snapshot, String> {
    let (user_s, sys_s) = sys::self_cpu_seconds();
    let server = server.map(Proc::sample).transpose()?;
    Ok(Snapshot {
        at_ns: engine.now(),
        user_s,
        sys_s,
        server,
    })
}

fn cpu(user_s: f64, sys_s: f64, secs: f64) -> Cpu {
    Cpu {
        user_s,
        sys_s,
        cpu_util: if secs > 0.0 {
            (user_s + sys_s) / secs
        } else {
            0.0
        },
    }
}

/// The step's JSON from the window between two snapshots.
fn step(
    cfg: &Config,
    engine: &impl Load,
    server: Option<&Proc>,
    start: &Snapshot,
    end: &Snapshot,
    rate: Option<f64>,
) -> Step<'static> {
    let secs = (end.at_ns - start.at_ns) as f64 / 1e9;
    let server = match (server, &start.server, &end.server) {
        (Some(p), Some(a), Some(b)) => Some(Server {
            pid: p.pid,
            cpu: cpu(b.user_s - a.user_s, b.sys_s - a.sys_s, secs),
            rss_kb: b.rss_kb,
            rss_peak_kb: b.rss_peak_kb,
            threads: b.threads,
        }),
        _ => None,
    };
    let closed_loop = matches!(cfg.scenario, Scenario::Echo | Scenario::Channels);
    Step {
        scenario: cfg.scenario.name(),
        protocol: cfg.protocol_name(),
        connections: engine.total(),
        connected: engine.ready(),
        payload: cfg.payload,
        in_flight: closed_loop.then_some(cfg.in_flight),
        rate,
        duration_s: secs,
        sent: engine.stats().sent,
        received: engine.stats().received,
        latency: engine.stats().latency(),
        errors: engine.stats().errors,
        loadgen: cpu(end.user_s - start.user_s, end.sys_s - start.sys_s, secs),
        server,
        idle: None,
        http: None,
        xhr: engine.xhr_figures(),
    }
}

/// Warm-up, then the measured window.
fn measure(
    engine: &mut impl Load,
    cfg: &Config,
    server: Option<&Proc>,
    rate: Option<f64>,
) -> Result<Step<'static>, String> {
    engine.stats_mut().reset_step_errors();
    engine.run_for(cfg.warmup_s)?;
    let start = snapshot(engine, server)?;
    engine.reset_window();
    engine.stats_mut().measuring = true;
    engine.run_for(cfg.duration_s)?;
    engine.stats_mut().measuring = false;
    let end = snapshot(engine, server)?;
    Ok(step(cfg, engine, server, &start, &end, rate))
}

fn emit(step: &Step<'_>) {
    // println! flushes at the newline: the runner sees each step as it ends.
    println!("{}", step.to_json());
}

fn summary(step: &Step<'_>) -> String {
    let mean = step
        .latency
        .mean_us
        .map_or("-".to_string(), |m| format!("{:.0} us", m));
    let p99 = step
        .latency
        .p99
        .map_or("-".to_string(), |p| format!("{p} us"));
    format!(
        "sent {:.0}/s, received {:.0}/s, mean {mean}, p99 {p99}, loadgen cpu {:.2}",
        step.sent as f64 / step.duration_s,
        step.received as f64 / step.duration_s,
        step.loadgen.cpu_util
    )
}

pub fn run(cfg: &Config) -> Result<(), String> {
    let server = cfg
        .server_pid
        .map(|pid| Proc::new(pid, sys::clock_ticks_per_second()));
    if let Some(s) = &server {
        if !s.alive() {
            return Err(format!("no server process with pid {}", s.pid));
        }
    }
    let rss_before = match (cfg.scenario, &server) {
        (Scenario::Idle, Some(s)) => Some(s.sample()?.rss_kb),
        (Scenario::Idle, None) => {
            eprintln!("progress: idle without --server-pid: no memory figures (\"idle\": null)");
            None
        }
        _ => None,
    };
    eprintln!(
        "progress: opening {} connections to {}:{} (/{} over {})",
        cfg.connections,
        cfg.host,
        cfg.port,
        cfg.scenario.endpoint(),
        cfg.protocol_name()
    );
    if cfg.senders_apart() > 0 {
        eprintln!(
            "progress: and {} publishers to {}:{} (/publish)",
            cfg.senders_apart(),
            cfg.host,
            cfg.publish_port.unwrap_or(cfg.port)
        );
    }
    match cfg.transport {
        Transport::WebSocket => drive(cfg, Engine::new(cfg, server)?, server, rss_before),
        Transport::XhrStreaming => drive(
            cfg,
            crate::xhr::Engine::new(cfg, server)?,
            server,
            rss_before,
        ),
    }
}

/// The scenario's phases on one engine.
fn drive(
    cfg: &Config,
    mut engine: impl Load,
    server: Option<Proc>,
    rss_before: Option<u64>,
) -> Result<(), String> {
    let t0 = engine.now();
    engine.connect_all()?;
    eprintln!(
        "progress: {} connections open in {:.2} s",
        engine.ready(),
        (engine.now() - t0) as f64 / 1e9
    );
    let server = server.as_ref();
    match cfg.scenario {
        Scenario::Echo => {
            engine.start_closed_loop();
            let s = measure(&mut engine, cfg, server, None)?;
            eprintln!("progress: echo: {}", summary(&s));
            emit(&s);
        }
        Scenario::Channels => {
            engine.wait_joined()?;
            eprintln!(
                "progress: {} connections joined their channels",
                engine.joined()
            );
            engine.start_closed_loop();
            let s = measure(&mut engine, cfg, server, None)?;
            eprintln!("progress: channels: {}", summary(&s));
            emit(&s);
        }
        Scenario::Room | Scenario::Fanout => {
            let limit_us = cfg.stop_mean_latency_ms * 1000.0;
            for &rate in &cfg.rates {
                engine.set_rate(rate);
                let s = measure(&mut engine, cfg, server, Some(rate))?;
                eprintln!(
                    "progress: {} at {rate} msg/s: {}",
                    cfg.scenario.name(),
                    summary(&s)
                );
                emit(&s);
                // A step that delivered nothing is past saturation too.
                if s.latency.mean_us.is_none_or(|m| m > limit_us) {
                    eprintln!(
                        "progress: mean latency above {} ms: stopping",
                        cfg.stop_mean_latency_ms
                    );
                    break;
                }
            }
        }
        Scenario::Idle => {
            let start = snapshot(&engine, server)?;
            engine.run_for(cfg.settle_s)?;
            let end = snapshot(&engine, server)?;
            let mut s = step(cfg, &engine, server, &start, &end, None);
            if let (Some(before), Some(after)) = (rss_before, end.server.map(|p| p.rss_kb)) {
                let per_conn =
                    (after as f64 - before as f64) * 1024.0 / engine.ready().max(1) as f64;
                s.idle = Some(Idle {
                    rss_before_kb: before,
                    rss_after_kb: after,
                    bytes_per_connection: per_conn,
                });
                eprintln!("progress: idle: {per_conn:.0} bytes per connection ({before} kB -> {after} kB)");
            }
            emit(&s);
        }
    }
    Ok(())
}
