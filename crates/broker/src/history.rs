//! Channel history in Redis (docs/scale-out.md, "History and recovery").
//!
//! A channel with history has two keys, both hash-tagged with the channel
//! so a cluster keeps them in one slot: a stream of its recent messages
//! (an entry per run of publications: id `<the run's last offset>-0`, one
//! field `m`: the run's batch as published, `wire.rs`) and a meta hash (`e`: the epoch, 8 raw bytes; `o`: the last offset). One Lua
//! script appends and publishes, so the offset order, the history's order
//! and the pub/sub order are one order; another reads a page and the
//! position atomically.
//!
//! What a node remembers of each history channel it is subscribed to, to
//! notice a gap in the offsets coming from pub/sub, is in `positions.rs`;
//! `inbound.rs` fills a gap with the reads here.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use switchboard_runtime::history::{HistoryPage, QueryError, Stored};
use switchboard_runtime::Position;

use crate::{wire, BrokerConfig, Outgoing};

/// Append a run of publications to a channel's history and publish them,
/// as one step.
///
/// KEYS: the stream, the meta hash. ARGV: the Redis channel, the
/// history's size, its TTL and the meta hash's TTL (seconds), an epoch to
/// take if the channel has none (8 bytes), the command that publishes
/// (`PUBLISH` on standalone servers, `SPUBLISH` in a cluster, where the
/// Redis channel `<prefix>{c}` shares the keys' slot, so the script stays
/// single-slot), the number of publications, a batch's first two bytes
/// (`wire::batch_head`) and its framed publications (`wire::frame`).
/// Returns the last offset.
///
/// The run is one batch (`wire.rs`): the script puts the epoch and the
/// first offset in front of the publications and writes the result as ONE
/// stream entry (id: the run's last offset) and ONE pub/sub message. What
/// Redis spends per call and per command, not per byte, is what a publish
/// with history costs; so a run of 64 costs about what one did
/// (docs/scale-out.md has the figures). Offsets, the stream and the
/// pub/sub order stay one order.
///
/// The history keeps at least `size` publications: `MINID ~` drops
/// entries whose last offset is below the `size` newest (whole stream
/// nodes at a time, as `MAXLEN ~` would; an entry holds a run, so a count
/// of entries would not bound publications).
///
/// A missing meta hash means the history was lost (expired, flushed,
/// evicted): the channel starts a new epoch and any stream left over is
/// dropped, so offsets restart at 1 and no client takes them for the old
/// ones. Offsets stay exact (doubles) up to 2^53.
pub(crate) const PUBLISH: &str = r"
local epoch = redis.call('HGET', KEYS[2], 'e')
if not epoch then
  epoch = ARGV[5]
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[2], 'e', epoch)
end
local count = tonumber(ARGV[7])
local last = redis.call('HINCRBY', KEYS[2], 'o', count)
local first = last - count + 1
local bytes = {}
local n = first
for b = 8, 1, -1 do
  bytes[b] = n % 256
  n = math.floor(n / 256)
end
local batch = ARGV[8] .. epoch .. string.char(unpack(bytes)) .. ARGV[9]
local keep = math.max(0, last - tonumber(ARGV[2]) + 1)
redis.call('XADD', KEYS[1], 'MINID', '~', string.format('%d', keep),
  string.format('%d-0', last), 'm', batch)
redis.call(ARGV[6], ARGV[1], batch)
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('EXPIRE', KEYS[2], ARGV[4])
return last
";

/// Read a page of a channel's history with its position.
///
/// KEYS: the stream, the meta hash. ARGV: the first entry id wanted
/// (`<offset>-0`, or `-` for the newest `count` entries, returned newest
/// first), the count, an epoch to take if the channel has none, and the
/// meta hash's TTL. Returns `{epoch, last offset, entries}`.
///
/// An entry holds a run of publications (its id: the run's last offset),
/// so the entries from `<since + 1>-0` on hold everything after `since`
/// (the first may begin before it), and `count` entries hold at least
/// `count` publications; `parse` keeps what was asked.
///
/// A channel without an epoch gets one here, as a publication would give
/// it: a client that subscribes before the first publication then holds a
/// position it can recover from.
pub(crate) const READ: &str = r"
local epoch = redis.call('HGET', KEYS[2], 'e')
if not epoch then
  epoch = ARGV[3]
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[2], 'e', epoch)
  redis.call('EXPIRE', KEYS[2], ARGV[4])
