//! SockJS sessions on the HTTP transports (`session.rs`; `rpc.rs` for
//! those that carry the Switchboard protocol), by route and session id,
//! and their expiry (and a protocol session's handshake deadline).
//!
//! The client chooses session ids, so the table hashes them with the
//! standard library's keyed SipHash, not the connection table's fast hash.
//!
//! **Expiry.** A session without a receiver for its disconnect delay is
//! forgotten (its worker hears `close`). No thread of its own keeps the
//! time: every I/O thread's loop sleeps no later than [`SockJsSessions::
//! next_sweep`] and, once it passes, one of them sweeps the table
//! ([`SockJsSessions::sweep`]). Sweeps are at least [`SWEEP_EVERY`] apart,
//! so sessions that poll (a receiver leaves and the next comes a moment
//! later, thousands of times a second) cost a walk of the table a few times
//! a second, not one per poll.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

mod rpc;
mod session;

pub(crate) use rpc::{CarriedOpening, RpcCarriage};
pub(crate) use session::{close_frame, Forward, Refused, SockJsSession};

use crate::connection::Connection;

/// What a session needs of the server it belongs to (`ServerState`
/// implements it): a trait, so that this module stays below the state it
/// is part of.
pub(crate) trait Host {
    /// The sessions of every SockJS service.
    fn sessions(&self) -> &SockJsSessions;
    /// The session's connection leaves the server (connection table,
    /// channels); its worker hears `close` with `code` and `reason`.
    fn unregister(&self, connection: &Connection, code: u16, reason: &str);
    /// The session never opened: forget its pending `upgrade` hook.
    fn forget_upgrade(&self, id: u64);
    /// Everything the session was sent was taken: its worker hears `drain`.
    fn drained(&self, connection: &Connection);
}

/// Sweeps of the table are at least this far apart: a session outlives its
/// disconnect delay by up to this much.
const SWEEP_EVERY: Duration = Duration::from_millis(250);
/// `next_sweep` when no session waits to expire.
const NEVER: u64 = u64::MAX;

/// A session's key: its route and id.
type Key = (usize, Box<str>);

pub struct SockJsSessions {
    sessions: Mutex<HashMap<Key, Arc<SockJsSession>>>,
    /// The next sweep, in nanoseconds after `epoch` (`NEVER`: none).
    next_sweep: AtomicU64,
    /// Only one thread sweeps at a time; the others go on.
    sweeping: Mutex<()>,
    epoch: Instant,
}

impl SockJsSessions {
    pub fn new() -> Self {
        Self {
            sessions: Mutex::default(),
            next_sweep: AtomicU64::new(NEVER),
            sweeping: Mutex::default(),
            epoch: Instant::now(),
        }
    }

    /// The session `id` of `route`, if it lives.
    pub(crate) fn get(&self, route: usize, id: &str) -> Option<Arc<SockJsSession>> {
        self.sessions.lock().get(&(route, id.into())).cloned()
    }

    /// The session `id` of `route`, made by `create` when there is none;
    /// with whether it was made now.
    pub(crate) fn get_or_create(
        &self,
        route: usize,
        id: &str,
        create: impl FnOnce() -> Arc<SockJsSession>,
    ) -> (Arc<SockJsSession>, bool) {
        let mut sessions = self.sessions.lock();
        if let Some(session) = sessions.get(&(route, id.into())) {
            return (session.clone(), false);
        }
        let session = create();
        sessions.insert((route, id.into()), session.clone());
        (session, true)
    }

    /// Forget a session now (its hook refused it).
    pub(crate) fn remove(&self, session: &SockJsSession) {
        let key = (session.route, session.key.clone());
        let mut sessions = self.sessions.lock();
        if sessions
            .get(&key)
            .is_some_and(|s| std::ptr::eq(&**s, session))
        {
            sessions.remove(&key);
        }
    }

    /// A session may expire at `at`: sweep by then.
    pub(crate) fn expire_at(&self, at: Instant) {
        let nanos = at.saturating_duration_since(self.epoch).as_nanos() as u64;
        self.next_sweep.fetch_min(nanos, Ordering::AcqRel);
    }

    /// When the next sweep is due, if any session waits to expire.
    pub(crate) fn next_sweep(&self) -> Option<Instant> {
        match self.next_sweep.load(Ordering::Acquire) {
            NEVER => None,
            nanos => Some(self.epoch + Duration::from_nanos(nanos)),
        }
    }

    /// If a sweep is due (and no other thread sweeps): forget the sessions
    /// whose receiver left a disconnect delay ago, close the protocol
    /// sessions that sent no HELLO in time, and set the next sweep.
    pub(crate) fn sweep(&self, server: &dyn Host, now: Instant) {
        if self.next_sweep().is_none_or(|due| due > now) {
            return;
        }
        let Some(_sweeping) = self.sweeping.try_lock() else {
            return;
        };
        self.next_sweep.store(NEVER, Ordering::Release);
        let mut expired = Vec::new();
        let mut silent = Vec::new();
        let mut next: Option<Instant> = None;
        self.sessions.lock().retain(|_, session| {
            match session.hello_deadline() {
                Some(at) if at <= now => silent.push(session.clone()),
                Some(at) => next = Some(next.map_or(at, |n| n.min(at))),
                None => {}
            }
            match session.expires_at() {
                Some(at) if at <= now => {
                    expired.push(session.clone());
                    return false;
                }
                Some(at) => next = Some(next.map_or(at, |n| n.min(at))),
                None => {}
            }
            true
        });
        if let Some(at) = next {
            self.expire_at(at.max(now + SWEEP_EVERY));
        }
        for session in silent {
            session.hello_timed_out();
        }
        for session in expired {
            session.expire(server);
        }
    }

    /// The server shuts down: every session closes (`1001`), and those
    /// without a receiver are forgotten now. Receivers that are attached
    /// deliver the close frame and end.
    pub(crate) fn shut_down(&self, server: &dyn Host) {
        let sessions: Vec<_> = self.sessions.lock().values().cloned().collect();
        for session in sessions {
            let frame = switchboard_proto::sockjs::CloseReason {
                code: 1001,
                reason: "server shutting down",
            };
            if session.expires_at().is_some() {
                session.close(server, frame, (1001, ""));
            } else {
                // A protocol session is told in a GO_AWAY too.
                session.connection.enqueue(
                    crate::outbound::OutItem::Close {
                        code: frame.code,
                        reason: frame.reason.into(),
                        go_away: session.rpc.is_some(),
                    },
                    0,
                );
            }
        }
        self.sessions.lock().retain(|_, s| s.expires_at().is_none());
    }
}

#[cfg(test)]
mod tests;
