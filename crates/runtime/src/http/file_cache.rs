//! The files of a static directory kept in memory: their bytes (each
//! variant: the file and its precompressed siblings) and modification
//! times, keyed by the safe request path. A hit costs a hash lookup and
//! the head's framing; the body goes to the socket as the shared bytes
//! themselves (no read, no copy).
//!
//! **Staying true to the disk.** An entry records what the disk said when
//! it was made (its [`Fingerprint`]: the real path, the size and
//! modification time of the file and of each sibling). Once it is older
//! than `revalidate`, the next request for it checks the disk again (the
//! path resolved again, a `stat` per variant: `session/http/files.rs`)
//! before it is used; any difference drops it, and the request goes the
//! way of a miss, which makes a new one. So a changed file is served
//! changed within `revalidate` (1 s by default), and a file on disk is
//! never served from memory with the validators of another version.
//!
//! **Bounded.** Only files up to `max_file_bytes` are kept, and no more
//! than `max_bytes` over the directory; past it, misses are served from
//! the disk as without a cache. Nothing is evicted to make room: a site's
//! assets fit, and a stream of requests for distinct large files cannot
//! churn the cache. The lock is taken for reading on a hit (shared by the
//! I/O threads), for writing only when an entry is made or dropped.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use rustc_hash::FxHashMap;
use switchboard_proto::http1::ContentCoding;

use super::files::SafePath;
use crate::config::FileCacheConfig;

/// What the disk said of a file when it was read: any change of it
/// invalidates what was read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    /// The file's real path (symbolic links resolved, the index file of a
    /// directory included).
    pub real: PathBuf,
    /// Size and modification time (ns) of the file.
    pub file: (u64, u64),
    /// Of its `.br` and `.gz` siblings that are used (present, regular
    /// files, not older than the file); `None` when not.
    pub br: Option<(u64, u64)>,
    pub gzip: Option<(u64, u64)>,
}

/// One representation of a kept file: the file or a sibling.
pub(crate) struct Variant {
    pub body: Bytes,
    /// Its modification time, in ns since the epoch (its validators are
    /// made from it and the body's length, as from the disk).
    pub modified_ns: u64,
}

/// A kept file: its variants and where they came from.
pub(crate) struct CachedFile {
    pub fingerprint: Fingerprint,
    pub identity: Variant,
    pub br: Option<Variant>,
    pub gzip: Option<Variant>,
    /// When the disk last agreed with `fingerprint`.
    checked_at: Mutex<Instant>,
}

impl CachedFile {
    pub(crate) fn new(
        fingerprint: Fingerprint,
        identity: Variant,
        br: Option<Variant>,
        gzip: Option<Variant>,
        now: Instant,
    ) -> Self {
        Self {
            fingerprint,
            identity,
            br,
            gzip,
            checked_at: Mutex::new(now),
        }
    }

    /// The bytes it holds, every variant together.
    fn weight(&self) -> u64 {
        [Some(&self.identity), self.br.as_ref(), self.gzip.as_ref()]
            .into_iter()
            .flatten()
            .map(|variant| variant.body.len() as u64)
            .sum()
    }

    /// The variant in `coding` (`None`: the file itself); the file itself
    /// when that sibling is not kept.
    pub(crate) fn variant(&self, coding: Option<ContentCoding>) -> &Variant {
        let sibling = match coding {
            None => None,
            Some(ContentCoding::Br) => self.br.as_ref(),
            Some(ContentCoding::Gzip) => self.gzip.as_ref(),
        };
        sibling.unwrap_or(&self.identity)
    }
}

/// What [`FileCache::get`] found.
pub(crate) enum Hit {
    /// Checked recently enough: answer with it.
    Fresh(Arc<CachedFile>),
    /// Kept, but due for a check against the disk
    /// ([`FileCache::confirm`] when it still agrees).
    Stale(Arc<CachedFile>),
}

/// One static directory's kept files.
pub(crate) struct FileCache {
    config: FileCacheConfig,
    entries: RwLock<FxHashMap<SafePath, Arc<CachedFile>>>,
    /// The weight of every entry together.
    bytes: AtomicU64,
}

impl FileCache {
    pub(crate) fn new(config: FileCacheConfig) -> Self {
        Self {
            config,
            entries: RwLock::new(FxHashMap::default()),
            bytes: AtomicU64::new(0),
        }
    }

    pub(crate) fn get(&self, path: &SafePath, now: Instant) -> Option<Hit> {
        let entry = self.entries.read().get(path)?.clone();
        let checked_at = *entry.checked_at.lock();
        if now.saturating_duration_since(checked_at) < self.config.revalidate {
            Some(Hit::Fresh(entry))
        } else {
            Some(Hit::Stale(entry))
        }
    }

    /// The disk still agrees with `entry`: it is fresh again from `now`.
    pub(crate) fn confirm(&self, entry: &CachedFile, now: Instant) {
        *entry.checked_at.lock() = now;
    }