end
local top = tonumber(redis.call('HGET', KEYS[2], 'o') or '0')
local entries
if ARGV[1] == '-' then
  entries = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', ARGV[2])
else
  entries = redis.call('XRANGE', KEYS[1], ARGV[1], '+', 'COUNT', ARGV[2])
end
return {epoch, top, entries}
";

static PUBLISH_SCRIPT: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(PUBLISH));
static READ_SCRIPT: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(READ));

/// How a history script publishes: `PUBLISH` (standalone servers) or
/// `SPUBLISH` (a cluster's sharded pub/sub).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Publish {
    Classic,
    Sharded,
}

impl Publish {
    fn command(self) -> &'static str {
        match self {
            Publish::Classic => "PUBLISH",
            Publish::Sharded => "SPUBLISH",
        }
    }
}

/// Add to `pipe` one publish: a plain `PUBLISH`/`SPUBLISH`, or for a
/// channel with history the call of the append script (`append`).
pub(crate) fn publish(
    pipe: &mut redis::Pipeline,
    outgoing: &Outgoing,
    config: &BrokerConfig,
    publish: Publish,
) {
    match &outgoing.history {
        None => {
            pipe.cmd(publish.command())
                .arg(&outgoing.channel)
                .arg(&outgoing.message);
        }
        Some(_) => append(pipe, &[outgoing], config, publish),
    }
}

/// Add to `pipe` one call of the append script for a run of publishes to
/// one channel (`run`: non-empty, each with its `Append`, all of one
/// channel): an `EVALSHA` (the script is loaded on every new command
/// connection, `load_publish_script`).
pub(crate) fn append(
    pipe: &mut redis::Pipeline,
    run: &[&Outgoing],
    config: &BrokerConfig,
    publish: Publish,
) {
    let (Some(first), Some(append)) = (run.first(), run.first().and_then(|o| o.history.as_ref()))
    else {
        return;
    };
    let length: usize = run.iter().map(|o| 4 + o.message.len()).sum();
    let mut body = Vec::with_capacity(length);
    for outgoing in run {
        wire::frame(&mut body, &outgoing.message);
    }
    pipe.cmd("EVALSHA")
        .arg(PUBLISH_SCRIPT.get_hash())
        .arg(2)
        .arg(&append.keys[0])
        .arg(&append.keys[1])
        .arg(&first.channel)
        .arg(append.size)
        .arg(append.ttl)
        .arg(config.history_meta_ttl.as_secs().max(1))
        .arg(&append.epoch[..])
        .arg(publish.command())
        .arg(run.len())
        .arg(&wire::batch_head()[..])
        .arg(body);
}

/// The end of the run of publishes starting at `batch[start]` that one
/// append call can take: consecutive, with history, to the same channel,
/// at most `HISTORY_RUN` of them and `HISTORY_RUN_BYTES` (unless the first
/// alone is larger). Nothing is reordered: a run ends at the first
/// publish of another kind or channel.
pub(crate) fn run_end(batch: &[Outgoing], start: usize) -> usize {
    let channel = &batch[start].channel;
    let mut bytes = batch[start].message.len();
    let mut end = start + 1;
    while end < batch.len()
        && end - start < HISTORY_RUN
        && batch[end].history.is_some()
        && batch[end].channel == *channel
        && bytes + batch[end].message.len() <= HISTORY_RUN_BYTES
    {
        bytes += batch[end].message.len();
        end += 1;
    }
    end
}

/// Publishes per append call, at most: enough to amortise the script's
/// call, few enough that one call stays short (Redis runs nothing else
/// meanwhile).
const HISTORY_RUN: usize = 64;
/// Bytes of publications per append call, at most: a batch is one pub/sub
/// message and one stream entry, which every subscribed node's output
/// buffer in Redis and every history read then carry whole; 64 KiB keeps
/// them as small as a few large publications.
const HISTORY_RUN_BYTES: usize = 64 * 1024;

/// Load the append script on a new command connection, so pipelines can
/// call it by its hash (a restarted Redis, or a new master, has not got
/// it). Only when some channel keeps a history; whether it worked.
pub(crate) async fn load_publish_script(
    connection: &mut MultiplexedConnection,
    config: &BrokerConfig,
) -> bool {
    if config.history.is_empty() {
        return true;
    }
    load(connection, PUBLISH).await
}

/// Load the read script (after a `NOSCRIPT` answer).
pub(crate) async fn load_read_script(connection: &mut MultiplexedConnection) -> bool {
    load(connection, READ).await
}

