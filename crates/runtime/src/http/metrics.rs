//! HTTP responses counted by route and status, and their latency, for
//! `stats()` and the `/metrics` endpoint (`exposition.rs` renders them).
//!
//! **Where.** A response of JavaScript's is counted by the worker thread
//! that frames it (`respond.rs`), when its last bytes are queued; one of
//! the core's (404, 405, a fixed route, a static file, a malformed
//! request) by the I/O thread that answers it (`session/http/answers.rs`).
//! Latency runs from the moment the request head was complete (the I/O
//! thread's clock of that turn, carried to the worker in the request's
//! record) to the response's end (the worker's clock of that batch,
//! `date.rs`): no clock is read per request.
//!
//! **Why it is cheap.** A route's counters are one row of atomic words:
//! a slot per known status code (a 900-entry table turns a status into its
//! slot, so counting is two array indexings), a slot per histogram bucket,
//! and the sum. Each worker thread and each I/O thread counts in its own
//! copy of the table (a *shard*), so two threads answering the same route
//! never write the same cache line, and a shard's single writer adds with
//! a plain load and store (`bump`); `snapshot` adds the shards up, which
//! only a reader of the metrics pays for. Nothing is allocated or locked
//! per response.
//!
//! Memory: a row is 512 bytes (aligned to cache lines), so a shard is
//! half a KiB per route label; an app of 100 routes on 4 workers and 4 I/O
//! threads holds 400 KiB of counters.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::config::ServerConfig;

/// The histogram's upper bounds, in microseconds (Prometheus's default
/// buckets from 5 ms to 10 s, with finer ones below: most responses of a
/// native server take well under a millisecond).
pub const BUCKETS_US: [u64; 16] = [
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000, 5_000_000, 10_000_000,
];
/// The buckets and `+Inf`.
const BUCKET_SLOTS: usize = BUCKETS_US.len() + 1;

/// Status codes counted on their own: those of RFC 9110 an application or
/// the core answers with in practice. Any other code is counted in its
/// class (`2xx`, ..., `5xx`), or as `other` outside 100..599.
pub const STATUSES: [u16; 39] = [
    100, 101, 200, 201, 202, 204, 206, 301, 302, 303, 304, 307, 308, 400, 401, 403, 404, 405, 406,
    408, 409, 410, 411, 412, 413, 414, 415, 416, 417, 422, 426, 429, 431, 500, 501, 502, 503, 504,
    505,
];
/// Slots: the known codes, one per class from 1xx to 5xx, and `other`
/// (39 + 6, so a row of counters fits 8 cache lines).
const STATUS_SLOTS: usize = STATUSES.len() + 6;
const OTHER_SLOT: usize = STATUS_SLOTS - 1;

/// Status (100..=999) to its slot; built at compile time.
static STATUS_INDEX: [u8; 900] = status_index();

const fn status_index() -> [u8; 900] {
    let mut table = [OTHER_SLOT as u8; 900];
    let mut status = 100;
    while status < 600 {
        table[status - 100] = (STATUSES.len() + status / 100 - 1) as u8;
        status += 1;
    }
    let mut i = 0;
    while i < STATUSES.len() {
        table[STATUSES[i] as usize - 100] = i as u8;
        i += 1;
    }
    table
}

/// The slot a status is counted in.
pub fn status_slot(status: u16) -> usize {
    match status {
        100..=999 => STATUS_INDEX[status as usize - 100] as usize,
        _ => OTHER_SLOT,
    }
}

/// The `code` label of a slot: the code, its class (`4xx`) or `other`.
pub fn status_label(slot: usize) -> String {
    match slot {
        s if s < STATUSES.len() => STATUSES[s].to_string(),
        OTHER_SLOT => "other".to_owned(),
        s => format!("{}xx", s - STATUSES.len() + 1),
    }
}

/// The bucket a latency falls in (`le`: the first bound not below it).
pub fn bucket_of(micros: u64) -> usize {
    BUCKETS_US.partition_point(|&bound| bound < micros)
}

/// Labels of the responses the core gives without a route of the app.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unrouted {
    /// No route for the path: 404.
    NotFound,
    /// Routes for the path, none for the method: 405.
    MethodNotAllowed,
    /// A plain request for a WebSocket route: 426.
    UpgradeRequired,
    /// A request that could not be parsed or came too slowly: 400, 408,
    /// 413, 414, 431, 501, 505...
    BadRequest,
}

