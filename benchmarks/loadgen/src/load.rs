//! What the scenarios (`scenarios.rs`) need of an engine, so that one
//! scenario runs over every transport: the WebSocket engine (`engine.rs`,
//! for the `ws`, `socketio` and `sockjs` framings) and SockJS's
//! xhr-streaming engine (`xhr/`). An engine opens its clients, carries the
//! scenario's messages (closed loop or paced), and counts into its
//! [`Stats`]; the scenarios say when.

use mio::Events;

use crate::engine_core::EngineCore;
use crate::metrics::{Stats, XhrFigures};
use crate::pacer::Pacer;

/// The longest a connect phase (or the wait for `joined`) may go without a
/// client becoming ready.
const STALL_NS: u64 = 30_000_000_000;

pub trait Load {
    /// What every engine keeps alike (`engine_core.rs`): the methods below
    /// that only read or set it are written once, here.
    fn core(&self) -> &EngineCore;
    fn core_mut(&mut self) -> &mut EngineCore;
    /// Clients in all.
    fn total(&self) -> usize;
    /// One loop turn: waits for readiness (or the next timer), then reads,
    /// sends and starts clients.
    fn turn(&mut self, events: &mut Events, deadline_ns: u64) -> Result<(), String>;
    /// Closed loops: every ready client sends its first K messages; from
    /// then on each own message coming back sends the next.
    fn start_closed_loop(&mut self);

    /// Nanoseconds since the load generator started: the clock of the
    /// payload stamps.
    #[inline]
    fn now(&self) -> u64 {
        self.core().now()
    }
    fn stats(&self) -> &Stats {
        &self.core().stats
    }
    fn stats_mut(&mut self) -> &mut Stats {
        &mut self.core_mut().stats
    }
    /// Clients that can carry messages.
    fn ready(&self) -> usize {
        self.core().ready
    }
    /// Clients being opened (counted against `--connect-concurrency`).
    fn opening(&self) -> usize {
        self.core().opening
    }
    /// channels: clients answered `joined`.
    fn joined(&self) -> usize {
        self.core().joined
    }
    /// From now on a lost client is counted, not reopened.
    fn end_connect_phase(&mut self) {
        self.core_mut().connect_phase_over = true;
    }
    /// Open loop: from now on, `rate` messages/s over all clients.
    fn set_rate(&mut self, rate: f64) {
        let core = self.core_mut();
        core.pacer = Some(Pacer::new(core.now(), rate));
    }

    /// Runs the loop until `done` holds or the clock reaches `deadline_ns`;
    /// fails when the run cannot go on (the server went away, a client
    /// could not be opened).
    fn run(&mut self, deadline_ns: u64, done: impl Fn(&Self) -> bool) -> Result<(), String> {
        let mut events = Events::with_capacity(1024);
        loop {
            if let Some(e) = self.core_mut().fatal.take() {
                return Err(e);
            }
            if done(self) || self.now() >= deadline_ns {
                return Ok(());
            }
            self.turn(&mut events, deadline_ns)?;
        }
    }
    /// The measured window starts: clear what it counts.
    fn reset_window(&mut self) {
        self.stats_mut().reset_window();
    }
    /// The transport's own figures of the window (`"xhr_streaming"` in the
    /// step's JSON); None for WebSocket.
    fn xhr_figures(&self) -> Option<XhrFigures> {
        None
    }

    /// Opens every client; fails when one cannot be opened after its
    /// attempts, or when none becomes ready for 30 s.
    fn connect_all(&mut self) -> Result<(), String> {
        let total = self.total();
        let (mut last_ready, mut last_change) = (0, self.now());
        while self.ready() < total {
            let deadline = self.now() + 1_000_000_000;
            self.run(deadline, |e| e.ready() == total)?;
            let now = self.now();
            if self.ready() != last_ready {
                (last_ready, last_change) = (self.ready(), now);
            } else if now - last_change > STALL_NS {
                return Err(format!(
                    "connections stalled: {} of {total} open, {} handshaking, none opened for 30 s",
                    self.ready(),
                    self.opening()
                ));
            }
            if self.ready() < total {
                eprintln!(
                    "progress: connecting: {}/{total} open, {} handshaking",
                    self.ready(),
                    self.opening()
                );
            }
        }
        self.end_connect_phase();
        Ok(())
    }

    /// channels: waits until every client has been answered `joined`.
    fn wait_joined(&mut self) -> Result<(), String> {
        let deadline = self.now() + STALL_NS;
        self.run(deadline, |e| e.joined() >= e.ready())?;
        if self.joined() < self.ready() {
            return Err(format!(
                "only {} of {} connections were answered `joined` within 30 s",
                self.joined(),
                self.ready()
            ));
        }
        Ok(())
    }

    /// Runs the loop for `secs` seconds.
    fn run_for(&mut self, secs: f64) -> Result<(), String> {
        let deadline = self.now() + (secs * 1e9) as u64;
        self.run(deadline, |_| false)
    }
}