async fn load(connection: &mut MultiplexedConnection, script: &str) -> bool {
    let mut load = redis::cmd("SCRIPT");
    load.arg("LOAD").arg(script);
    load.query_async::<String>(connection).await.is_ok()
}

/// The call of the read script for a page of `channel` (`Reader::read`):
/// an `EVALSHA` with its keys and arguments. The first key decides the
/// slot in a cluster.
pub(crate) fn read_call(
    config: &BrokerConfig,
    epochs: &Epochs,
    channel: &str,
    since: Option<Position>,
    limit: usize,
) -> redis::Cmd {
    let [stream, meta] = config.history_keys(channel);
    let start = match since {
        Some(since) => format!("{}-0", since.offset.saturating_add(1)),
        None => "-".to_owned(),
    };
    let mut cmd = redis::cmd("EVALSHA");
    cmd.arg(READ_SCRIPT.get_hash())
        .arg(2)
        .arg(stream)
        .arg(meta)
        .arg(start)
        .arg(limit.max(1))
        .arg(&epochs.offer()[..])
        .arg(config.history_meta_ttl.as_secs().max(1));
    cmd
}

/// A history read in flight.
pub(crate) type PageFuture<'a> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<HistoryPage, QueryError>> + Send + 'a>,
>;

/// Where a node reads the histories of its channels: the channel's
/// standalone server (`Reader`), or the master of its slot in a cluster
/// (`cluster::ClusterReader`). A trait, so this file needs nothing of the
/// cluster's (which needs its scripts).
pub(crate) trait HistorySource: Send + Sync {
    /// `channel`'s publications after `since` (the newest `limit` without
    /// it) and its position.
    fn read_page<'a>(
        &'a self,
        channel: &'a str,
        since: Option<Position>,
        limit: usize,
    ) -> PageFuture<'a>;
}

/// Where a node reads a channel's history.
pub(crate) type Source = Arc<dyn HistorySource>;

impl HistorySource for Reader {
    fn read_page<'a>(
        &'a self,
        channel: &'a str,
        since: Option<Position>,
        limit: usize,
    ) -> PageFuture<'a> {
        Box::pin(self.read(channel, since, limit))
    }
}

/// Epochs to offer Redis: random per node, then distinct per call, so two
/// channels (or two nodes) renewing at once do not pick one epoch.
pub(crate) struct Epochs {
    seed: u64,
    next: AtomicU64,
}

impl Epochs {
    pub(crate) fn new(seed: u64) -> Self {
        Self {
            seed,
            next: AtomicU64::new(1),
        }
    }

    /// An epoch, as the 8 bytes the scripts store.
    pub(crate) fn offer(&self) -> [u8; 8] {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        // A bijection of the counter, mixed with the node's seed
        // (SplitMix64's finaliser): distinct per call, unpredictable.
        let mut x = self.seed ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (x ^ (x >> 31)).to_be_bytes()
    }
}

/// Reads histories on a connection of its own (a slow read never holds up
/// a publish), made on first need and again after a failure.
pub(crate) struct Reader {
    client: redis::Client,
    config: Arc<BrokerConfig>,
    epochs: Arc<Epochs>,
    /// Scripts that pipelines on this connection call by hash (presence's,
    /// `presence::scripts`): loaded on every new connection.
    scripts: Vec<&'static str>,
    connection: tokio::sync::Mutex<Option<MultiplexedConnection>>,
}

impl Reader {
    pub(crate) fn new(
        client: redis::Client,
        config: Arc<BrokerConfig>,
        epochs: Arc<Epochs>,
        scripts: Vec<&'static str>,
    ) -> Self {
        Self {
            client,
            config,
            epochs,
            scripts,
            connection: tokio::sync::Mutex::new(None),
        }
    }

    /// `channel`'s publications after `since` (the newest `limit` without
    /// it) and its position. Tries a fresh connection once if the one it
    /// had failed: Redis may have restarted under it.
    pub(crate) async fn read(
        &self,
        channel: &str,
        since: Option<Position>,
        limit: usize,
    ) -> Result<HistoryPage, QueryError> {
        let timeout = Some(self.config.connect_timeout);
        let reply = self
            .retried(
                timeout,
                |_| true,
                |mut connection| async move {
                    self.invoke(&mut connection, channel, since, limit).await
                },
            )
            .await?;
        parse(reply, since, limit).ok_or(QueryError::Unavailable)
    }

