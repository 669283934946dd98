//! Counters and gauges, readable from JavaScript at any time. Relaxed atomics:
//! each value is exact on its own; a snapshot is not one instant across all.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of the whole server.
#[derive(Default)]
pub struct Stats {
    pub connections_open: AtomicU64,
    pub connections_total: AtomicU64,
    pub handshakes_rejected: AtomicU64,
    pub messages_in: AtomicU64,
    pub bytes_in: AtomicU64,
    /// Messages queued for delivery (one per recipient of a publish).
    pub messages_out: AtomicU64,
    /// Bytes written to sockets, WebSocket framing included.
    pub bytes_out: AtomicU64,
    /// Messages refused by a full queue (slow-consumer policy).
    pub messages_dropped: AtomicU64,
    pub protocol_errors: AtomicU64,
    /// HTTP requests read (answered natively or handed to JavaScript).
    pub http_requests: AtomicU64,
    /// Publishes a broker accepted and then lost because Redis failed
    /// while they were being sent (`crates/broker`; docs/scale-out.md).
    pub broker_publishes_lost: AtomicU64,
}

/// Counters of one worker.
#[derive(Default)]
pub struct WorkerStats {
    pub connections_open: AtomicU64,
    pub messages_in: AtomicU64,
}

pub fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

pub fn sub(counter: &AtomicU64, n: u64) {
    counter.fetch_sub(n, Ordering::Relaxed);
}

pub fn get(counter: &AtomicU64) -> u64 {
    counter.load(Ordering::Relaxed)
}

/// A plain copy for reporting.
#[derive(Clone, Debug, Default)]
pub struct StatsSnapshot {
    pub connections_open: u64,
    pub connections_total: u64,
    pub handshakes_rejected: u64,
    pub messages_in: u64,
    pub bytes_in: u64,
    pub messages_out: u64,
    pub bytes_out: u64,
    pub messages_dropped: u64,
    pub protocol_errors: u64,
    pub http_requests: u64,
    /// Bytes queued for writing over all connections.
    pub outbound_buffered_bytes: u64,
    pub channels: u64,
    pub subscriptions: u64,
    pub broker_publishes_lost: u64,
    /// Live nodes sharing the broker, this one included (0: no broker).
    pub broker_nodes_live: u64,
    /// Node messages from the broker that were malformed (ignored).
    pub broker_node_messages_invalid: u64,
    pub workers: Vec<WorkerSnapshot>,
}

#[derive(Clone, Debug, Default)]
pub struct WorkerSnapshot {
    pub connections_open: u64,
    pub messages_in: u64,
    /// Bytes of events waiting for this worker to drain them.
    pub queued_event_bytes: u64,
}
