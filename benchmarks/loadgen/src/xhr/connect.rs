//! Opening a client's legs: its stream when the client starts (at most
//! `--connect-concurrency` clients opening at once) and whenever the
//! stream needs a new connection, and its send leg when a batch is to go
//! and no connection is open (the first send, or after the server closed
//! an idle keep-alive connection).

use mio::Interest;

use super::client::{token, Phase, Sending, RECV, SEND};
use super::request;
use super::Engine;
use crate::dispatch::Stop;
use crate::net;

impl Engine {
    pub(super) fn start_connects(&mut self, now: u64) {
        while let Some(&(at, idx)) = self.retry.front() {
            if at > now {
                break;
            }
            self.retry.pop_front();
            self.queue.push_front(idx);
        }
        while self.opening < self.concurrency {
            let Some(idx) = self.queue.pop_front() else {
                break;
            };
            let idx = idx as usize;
            // A new session for every attempt: the last one may linger.
            let base = request::session_base(self.endpoint, idx, &mut self.rng);
            let c = &mut self.clients[idx];
            c.base = base;
            c.phase = Phase::Opening;
            self.opening += 1;
            self.open_leg(idx, RECV);
        }
    }

    /// Starts connecting a leg; on success its request is written when the
    /// connect completes (`leg_connected`).
    pub(super) fn open_leg(&mut self, idx: usize, leg: usize) {
        let source = net::source_addr(idx, self.source_addrs);
        let mut stream = match net::open(self.dest, source) {
            Ok(s) => s,
            Err(e) => return self.close_client(idx, Stop::Closed(net::connect_error(source, &e))),
        };
        if let Err(e) = self.poll.registry().register(
            &mut stream,
            token(idx, leg),
            Interest::READABLE | Interest::WRITABLE,
        ) {
            return self.close_client(idx, Stop::Closed(format!("epoll registration failed: {e}")));
        }
        if leg == SEND && self.stats.measuring {
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
        if self.stats.measuring {
            self.figures.stream_reconnects += 1;
        }
        self.open_leg(idx, RECV);
    }
}