    /// Run `query` on the connection, and once more on a fresh one if it
    /// failed in a way `retry` accepts (Redis may have restarted under
    /// it): for idempotent reads and writes only. `per_try` bounds each
    /// try (a timed-out try counts as failed). Answers `Unavailable` when
    /// no try succeeded.
    pub(crate) async fn retried<T, Fut>(
        &self,
        per_try: Option<Duration>,
        retry: impl Fn(&redis::RedisError) -> bool,
        mut query: impl FnMut(MultiplexedConnection) -> Fut,
    ) -> Result<T, QueryError>
    where
        Fut: std::future::Future<Output = redis::RedisResult<T>>,
    {
        for _attempt in 0..2 {
            let Some(connection) = self.connection().await else {
                return Err(QueryError::Unavailable);
            };
            let answer = match per_try {
                Some(limit) => tokio::time::timeout(limit, query(connection)).await.ok(),
                None => Some(query(connection).await),
            };
            match answer {
                Some(Ok(value)) => return Ok(value),
                Some(Err(error)) if !retry(&error) => return Err(QueryError::Unavailable),
                _ => self.lost().await,
            }
        }
        Err(QueryError::Unavailable)
    }

    /// The connection, made (and its scripts loaded) if there is none.
    /// Presence writes share it (`presence.rs`): both are the broker's
    /// questions and bookkeeping, apart from the publish pipeline.
    pub(crate) async fn connection(&self) -> Option<MultiplexedConnection> {
        let mut slot = self.connection.lock().await;
        if slot.is_none() {
            let connect = async {
                let mut connection = self.client.get_multiplexed_async_connection().await.ok()?;
                // Pipelines call scripts by hash: a new connection may be
                // to a Redis that never saw them.
                for script in &self.scripts {
                    let mut load = redis::cmd("SCRIPT");
                    load.arg("LOAD").arg(*script);
                    load.query_async::<String>(&mut connection).await.ok()?;
                }
                Some(connection)
            };
            *slot = tokio::time::timeout(self.config.connect_timeout, connect)
                .await
                .ok()?;
        }
        slot.clone()
    }

    /// The connection failed: the next use makes a new one.
    pub(crate) async fn lost(&self) {
        *self.connection.lock().await = None;
    }

    async fn invoke(
        &self,
        connection: &mut MultiplexedConnection,
        channel: &str,
        since: Option<Position>,
        limit: usize,
    ) -> redis::RedisResult<redis::Value> {
        let call = read_call(&self.config, &self.epochs, channel, since, limit);
        match call.query_async(connection).await {
            Err(error)
                if error.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) =>
            {
                // A restarted Redis: load the script, and read once more.
                load_read_script(connection).await;
                call.query_async(connection).await
            }
            answer => answer,
        }
    }
}

/// The read script's reply as a page of at most `limit` publications
/// (after `since`, or the newest); `None` for a reply of another shape.
pub(crate) fn parse(
    reply: redis::Value,
    since: Option<Position>,
    limit: usize,
) -> Option<HistoryPage> {
    let redis::Value::Array(mut parts) = reply else {
        return None;
    };
    let entries = match parts.pop()? {
        redis::Value::Array(entries) => entries,
        _ => return None,
    };
    let top = match parts.pop()? {
        redis::Value::Int(top) => u64::try_from(top).ok()?,
        _ => return None,
    };
    let epoch = match parts.pop()? {
        redis::Value::BulkString(bytes) => u64::from_be_bytes(bytes.as_slice().try_into().ok()?),
        _ => return None,
    };
    let after = since.map_or(0, |since| since.offset);
    let mut publications = Vec::with_capacity(entries.len());
    for entry in entries {
        // [id, [field, value]]: the value is a batch (or, written before
        // batches, one positioned message); the positions are in it, so
        // the id need not be parsed.
        let redis::Value::Array(entry) = entry else {
            return None;
        };
        let Some(redis::Value::Array(fields)) = entry.into_iter().nth(1) else {
            return None;
        };
        let Some(redis::Value::BulkString(value)) = fields.into_iter().nth(1) else {
            return None;
        };
        // Someone else's entry in our key: skipped, never half-read.
        let Some(messages) = wire::messages(&value) else {
            continue;
        };
        for message in messages {
            let Some(position) = message.position else {
                continue;
            };
            if position.offset > after {
                publications.push(Stored {
                    offset: position.offset,
                    binary: message.binary,
                    data: message.payload.to_vec(),
                });
            }
        }
    }
    // Entries come oldest first after `since`, newest first without it;
    // each holds its run oldest first.
    publications.sort_unstable_by_key(|p| p.offset);
    publications.dedup_by_key(|p| p.offset);
    let limit = limit.max(1);
    if since.is_none() && publications.len() > limit {
        publications.drain(..publications.len() - limit);
    }
    publications.truncate(limit);
    let top = Position { epoch, offset: top };
    Some(HistoryPage {
        top,
        continuous: continues(since, top, &publications),
        publications,
    })
}

