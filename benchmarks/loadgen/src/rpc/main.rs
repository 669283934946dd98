//! switchboard-rpcload: a native closed-loop RPC client for the RPC
//! benchmark suite (`benchmarks/rpc`), so that a server's capacity can be
//! measured without a Node client saturating first. One process, one
//! thread, one epoll loop; Switchboard's protocol, qrpc's JSON lines and
//! HTTP/1.1. See README.md for the command line and the JSON it prints.

mod cli;
mod engine;
mod latency;
mod report;
#[cfg(test)]
mod selftest;
mod wire;

use std::process::ExitCode;

use switchboard_loadgen::procfs::{Proc, ProcSample};
use switchboard_loadgen::sys;

use engine::Engine;
use report::{Cpu, Memory, ServerFigures, Step};
use wire::Codec;

/// CPU readings at one instant, for the deltas of the window.
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

fn run(cfg: &cli::Config) -> Result<(String, bool), String> {
    let ticks = sys::clock_ticks_per_second();
    let server = cfg.server_pid.map(|pid| Proc::new(pid, ticks));
    if let Some(s) = &server {
        if !s.alive() {
            return Err(format!("--server-pid {}: no such process", s.pid));
        }
    }
    let call = cfg.scenario.call();
    let payload = wire::payload(cfg.payload);
    let host = format!("{}:{}", cfg.host, cfg.port);
    let codecs = (0..cfg.connections)
        .map(|i| Codec::new(cfg.protocol, call, &payload, i as u32, &host))
        .collect();
    let mut engine = Engine::new(&cfg.host, cfg.port, codecs, cfg.in_flight, server)?;
    engine.handshake()?;
    engine.start();
    eprintln!("progress: warming up {} s", cfg.warmup_s);
    engine.run_for(cfg.warmup_s)?;

    engine.measuring = true;
    let a = snapshot(&engine, server.as_ref())?;
    eprintln!("progress: measuring {} s", cfg.duration_s);
    engine.run_for(cfg.duration_s)?;
    let b = snapshot(&engine, server.as_ref())?;
    engine.measuring = false;
    engine.stop();

    let secs = (b.at_ns - a.at_ns) as f64 / 1e9;
    let own = Proc::new(std::process::id(), ticks).sample()?;
    let server = match (server, a.server, b.server) {
        (Some(p), Some(x), Some(y)) => Some(ServerFigures {
            pid: p.pid,
            cpu: Cpu {
                user_s: y.user_s - x.user_s,
                sys_s: y.sys_s - x.sys_s,
            },
            memory: Memory {
                rss_kb: y.rss_kb,
                rss_peak_kb: y.rss_peak_kb,
            },
            threads: y.threads,
        }),
        _ => None,
    };
    let counters = &engine.counters;
    let step = Step {
        protocol: cfg.protocol.name(),
        scenario: cfg.scenario.name(),
        connections: engine.connections(),
        connected: engine.connected(),
        in_flight: cfg.in_flight,
        payload: match call {
            wire::Call::Echo => cfg.payload,
            wire::Call::Fast => 0,
        },
        duration_s: secs,
        ops: counters.ops,
        latency: engine.latency.summary(),
        errors: &counters.errors,
        loadgen: Cpu {
            user_s: b.own.0 - a.own.0,
            sys_s: b.own.1 - a.own.1,
        },
        loadgen_memory: Memory {
            rss_kb: own.rss_kb,
            rss_peak_kb: own.rss_peak_kb,
        },
        server,
    };
    let ok = counters.errors.total() == 0 && counters.ops > 0;
    Ok((step.to_json(), ok))
}

fn main() -> ExitCode {
    let cfg = match cli::parse(std::env::args().skip(1)) {
        Ok(cfg) => cfg,
        Err(cli::CliError::Help) => {
            println!("{}", cli::USAGE);
            return ExitCode::SUCCESS;
        }
        Err(cli::CliError::Bad(msg)) => {
            eprintln!("error: {msg}\n{}", cli::USAGE);
            return ExitCode::from(2);
        }
    };
    if let Err(msg) = sys::fit_connections(cfg.connections) {
        eprintln!("error: {msg}");
        return ExitCode::from(2);
    }
    match run(&cfg) {
        Ok((json, ok)) => {
            println!("{json}");
            if ok {
                ExitCode::SUCCESS
            } else {
                eprintln!("error: the run had errors or completed no call (see \"errors\")");
                ExitCode::FAILURE
            }
        }
        Err(msg) => {
            eprintln!("error: {msg}");
            ExitCode::FAILURE
        }
    }
}
