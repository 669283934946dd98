//! What the two binaries of this crate share: the server's CPU and memory
//! from /proc (`procfs`) and the libc calls std does not wrap (`sys`).
//! `switchboard-loadgen` (WebSocket) and `switchboard-rpcload` (RPC) are
//! otherwise independent.

pub mod procfs;
pub mod sys;