/// Whether `publications` (read after `since`) follow `since` exactly:
/// the same epoch, and either nothing was published since or the first
/// kept publication is the very next one.
pub(crate) fn continues(since: Option<Position>, top: Position, publications: &[Stored]) -> bool {
    let Some(since) = since else {
        return true;
    };
    if since.epoch != top.epoch || since.offset > top.offset {
        return false;
    }
    since.offset == top.offset || publications.first().map(|p| p.offset) == Some(since.offset + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(epoch: u64, offset: u64) -> Position {
        Position { epoch, offset }
    }

    fn stored(offset: u64) -> Stored {
        Stored {
            offset,
            binary: false,
            data: Vec::new(),
        }
    }

    /// The read script's reply: epoch, top, and entries holding batches of
    /// the given (first offset, count).
    fn reply(epoch: u64, top: i64, runs: &[(u64, usize)]) -> redis::Value {
        use redis::Value::{Array, BulkString, Int};
        let entries = runs.iter().map(|&(first, count)| {
            let publications: Vec<Vec<u8>> = (0..count)
                .map(|i| wire::encode(1, false, None, format!("p{}", first + i as u64).as_bytes()))
                .collect();
            let id = format!("{}-0", first + count as u64 - 1);
            let batch = wire::tests::batch(epoch, first, &publications);
            Array(vec![
                BulkString(id.into_bytes()),
                Array(vec![BulkString(b"m".to_vec()), BulkString(batch)]),
            ])
        });
        Array(vec![
            BulkString(epoch.to_be_bytes().to_vec()),
            Int(top),
            Array(entries.collect()),
        ])
    }

    fn offsets(page: &HistoryPage) -> Vec<u64> {
        page.publications.iter().map(|p| p.offset).collect()
    }

    #[test]
    fn pages_are_cut_from_runs() {
        // After 4: the entry of 3..=6 begins before it.
        let page = parse(reply(9, 12, &[(3, 4), (7, 2), (9, 4)]), Some(at(9, 4)), 5).unwrap();
        assert_eq!(offsets(&page), [5, 6, 7, 8, 9]);
        assert_eq!(page.publications[0].data, b"p5");
        assert!(page.continuous);
        // The newest 5, from entries given newest first.
        let page = parse(reply(9, 12, &[(9, 4), (7, 2), (3, 4)]), None, 5).unwrap();
        assert_eq!(offsets(&page), [8, 9, 10, 11, 12]);
        // Trimmed below 6: after 2, the history no longer follows on.
        let page = parse(reply(9, 12, &[(6, 1), (7, 6)]), Some(at(9, 2)), 100).unwrap();
        assert_eq!(offsets(&page), [6, 7, 8, 9, 10, 11, 12]);
        assert!(!page.continuous);
    }

    #[test]
    fn continuity() {
        let top = at(5, 10);
        assert!(continues(None, top, &[]));
        assert!(continues(Some(at(5, 10)), top, &[]));
        assert!(continues(
            Some(at(5, 7)),
            top,
            &[stored(8), stored(9), stored(10)]
        ));
        // Trimmed: 8 is gone.
        assert!(!continues(Some(at(5, 7)), top, &[stored(9), stored(10)]));
        // Expired: nothing kept although 3 were published.
        assert!(!continues(Some(at(5, 7)), top, &[]));
        // Another epoch, or a position from the future.
        assert!(!continues(Some(at(4, 7)), top, &[stored(8)]));
        assert!(!continues(Some(at(5, 11)), top, &[]));
    }

    #[test]
    fn epochs_are_distinct() {
        let epochs = Epochs::new(42);
        let offered: std::collections::HashSet<[u8; 8]> =
            (0..1000).map(|_| epochs.offer()).collect();
        assert_eq!(offered.len(), 1000);
    }
}
