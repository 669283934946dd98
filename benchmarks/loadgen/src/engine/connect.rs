//! Opening connections: a non-blocking connect from the connection's source
//! address, then the HTTP upgrade once TCP is up. At most
//! `--connect-concurrency` connections are between these steps at once.

use mio::Token;

use super::Engine;
use crate::conn::Phase;
use crate::dispatch::Stop;
use crate::{handshake, net};

impl Engine {
    pub(super) fn start_connects(&mut self, now: u64) {
        while let Some(idx) = self.core.next_to_open(now) {
            self.conns[idx].phase = Phase::Connecting;
            match self.core.connect(idx, Token(idx)) {
                Ok(stream) => self.conns[idx].stream = Some(stream),
                Err(why) => self.close(idx, why),
            }
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
        let core = &mut self.core;
        let (codec, port) = match &self.publish {
            Some((c, port, n)) if idx < *n => (c, *port),
            _ => (&self.codec, self.port),
        };
        let path = codec.path(&mut core.rng);
        let upgrade = handshake::request(&self.host, port, &path, &mut core.rng);
        conn.out.buf.extend_from_slice(&upgrade.request);
        conn.phase = Phase::Upgrading {
            accept: upgrade.expected_accept,
        };
        self.flush_one(idx);
    }
}
