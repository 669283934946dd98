//! switchboard-loadgen: the native WebSocket load generator of the
//! benchmark suite. One process, one thread, one epoll loop; see README.md
//! for the command line and the JSON it prints.

mod cli;
mod conn;
mod dispatch;
mod engine;
mod frame;
mod handshake;
mod metrics;
mod pacer;
mod payload;
mod protocols;
mod scenarios;

// Shared with switchboard-rpcload through the library target (src/lib.rs).
use switchboard_loadgen::{procfs, sys};

use std::process::ExitCode;

/// File descriptors the process needs besides its connections (stdio,
/// epoll, /proc reads).
const SPARE_FDS: u64 = 16;

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
    let limit = match sys::raise_fd_limit() {
        Ok(limit) => limit,
        Err(e) => {
            eprintln!("error: cannot read or raise the open-file limit: {e}");
            return ExitCode::from(2);
        }
    };
    if cfg.connections as u64 + SPARE_FDS > limit {
        eprintln!(
            "error: --connections {} needs {} file descriptors, but this process may open only {limit} \
             (the hard RLIMIT_NOFILE)",
            cfg.connections,
            cfg.connections as u64 + SPARE_FDS
        );
        return ExitCode::from(2);
    }
    match scenarios::run(&cfg) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("error: {msg}");
            ExitCode::FAILURE
        }
    }
}
