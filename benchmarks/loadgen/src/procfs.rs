//! The server's CPU time, memory and threads, read from /proc/<pid>, and
//! the watch every load loop keeps on it ([`Watch`]). The contract
//! (SCENARIOS.md) keeps every server thread in the one process the runner
//! started, so the process-wide lines cover all of it.

use std::fs;

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProcSample {
    pub user_s: f64,
    pub sys_s: f64,
    pub rss_kb: u64,
    pub rss_peak_kb: u64,
    pub threads: u64,
}

/// utime and stime (in clock ticks) from the text of /proc/<pid>/stat. The
/// command name in parentheses may itself hold spaces and parentheses, so
/// fields are counted from the last `)`.
pub fn parse_stat_times(stat: &str) -> Option<(u64, u64)> {
    let after = &stat[stat.rfind(')')? + 1..];
    // After the name: state(3) ppid pgrp session tty_nr tpgid flags minflt
    // cminflt majflt cmajflt utime(14) stime(15).
    let mut fields = after.split_ascii_whitespace().skip(11);
    let utime = fields.next()?.parse().ok()?;
    let stime = fields.next()?.parse().ok()?;
    Some((utime, stime))
}

/// The state letter of /proc/<pid>/stat (`Z` for a zombie).
pub fn parse_stat_state(stat: &str) -> Option<char> {
    stat[stat.rfind(')')? + 1..]
        .split_ascii_whitespace()
        .next()?
        .chars()
        .next()
}

/// A `Name:   <number> kB`-style line of /proc/<pid>/status.
pub fn status_field(status: &str, name: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?.strip_prefix(':')?;
        rest.split_ascii_whitespace().next()?.parse().ok()
    })
}

#[derive(Clone, Copy, Debug)]
pub struct Proc {
    pub pid: u32,
    ticks_per_s: f64,
}

impl Proc {
    pub fn new(pid: u32, ticks_per_s: u64) -> Proc {
        Proc {
            pid,
            ticks_per_s: ticks_per_s as f64,
        }
    }

    /// Whether the process still runs (a zombie has gone away).
    pub fn alive(&self) -> bool {
        match fs::read_to_string(format!("/proc/{}/stat", self.pid)) {
            Ok(stat) => parse_stat_state(&stat).is_some_and(|s| s != 'Z' && s != 'X'),
            Err(_) => false,
        }
    }

    pub fn sample(&self) -> Result<ProcSample, String> {
        let read = |file: &str| {
            fs::read_to_string(format!("/proc/{}/{file}", self.pid))
                .map_err(|e| format!("cannot read /proc/{}/{file}: {e}", self.pid))
        };
        let stat = read("stat")?;
        let status = read("status")?;
        let (utime, stime) = parse_stat_times(&stat)
            .ok_or_else(|| format!("cannot parse /proc/{}/stat", self.pid))?;
        Ok(ProcSample {
            user_s: utime as f64 / self.ticks_per_s,
            sys_s: stime as f64 / self.ticks_per_s,
            rss_kb: status_field(&status, "VmRSS").unwrap_or(0),
            rss_peak_kb: status_field(&status, "VmHWM").unwrap_or(0),
            threads: status_field(&status, "Threads").unwrap_or(0),
        })
    }
}

/// How often a load loop checks that the server still runs: often enough
/// that a crash ends the run at once, rarely enough that the /proc reads
/// cost nothing.
const WATCH_EVERY_NS: u64 = 500_000_000;

/// The server process as a load loop watches it (`--server-pid`), so that
/// a run against a server that went away ends with that error instead of
/// counting its connections lost.
pub struct Watch {
    server: Option<Proc>,
    next_ns: u64,
}

impl Watch {
    /// No server: nothing to watch.
    pub fn new(server: Option<Proc>) -> Watch {
        Watch { server, next_ns: 0 }
    }

    /// When the loop must wake up for the next check; None without a server.
    pub fn next_ns(&self) -> Option<u64> {
        self.server.map(|_| self.next_ns)
    }

    /// At the end of a loop turn, the loop's clock at `now_ns`: fails when a
    /// check is due and the server went away.
    pub fn check(&mut self, now_ns: u64) -> Result<(), String> {
        if now_ns >= self.next_ns {
            self.next_ns = now_ns + WATCH_EVERY_NS;
            if let Some(server) = &self.server {
                if !server.alive() {
                    return Err(format!("the server (pid {}) went away", server.pid));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_awkward_name() {
        let stat = "4242 (node (worker) 1) S 1 4242 4242 0 -1 4194560 9466 0 0 0 317 42 0 0 20 0 11 0 1 2 3";
        assert_eq!(parse_stat_times(stat), Some((317, 42)));
        assert_eq!(parse_stat_state(stat), Some('S'));
        assert_eq!(parse_stat_times("garbage"), None);
    }

    #[test]
    fn status_lines() {
        let status = "Name:\tnode\nVmHWM:\t   90211 kB\nVmRSS:\t   81234 kB\nThreads:\t5\n";
        assert_eq!(status_field(status, "VmRSS"), Some(81234));
        assert_eq!(status_field(status, "VmHWM"), Some(90211));
        assert_eq!(status_field(status, "Threads"), Some(5));
        assert_eq!(status_field(status, "VmSwap"), None);
    }

    #[test]
    fn reads_own_process() {
        let me = Proc::new(std::process::id(), crate::sys::clock_ticks_per_second());
        assert!(me.alive());
        let s = me.sample().unwrap();
        assert!(s.rss_kb > 0 && s.rss_peak_kb >= s.rss_kb && s.threads >= 1);
        assert!(!Proc::new(u32::MAX, 100).alive());
    }

    #[test]
    fn watch() {
        let mut none = Watch::new(None);
        assert_eq!(none.next_ns(), None);
        assert_eq!(none.check(0), Ok(()));
        let me = Proc::new(std::process::id(), 100);
        let mut w = Watch::new(Some(me));
        assert_eq!(w.next_ns(), Some(0));
        assert_eq!(w.check(7), Ok(()));
        assert_eq!(w.next_ns(), Some(7 + WATCH_EVERY_NS));
        let mut gone = Watch::new(Some(Proc::new(u32::MAX, 100)));
        assert!(gone.check(0).unwrap_err().contains("went away"));
    }
}