impl Unrouted {
    const ALL: [Unrouted; 4] = [
        Unrouted::NotFound,
        Unrouted::MethodNotAllowed,
        Unrouted::UpgradeRequired,
        Unrouted::BadRequest,
    ];

    /// In parentheses: a route's pattern starts with `/`, so these never
    /// collide with one.
    pub fn label(self) -> &'static str {
        match self {
            Unrouted::NotFound => "(not-found)",
            Unrouted::MethodNotAllowed => "(method-not-allowed)",
            Unrouted::UpgradeRequired => "(upgrade-required)",
            Unrouted::BadRequest => "(bad-request)",
        }
    }
}

/// One route label's counters.
#[repr(align(64))]
struct Row {
    statuses: [AtomicU64; STATUS_SLOTS],
    buckets: [AtomicU64; BUCKET_SLOTS],
    sum_us: AtomicU64,
}

impl Row {
    fn new() -> Self {
        Self {
            statuses: std::array::from_fn(|_| AtomicU64::new(0)),
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            sum_us: AtomicU64::new(0),
        }
    }
}

/// Add to a counter of a shard. A shard has one writer (its worker or
/// I/O thread), so this is a load and a store, not a locked add (a
/// `fetch_add` is a locked instruction of about 20 cycles, and a response
/// makes three). Should a
/// second thread ever write a shard (a worker replaced while its
/// predecessor still finishes a call), a count may be lost, never torn:
/// each value is still one atomic word.
fn bump(counter: &AtomicU64, n: u64) {
    counter.store(
        counter.load(Ordering::Relaxed).wrapping_add(n),
        Ordering::Relaxed,
    );
}

/// Which row counts a response: an index into the labels.
pub type RowId = u16;

thread_local! {
    /// The shard of the I/O thread running here (`set_io_thread`).
    static IO_SHARD: Cell<usize> = const { Cell::new(0) };
}

/// An I/O thread starts: its responses go to shard `workers + index`.
pub(crate) fn set_io_thread(index: usize) {
    IO_SHARD.with(|shard| shard.set(index));
}

/// The counters of every HTTP route of a server. Aligned to cache lines of
/// its own (128 bytes: adjacent-line prefetch pairs them), so reading it
/// per response never touches a line of `ServerState` that other threads
/// write per request (the connection table's lock).
#[repr(align(128))]
pub struct HttpMetrics {
    /// The route label of each row.
    labels: Vec<String>,
    /// The row of each of JavaScript's routes, fixed routes and static
    /// directories, by their numbers in the config.
    handler_rows: Vec<RowId>,
    fixed_rows: Vec<RowId>,
    dir_rows: Vec<RowId>,
    /// The metrics endpoint's own row, and the rows of `Unrouted`.
    metrics_row: RowId,
    unrouted_rows: [RowId; 4],
    /// Shards `0..workers` are the workers', then one per I/O thread.
    shards: Box<[Box<[Row]>]>,
    workers: usize,
    /// Responses are counted: the counts are served (`metrics_path`).
    enabled: bool,
    /// What latencies and the requests' start times count from.
    epoch: Instant,
}

impl HttpMetrics {
    pub fn new(config: &ServerConfig) -> Self {
        let mut labels: Vec<String> = Vec::new();
        let mut row_of = |label: &str| -> RowId {
            // Routes of one pattern with different methods share a row: the
            // label is the pattern. A linear search, once per route at start.
            let row = match labels.iter().position(|l| l == label) {
                Some(row) => row,
                None => {
                    labels.push(label.to_owned());
                    labels.len() - 1
                }
            };
            RowId::try_from(row).unwrap_or(RowId::MAX)
        };
        let handler_rows = config
            .http_routes
            .iter()
            .map(|r| row_of(&r.pattern))
            .collect();
        let fixed_rows = config
            .static_routes
            .iter()
            .map(|r| row_of(&r.path))
            .collect();
        let dir_rows = config
            .static_dirs
            .iter()
            .map(|d| row_of(&d.prefix))
            .collect();
        let metrics_row = row_of(config.metrics_path.as_deref().unwrap_or("/metrics"));
        let unrouted_rows = Unrouted::ALL.map(|u| row_of(u.label()));
        // A row id past the table (more than 65,535 labels) is not counted.
        labels.truncate(RowId::MAX as usize);
        let workers = config.workers.max(1);
        let shard_count = workers + config.io_threads.max(1);
        let shards = (0..shard_count)
            .map(|_| labels.iter().map(|_| Row::new()).collect())
            .collect();
        Self {
            labels,
            handler_rows,
            fixed_rows,
            dir_rows,
            metrics_row,
            unrouted_rows,
            shards,
            workers,
            enabled: config.metrics_path.is_some(),
            epoch: Instant::now(),
        }
    }

