//! switchboard-loadgen: the native load generator of the benchmark suite,
//! for WebSocket servers (and SockJS servers over its xhr-streaming
//! transport) and (with `--protocol http`) HTTP/1.1 servers. One
//! process, one thread, one epoll loop; see README.md for the command line
//! and the JSON it prints.

mod cli;
mod conn;
mod dispatch;
mod engine;
mod engine_core;
mod frame;
mod handshake;
mod http;
mod load;
mod metrics;
mod net;
mod pacer;
mod payload;
mod protocols;
mod scenarios;
mod xhr;

// Shared with switchboard-rpcload through the library target (src/lib.rs).
use switchboard_loadgen::{procfs, sys};

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if http::cli::wanted(&args) {
        return http_main(args);
    }
    let cfg = match cli::parse(args) {
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
    if let Err(msg) = sys::fit_sockets(cfg.clients(), cfg.sockets_per_client()) {
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

/// The HTTP mode: its own options; the JSON step is printed even when the
/// run had errors (exit 1 then).
fn http_main(args: Vec<String>) -> ExitCode {
    let cfg = match http::cli::parse(args) {
        Ok(cfg) => cfg,
        Err(http::cli::CliError::Help) => {
            println!("{}", http::cli::USAGE);
            return ExitCode::SUCCESS;
        }
        Err(http::cli::CliError::Bad(msg)) => {
            eprintln!("error: {msg}\n{}", http::cli::USAGE);
            return ExitCode::from(2);
        }
    };
    if let Err(msg) = sys::fit_connections(cfg.connections) {
        eprintln!("error: {msg}");
        return ExitCode::from(2);
    }
    match http::run(&cfg) {
        Ok((json, problem)) => {
            println!("{json}");
            match problem {
                None => ExitCode::SUCCESS,
                Some(why) => {
                    eprintln!("error: {why}");
                    ExitCode::FAILURE
                }
            }
        }
        Err(msg) => {
            eprintln!("error: {msg}");
            ExitCode::FAILURE
        }
    }
}
