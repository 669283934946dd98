//! The default connection limit, derived from the open-file limit.
//!
//! Every connection holds a descriptor, so a server can never hold more
//! connections than the process may open files. Past that limit `accept`
//! fails with `EMFILE`: the listener backs off and a new client waits in the
//! kernel's backlog with no answer (its connect completes, nothing follows),
//! where `max_connections` would have answered `503
//! ERR_SERVER_AT_CAPACITY` at once. So the default sits below the limit,
//! by a reserve for everything else the process opens.

/// The default where the open-file limit cannot be read or is unlimited
/// (and the default before it followed the limit).
pub const FALLBACK_MAX_CONNECTIONS: usize = 100_000;

/// The fewest descriptors kept back from connections: Node.js itself holds
/// about 20 after start-up, each worker thread 4 more (measured with 0-16
/// workers), each listener one, and a refused client holds one while it is
/// told 503.
pub const FD_RESERVE_MIN: u64 = 64;

/// The most descriptors kept back from connections: room for the app's own
/// files, database and outgoing connections without giving up more than a
/// few percent of a large limit. The benchmark suite leaves the same 1,000
/// (`benchmarks/harness/scenarios.mjs`).
pub const FD_RESERVE_MAX: u64 = 1000;

/// Descriptors kept back from connections under a limit of `limit`: an
/// eighth of it, within [`FD_RESERVE_MIN`]..=[`FD_RESERVE_MAX`], and never
/// more than half of it (so a tiny limit still admits connections).
pub fn fd_reserve(limit: u64) -> u64 {
    (limit / 8)
        .clamp(FD_RESERVE_MIN, FD_RESERVE_MAX)
        .min(limit / 2)
}

/// The default `max_connections` for an open-file limit (`None`: unknown or
/// unlimited): the limit minus [`fd_reserve`], at least 1.
pub fn max_connections_for(limit: Option<u64>) -> usize {
    match limit {
        None => FALLBACK_MAX_CONNECTIONS,
        Some(limit) => {
            let connections = limit.saturating_sub(fd_reserve(limit)).max(1);
            // Tokio's semaphore holds at most usize::MAX >> 3 permits.
            usize::try_from(connections).map_or(usize::MAX >> 3, |c| c.min(usize::MAX >> 3))
        }
    }
}

/// The process's soft `RLIMIT_NOFILE` (the limit `open` and `accept`
/// enforce), or `None` when it cannot be read or is unlimited. Node.js
/// raises the soft limit to the hard one at start-up, so in a Node process
/// this is the hard limit unless someone lowered it since.
#[cfg(unix)]
#[allow(unsafe_code)]
pub fn open_file_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a live, writable `rlimit` for the kernel to fill;
    // getrlimit reads nothing else.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    if rc != 0 || limit.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    // `rlim_t` is u64 on 64-bit Linux and macOS but not on every target.
    #[allow(clippy::useless_conversion)]
    u64::try_from(limit.rlim_cur).ok()
}

#[cfg(not(unix))]
pub fn open_file_limit() -> Option<u64> {
    None
}

/// The default `max_connections` of a server created now.
pub fn default_max_connections() -> usize {
    max_connections_for(open_file_limit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_is_an_eighth_within_bounds() {
        assert_eq!(fd_reserve(20_000), 1000);
        assert_eq!(fd_reserve(1_048_576), 1000);
        assert_eq!(fd_reserve(4096), 512);
        assert_eq!(fd_reserve(512), 64);
        assert_eq!(fd_reserve(100), 50);
        assert_eq!(fd_reserve(1), 0);
    }

    #[test]
    fn connections_fit_under_the_limit() {
        // This machine: a hard limit of 20,000 that cannot be raised.
        assert_eq!(max_connections_for(Some(20_000)), 19_000);
        assert_eq!(max_connections_for(Some(1_048_576)), 1_047_576);
        assert_eq!(max_connections_for(Some(512)), 448);
        assert_eq!(max_connections_for(Some(64)), 32);
        assert_eq!(max_connections_for(Some(1)), 1);
        assert_eq!(max_connections_for(Some(0)), 1);
        assert_eq!(max_connections_for(None), FALLBACK_MAX_CONNECTIONS);
        assert_eq!(max_connections_for(Some(u64::MAX)), usize::MAX >> 3);
        for limit in [64, 100, 256, 1024, 20_000, 65_536] {
            let connections = max_connections_for(Some(limit)) as u64;
            assert!(connections < limit, "{limit}");
            assert!(
                limit - connections >= FD_RESERVE_MIN.min(limit / 2),
                "{limit}"
            );
        }
    }

    // Linux never reports an unlimited RLIMIT_NOFILE (it cannot exceed
    // fs.nr_open), so the limit is always there to read.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_limit_of_this_process_is_read() {
        let limit = open_file_limit().expect("a finite RLIMIT_NOFILE");
        assert!(limit > 0);
        assert_eq!(default_max_connections(), max_connections_for(Some(limit)));
    }
}