    /// Whether responses are counted. Only when the counts are served:
    /// counting costs about 40 ns of CPU per response (the request's
    /// start carried to JavaScript and back, and the count), about 3% of the
    /// CPU of a pipelined hello-world request, which a server that never
    /// reads the counts should not pay.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    pub fn handler_row(&self, route: u16) -> RowId {
        self.handler_rows
            .get(route as usize)
            .copied()
            .unwrap_or(RowId::MAX)
    }

    pub fn fixed_row(&self, index: usize) -> RowId {
        self.fixed_rows.get(index).copied().unwrap_or(RowId::MAX)
    }

    pub fn dir_row(&self, index: usize) -> RowId {
        self.dir_rows.get(index).copied().unwrap_or(RowId::MAX)
    }

    pub fn metrics_row(&self) -> RowId {
        self.metrics_row
    }

    pub fn unrouted_row(&self, unrouted: Unrouted) -> RowId {
        self.unrouted_rows[unrouted as usize]
    }

    /// Microseconds from the server's start to `at`: how a request's start
    /// travels in its record.
    pub fn micros(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.epoch).as_micros() as u64
    }

    /// A response of row `row` ended with `status`, `micros` after its
    /// request head was complete; counted in worker `worker`'s shard.
    pub fn observe_worker(&self, worker: usize, row: RowId, status: u16, micros: u64) {
        self.observe(worker, row, status, micros);
    }

    /// As `observe_worker`, by the I/O thread running here.
    pub fn observe_io(&self, row: RowId, status: u16, micros: u64) {
        let shard = self.workers + IO_SHARD.with(Cell::get);
        self.observe(shard, row, status, micros);
    }

    fn observe(&self, shard: usize, row: RowId, status: u16, micros: u64) {
        if !self.enabled {
            return;
        }
        // A shard out of range (never, as threads are numbered) counts in
        // the first: a comparison, where `%` would be a division.
        let shard = self.shards.get(shard).unwrap_or(&self.shards[0]);
        let Some(row) = shard.get(row as usize) else {
            return;
        };
        bump(&row.statuses[status_slot(status)], 1);
        bump(&row.buckets[bucket_of(micros)], 1);
        bump(&row.sum_us, micros);
    }

    /// Every label that counted a response, the shards added up.
    pub fn snapshot(&self) -> Vec<RouteSnapshot> {
        let mut out = Vec::new();
        for (index, label) in self.labels.iter().enumerate() {
            let mut statuses = [0u64; STATUS_SLOTS];
            let mut buckets = [0u64; BUCKET_SLOTS];
            let mut sum_us = 0;
            for shard in self.shards.iter() {
                let row = &shard[index];
                for (total, slot) in statuses.iter_mut().zip(&row.statuses) {
                    *total += slot.load(Ordering::Relaxed);
                }
                for (total, slot) in buckets.iter_mut().zip(&row.buckets) {
                    *total += slot.load(Ordering::Relaxed);
                }
                sum_us += row.sum_us.load(Ordering::Relaxed);
            }
            let count: u64 = buckets.iter().sum();
            if count == 0 {
                continue;
            }
            out.push(RouteSnapshot {
                route: label.clone(),
                statuses: statuses
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| **n > 0)
                    .map(|(slot, n)| (status_label(slot), *n))
                    .collect(),
                buckets: buckets.to_vec(),
                sum_us,
                count,
            });
        }
        out
    }
}

