//! The three libc calls the load generator needs and std does not wrap. The
//! workspace denies `unsafe_code`; each call below is allowed individually,
//! with the reason it is sound.

use std::io;

/// Clock ticks per second, the unit of utime and stime in /proc/<pid>/stat.
pub fn clock_ticks_per_second() -> u64 {
    // SAFETY: sysconf takes an integer and returns an integer; it reads no
    // memory of ours and has no preconditions.
    #[allow(unsafe_code)]
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as u64
    } else {
        100 // Linux's USER_HZ on every architecture it is built for.
    }
}

/// This process's user and system CPU time, in seconds.
pub fn self_cpu_seconds() -> (f64, f64) {
    // SAFETY: an all-zero `rusage` is a valid value of that plain C struct.
    #[allow(unsafe_code)]
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a live, writable, correctly typed struct for the
    // kernel to fill; RUSAGE_SELF is a valid `who`.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    if rc != 0 {
        return (0.0, 0.0);
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(usage.ru_utime), secs(usage.ru_stime))
}

/// Raises the soft limit on open files to the hard limit; returns the new
/// soft limit (each connection is one file descriptor).
pub fn raise_fd_limit() -> io::Result<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a live, writable `rlimit` for the kernel to fill.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    if lim.rlim_cur < lim.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: `raised` is a live `rlimit` the kernel only reads.
        #[allow(unsafe_code)]
        let rc = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        lim.rlim_cur = lim.rlim_max;
    }
    Ok(lim.rlim_cur)
}

/// File descriptors a load generator needs besides its connections
/// (stdio, epoll, /proc reads).
pub const SPARE_FDS: u64 = 16;

/// Raises the open-file limit (see [`raise_fd_limit`]) and checks that
/// `connections` sockets fit in it with [`SPARE_FDS`] to spare; the error
/// says why not, for the command line.
pub fn fit_connections(connections: usize) -> Result<(), String> {
    fit_sockets(connections, 1)
}

/// As [`fit_connections`] for clients of `per_client` sockets each (an
/// xhr-streaming client that sends has two).
pub fn fit_sockets(connections: usize, per_client: usize) -> Result<(), String> {
    let limit =
        raise_fd_limit().map_err(|e| format!("cannot read or raise the open-file limit: {e}"))?;
    let needed = (connections * per_client) as u64 + SPARE_FDS;
    if needed > limit {
        let each = if per_client > 1 {
            format!(" ({per_client} sockets each)")
        } else {
            String::new()
        };
        return Err(format!(
            "--connections {connections}{each} needs {needed} file descriptors, but this process may open only {limit} \
             (the hard RLIMIT_NOFILE)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn sane_values() {
        assert!(super::clock_ticks_per_second() >= 100);
        let limit = super::raise_fd_limit().unwrap();
        assert!(limit >= 256);
        let (user, sys) = super::self_cpu_seconds();
        assert!(user >= 0.0 && sys >= 0.0);
    }
}
