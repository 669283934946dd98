//! switchboard-pubsub: the channel registry and fan-out planner of Switchboard.
//!
//! A pure data structure (no I/O, no threads, no clock), in the spirit of
//! uWebSockets' `TopicTree`: the runtime wraps one [`Registry`] in a lock,
//! attaches write queues to the connections it names, and calls it from many
//! threads. It covers WarpSocket's channel API (refcounted subscriptions,
//! bulk subscribe, `copySubscriptions`, `hasSubscriptions`, tagged virtual
//! sockets) and uWebSockets.js's topic API (`subscribe`, `unsubscribe`,
//! `isSubscribed`, `getTopics`, `numSubscribers`).
//!
//! ```
//! use bytes::Bytes;
//! use switchboard_pubsub::{Registry, Target};
//!
//! let mut reg = Registry::new();
//! reg.subscribe(1, "news", 1); // connection 1
//! reg.create_virtual_socket(10, 2, Some(Bytes::from_static(b"w1:"))).unwrap();
//! reg.subscribe(10, "news", 1); // virtual socket 10 on connection 2
//!
//! let mut out = Vec::new();
//! let n = reg.for_each_recipient(&[Target::Channel("news")], None, |conn, prefix| {
//!     out.push((conn, prefix.cloned()));
//! });
//! assert_eq!(n, 2);
//! out.sort();
//! assert_eq!(out, [(1, None), (2, Some(Bytes::from_static(b"w1:")))]);
//! ```
//!
//! Files: `registry` (subscriptions and queries), `channel` (one channel's
//! member set), `virtual_socket`, `fanout`, `error`, and `model` (a naive
//! reference implementation for the differential tests and the fuzzer in
//! `fuzz/`).

#![warn(missing_docs)]

mod channel;
mod error;
mod fanout;
mod registry;
mod virtual_socket;

#[cfg(any(test, feature = "model"))]
pub mod model;

pub use error::{Error, ALL_ERROR_CODES};
pub use fanout::{Target, INLINE_TARGETS};
pub use registry::{ChannelChange, MemberChange, MemberFilter, Registry};
pub use virtual_socket::VirtualSocket;

/// Names a subscriber: a connection or a virtual socket. Both come from one
/// id space allocated by the runtime, so a JavaScript number names either;
/// the runtime never reuses an id.
pub type SubscriberId = u64;

/// A subscriber id that names a connection: where fan-out actually writes.
pub type ConnectionId = SubscriberId;

// The runtime shares one registry across threads behind a lock.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Registry>();
};
