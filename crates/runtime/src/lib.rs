//! The Tokio runtime of Switchboard: listeners, connection tasks, write
//! queues, timers and shutdown. It turns bytes into events for JavaScript
//! workers ([`events`]) and executes their sends and publishes
//! ([`server::Server`]). It never imports napi: the binding (`crates/node`)
//! adapts it to JavaScript, and Rust tests drive it directly.

pub mod channels;
pub mod config;
mod connection;
pub mod errors;
pub mod events;
pub mod fd_limit;
pub mod framing;
mod listener;
pub mod outbound;
pub mod server;
mod socket;
pub mod stats;
pub mod tls;

pub use config::{RouteConfig, ServerConfig, SlowConsumerPolicy, StaticRoute, WireConfig};
pub use outbound::SendStatus;
pub use server::{Server, UpgradeDecision};
