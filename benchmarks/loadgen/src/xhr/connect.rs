//! Opening a client's legs: its stream when the client starts (at most
//! `--connect-concurrency` clients opening at once) and whenever the
//! stream needs a new connection, and its send leg when a batch is to go
//! and no connection is open (the first send, or after the server closed
//! an idle keep-alive connection).

use super::client::{token, Phase, Sending, RECV, SEND};
use super::request;
use super::Engine;
use crate::dispatch::Stop;
use crate::net;

impl Engine {
    pub(super) fn start_connects(&mut self, now: u64) {
        while let Some(idx) = self.core.next_to_open(now) {
            // A new session for every attempt: the last one may linger.
            let base = request::session_base(self.endpoint, idx, &mut self.core.rng);
            let c = &mut self.clients[idx];
            c.base = base;
            c.phase = Phase::Opening;
            self.open_leg(idx, RECV);
        }
    }

    /// Starts connecting a leg; on success its request is written when the
    /// connect completes (`leg_connected`).
    pub(super) fn open_leg(&mut self, idx: usize, leg: usize) {
        let stream = match self.core.connect(idx, token(idx, leg)) {
            Ok(s) => s,
            Err(why) => return self.close_client(idx, why),
        };
        if leg == SEND && self.core.stats.measuring {
            self.figures.send_connects += 1;
        }
        let l = self.clients[idx].leg(leg);
        l.stream = Some(stream);
        l.connecting = true;
        l.carry.clear();
    }

    /// A writable (or failed) socket whose connect was in progress.
    pub(super) fn leg_connected(&mut self, idx: usize, leg: usize) {
        let c = &mut self.clients[idx];
        let l = c.leg(leg);
        let Some(stream) = l.stream.as_ref() else {
            return;
        };
        match net::connect_done(stream) {
            Ok(true) => {}
            // Not connected yet: a spurious wake-up.
            Ok(false) => return,
            Err(e) => return self.close_client(idx, Stop::Closed(format!("connect: {e}"))),
        }
        l.connecting = false;
        if leg == RECV {
            c.decoder.reset();
            request::write_streaming(&mut c.recv.out.buf, &c.base, &self.host);
        } else {
            c.send_parser = crate::http::response::Parser::until_close();
            if matches!(c.sending, Sending::InFlight { .. }) {
                c.send.out.buf.extend_from_slice(&c.request);
            }
        }
        self.flush_leg(idx, leg);
    }

    /// The stream needs a new connection (its response ended with the old
    /// one, or the server closed it between responses): the session goes on.
    pub(super) fn reopen_stream(&mut self, idx: usize) {
        self.drop_leg(idx, RECV);
        if self.core.stats.measuring {
            self.figures.stream_reconnects += 1;
        }
        self.open_leg(idx, RECV);
    }
}