    /// Whether a file of `size` bytes with siblings of `siblings` bytes
    /// may be kept: each no larger than `max_file_bytes`, all within
    /// what `max_bytes` has left. Asked before reading them.
    pub(crate) fn admits(&self, size: u64, siblings: u64) -> bool {
        size <= self.config.max_file_bytes
            && siblings <= 2 * self.config.max_file_bytes
            && self.bytes.load(Ordering::Relaxed) + size + siblings <= self.config.max_bytes
    }

    /// Keep `file` for `path` (replacing what another thread kept for it
    /// meanwhile), unless the budget filled up since [`FileCache::admits`].
    pub(crate) fn insert(&self, path: SafePath, file: Arc<CachedFile>) -> bool {
        let weight = file.weight();
        let mut entries = self.entries.write();
        let replaced = entries.get(&path).map_or(0, |old| old.weight());
        let total = self.bytes.load(Ordering::Relaxed) - replaced;
        if total + weight > self.config.max_bytes {
            return false;
        }
        entries.insert(path, file);
        self.bytes.store(total + weight, Ordering::Relaxed);
        true
    }

    /// Drop what is kept for `path` if it is still `stale` (a thread may
    /// have put a new entry in its place meanwhile).
    pub(crate) fn remove(&self, path: &SafePath, stale: &Arc<CachedFile>) {
        let mut entries = self.entries.write();
        if entries
            .get(path)
            .is_some_and(|kept| Arc::ptr_eq(kept, stale))
        {
            entries.remove(path);
            self.bytes.fetch_sub(stale.weight(), Ordering::Relaxed);
        }
    }

    /// The bytes kept (for tests and stats).
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn path(name: &str) -> SafePath {
        SafePath {
            relative: PathBuf::from(name),
            directory: false,
        }
    }

    fn variant(body: &'static [u8]) -> Variant {
        Variant {
            body: Bytes::from_static(body),
            modified_ns: 0,
        }
    }

    fn file(name: &str, body: &'static [u8], now: Instant) -> Arc<CachedFile> {
        let fingerprint = Fingerprint {
            real: PathBuf::from(name),
            file: (body.len() as u64, 1),
            br: None,
            gzip: None,
        };
        Arc::new(CachedFile::new(fingerprint, variant(body), None, None, now))
    }

    fn cache(max_file_bytes: u64, max_bytes: u64) -> FileCache {
        FileCache::new(FileCacheConfig {
            max_file_bytes,
            max_bytes,
            revalidate: Duration::from_secs(1),
        })
    }

    #[test]
    fn a_kept_file_is_fresh_until_revalidate_then_stale_until_confirmed() {
        let cache = cache(100, 1000);
        let start = Instant::now();
        assert!(cache.insert(path("a"), file("a", b"hello", start)));
        assert!(matches!(cache.get(&path("a"), start), Some(Hit::Fresh(_))));
        let later = start + Duration::from_millis(999);
        assert!(matches!(cache.get(&path("a"), later), Some(Hit::Fresh(_))));
        let due = start + Duration::from_secs(1);
        let Some(Hit::Stale(entry)) = cache.get(&path("a"), due) else {
            panic!("due for a check");
        };
        cache.confirm(&entry, due);
        assert!(matches!(cache.get(&path("a"), due), Some(Hit::Fresh(_))));
        assert!(cache.get(&path("b"), due).is_none());
    }

    #[test]
    fn the_budget_bounds_each_file_and_the_whole() {
        let cache = cache(10, 16);
        assert!(cache.admits(10, 0));
        assert!(!cache.admits(11, 0), "larger than a file may be");
        assert!(
            !cache.admits(5, 21),
            "siblings larger than two files may be"
        );
        let now = Instant::now();
        assert!(cache.insert(path("a"), file("a", b"0123456789", now)));
        assert_eq!(cache.bytes(), 10);
        assert!(cache.admits(6, 0));
        assert!(!cache.admits(7, 0), "past the directory's budget");
        assert!(!cache.insert(path("b"), file("b", b"0123456", now)));
        // Replacing an entry counts the new one instead of the old.
        assert!(cache.insert(path("a"), file("a", b"01234", now)));
        assert_eq!(cache.bytes(), 5);
    }

    #[test]
    fn removing_drops_only_the_entry_that_was_seen() {
        let cache = cache(100, 1000);
        let now = Instant::now();
        let old = file("a", b"old", now);
        assert!(cache.insert(path("a"), old.clone()));
        let new = file("a", b"newer", now);
        assert!(cache.insert(path("a"), new));
        cache.remove(&path("a"), &old);
        assert!(cache.get(&path("a"), now).is_some(), "a newer entry stays");
        assert_eq!(cache.bytes(), 5);
        let Some(Hit::Fresh(kept)) = cache.get(&path("a"), now) else {
            panic!("kept");
        };
        cache.remove(&path("a"), &kept);
        assert!(cache.get(&path("a"), now).is_none());
        assert_eq!(cache.bytes(), 0);
    }
}