/// One route label's counts, as read at one moment (each value exact on
/// its own; a response counted while this was read may be in its status
/// and not yet in its bucket).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RouteSnapshot {
    pub route: String,
    /// `(code label, responses)`, known codes in order, then classes.
    pub statuses: Vec<(String, u64)>,
    /// Responses per bucket of `BUCKETS_US`, then above the last bound
    /// (not cumulative).
    pub buckets: Vec<u64>,
    pub sum_us: u64,
    pub count: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::HttpRouteConfig;

    #[test]
    fn every_known_status_has_its_own_slot() {
        for (i, status) in STATUSES.iter().enumerate() {
            assert_eq!(status_slot(*status), i);
            assert_eq!(status_label(i), status.to_string());
        }
        assert!(
            STATUSES.windows(2).all(|w| w[0] < w[1]),
            "sorted, no repeats"
        );
    }

    #[test]
    fn other_codes_count_in_their_class() {
        assert_eq!(status_label(status_slot(299)), "2xx");
        assert_eq!(status_label(status_slot(102)), "1xx");
        assert_eq!(status_label(status_slot(418)), "4xx");
        assert_eq!(status_label(status_slot(599)), "5xx");
        assert_eq!(status_label(status_slot(600)), "other");
        assert_eq!(status_label(status_slot(999)), "other");
        assert_eq!(status_label(status_slot(0)), "other");
        assert_eq!(status_label(status_slot(1000)), "other");
    }

    #[test]
    fn buckets_take_their_upper_bound() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(100), 0);
        assert_eq!(bucket_of(101), 1);
        assert_eq!(bucket_of(1_000), 3);
        assert_eq!(bucket_of(10_000_000), 15);
        assert_eq!(bucket_of(10_000_001), 16);
        assert_eq!(bucket_of(u64::MAX), 16);
    }

    fn config() -> ServerConfig {
        let mut config = ServerConfig {
            workers: 2,
            io_threads: 2,
            metrics_path: Some("/metrics".to_owned()),
            ..ServerConfig::default()
        };
        for (method, pattern) in [("GET", "/user/:id"), ("POST", "/user/:id"), ("GET", "/")] {
            config.http_routes.push(HttpRouteConfig {
                method: Some(method.to_owned()),
                pattern: pattern.to_owned(),
                max_body_bytes: None,
            });
        }
        config
    }

    #[test]
    fn routes_of_one_pattern_share_a_row() {
        let metrics = HttpMetrics::new(&config());
        assert_eq!(metrics.handler_row(0), metrics.handler_row(1));
        assert_ne!(metrics.handler_row(0), metrics.handler_row(2));
        assert_eq!(metrics.handler_row(9), RowId::MAX);
    }

    #[test]
    fn shards_add_up() {
        let metrics = HttpMetrics::new(&config());
        let user = metrics.handler_row(0);
        metrics.observe_worker(0, user, 200, 50);
        metrics.observe_worker(1, user, 200, 300);
        metrics.observe_worker(3, user, 404, 20_000_000);
        metrics.observe_io(metrics.unrouted_row(Unrouted::NotFound), 404, 0);
        // Out of the table: ignored.
        metrics.observe_worker(0, RowId::MAX, 200, 1);
        let snapshot = metrics.snapshot();
        assert_eq!(snapshot.len(), 2);
        let route = &snapshot[0];
        assert_eq!(route.route, "/user/:id");
        assert_eq!(
            route.statuses,
            vec![("200".to_owned(), 2), ("404".to_owned(), 1)]
        );
        assert_eq!(route.count, 3);
        assert_eq!(route.sum_us, 20_000_350);
        assert_eq!(route.buckets[0], 1);
        assert_eq!(route.buckets[2], 1);
        assert_eq!(route.buckets[16], 1);
        assert_eq!(snapshot[1].route, "(not-found)");
        assert_eq!(snapshot[1].count, 1);
    }

    #[test]
    fn nothing_is_counted_unless_the_counts_are_served() {
        let config = ServerConfig {
            metrics_path: None,
            ..config()
        };
        let metrics = HttpMetrics::new(&config);
        assert!(!metrics.enabled());
        metrics.observe_worker(0, metrics.handler_row(0), 200, 1);
        metrics.observe_io(metrics.unrouted_row(Unrouted::NotFound), 404, 0);
        assert!(metrics.snapshot().is_empty());
    }

    #[test]
    fn a_row_is_cache_line_aligned() {
        assert_eq!(std::mem::align_of::<Row>(), 64);
        assert_eq!(std::mem::size_of::<Row>(), 512);
    }
}
