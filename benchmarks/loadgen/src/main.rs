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
    match scenarios::run(&cfg) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("error: {msg}");
            ExitCode::FAILURE
        }
    }
}
