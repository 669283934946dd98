//! The I/O runtime of Switchboard: listeners, the state machines of every
//! connection kind and the loops that drive them over sockets, write
//! queues, timers and shutdown. It turns bytes into events for JavaScript
//! workers ([`events`]) and executes their sends and publishes
//! ([`server::Server`], [`channels`]). It never imports napi: the binding
//! (`crates/node`) adapts it to JavaScript, and Rust tests drive it
//! directly.
//!
//! What may import what (a tree; see `ARCHITECTURE.md`):
//! - `bridge` (the seam to a broker) on nothing; `config`, `errors`, `stats`, `framing`, `wake`, `tls`, `stream`,
//!   `outbound`, `events`, `rpc_reader` (the protocol's reading side,
//!   pure) depend on nothing here but each other's leaves;
//! - `connection` (the shared part of a connection, and the cork) on
//!   `outbound`; `opening` (what a session starts with) on leaves;
//! - `state` (what all threads share) on those;
//! - `session` (the connection state machine) and `handshake` (the HTTP
//!   phase, which produces an `opening`) on `state` and below;
//! - `reactor` (the I/O threads' readiness loops over sockets) on
//!   `session` and `handshake`;
//! - `server` on `reactor` and `state`; `channels` adds the channel
//!   operations to `server`; `remote` routes them to the node of an id
//!   (`ids`, pure) through the bridge.

pub mod bridge;
pub mod channels;
pub mod config;
pub mod connection;
pub mod errors;
pub mod events;
pub mod fd_limit;
mod fd_write;
pub mod framing;
mod handshake;
pub mod history;
mod hook;
pub mod http;
pub mod ids;
mod opening;
pub mod outbound;
pub mod presence;
mod queries;
mod reactor;
pub mod remote;
mod rpc_reader;
pub mod server;
mod session;
pub mod session_store;
mod sockjs;
pub mod state;
pub mod stats;
mod stream;
pub mod tls;
pub mod wake;

pub use bridge::{Bridge, BridgeError, Destination, NodeCommand, NodesView};
pub use config::{
    CompressionConfig, DotFiles, FileCacheConfig, HttpConfig, HttpRouteConfig, IoScheduling,
    ListenerConfig, Protocol, RouteConfig, RpcConfig, ServerConfig, SlowConsumerPolicy,
    SockJsConfig, StaticDirConfig, StaticRoute,
};
pub use connection::{cork, uncork, ConnectionKind};
pub use history::Position;
pub use outbound::SendStatus;
pub use server::Server;
pub use state::UpgradeDecision;
