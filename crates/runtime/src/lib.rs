//! The I/O runtime of Switchboard: listeners, the state machines of every
//! connection kind and the loops that drive them over sockets, write
//! queues, timers and shutdown. It turns bytes into events for JavaScript
//! workers ([`events`]) and executes their sends and publishes
//! ([`server::Server`], [`channels`]). It never imports napi: the binding
//! (`crates/node`) adapts it to JavaScript, and Rust tests drive it
//! directly.
//!
//! What may import what (a tree; see `ARCHITECTURE.md`):
//! - `config`, `errors`, `stats`, `framing`, `tls`, `socket`, `outbound`,
//!   `events` depend on nothing here but each other's leaves;
//! - `connection` (the shared part of a connection) and `cork` on
//!   `outbound`;
//! - `state` (what all threads share) on those;
//! - `session` (the connection state machine) and `handshake` (the HTTP
//!   phase) on `state` and below;
//! - `driver` (the loops over sockets) on `session` and `handshake`;
//! - `listener` on `driver`; `server` on `listener` and `state`;
//!   `channels` adds the channel operations to `server`.

pub mod channels;
pub mod config;
pub mod connection;
pub mod cork;
mod driver;
pub mod errors;
pub mod events;
pub mod framing;
mod handshake;
mod listener;
pub mod outbound;
pub mod server;
mod session;
mod socket;
pub mod state;
pub mod stats;
pub mod tls;

pub use config::{
    ListenerConfig, Protocol, RouteConfig, RpcConfig, ServerConfig, SlowConsumerPolicy, StaticRoute,
};
pub use connection::ConnectionKind;
pub use outbound::SendStatus;
pub use server::Server;
pub use state::UpgradeDecision;
