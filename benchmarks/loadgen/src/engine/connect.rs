//! Opening connections: a non-blocking connect from the connection's source
//! address, then the HTTP upgrade once TCP is up. At most
//! `--connect-concurrency` connections are between these steps at once.

use mio::{Interest, Token};

use super::Engine;
use crate::conn::Phase;
use crate::dispatch::Stop;
use crate::{handshake, net};

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
            self.start_connect(idx as usize);
        }
    }

    fn start_connect(&mut self, idx: usize) {
        let source = net::source_addr(idx, self.source_addrs);
        self.opening += 1;
        self.conns[idx].phase = Phase::Connecting;
        match net::open(self.dest, source) {
            Ok(mut stream) => {
                if let Err(e) = self.poll.registry().register(
                    &mut stream,
                    Token(idx),
                    Interest::READABLE | Interest::WRITABLE,
                ) {
                    self.close(idx, Stop::Closed(format!("epoll registration failed: {e}")));
                    return;
                }
                self.conns[idx].stream = Some(stream);
            }
            Err(e) => self.close(idx, Stop::Closed(net::connect_error(source, &e))),
        }
    }

    /// A writable (or failed) socket in the connecting phase: TCP is up, or
    /// it failed.
    pub(super) fn finish_connect(&mut self, idx: usize) {
        let conn = &mut self.conns[idx];
        let Some(stream) = conn.stream.as_mut() else {
            return;
        };
        match net::connect_done(stream) {
            Ok(true) => {}
            // Not connected yet: a spurious wake-up.
            Ok(false) => return,
            Err(e) => return self.close(idx, Stop::Closed(format!("connect: {e}"))),
        }
        let path = self.codec.path(&mut self.rng);
        let upgrade = handshake::request(&self.host, self.port, &path, &mut self.rng);
        conn.out.buf.extend_from_slice(&upgrade.request);
        conn.phase = Phase::Upgrading {
            accept: upgrade.expected_accept,
        };
        self.flush_one(idx);
    }
}
