//! How a request's body crosses to the worker.
//!
//! A body whose length is known and at most `body_window` is gathered here,
//! across reads, into one buffer of its own, and crosses whole when its last
//! byte arrived (`HTTP_BODY_OWNED`): `req.buffer()` then hands that buffer to
//! the handler as it is. Read in pieces, the same body was copied into the
//! event batch piece by piece, then copied again in JavaScript to join the
//! pieces (a view would have kept the whole batch alive). The second copy
//! went through V8's allocator, and at upload rates its short-lived
//! external memory forced a young collection every few hundred requests.
//! The window bounds what a gathered body holds, as it bounds what a body
//! in pieces holds unconsumed.
//!
//! Longer bodies, and chunked ones (whose length is not known), cross in
//! pieces as they are read, within the window: a handler can stream an
//! upload of any size in bounded memory.

use super::{Core, Machine};
use crate::events::Record;

/// A piece at least this long crosses in its own buffer rather than inside
/// the batch; below it, a buffer of its own costs more (an allocation and a
/// finalizer in JavaScript) than the copy it saves. Gathering starts only
/// for bodies at least this long, for the same reason.
pub(super) const OWNED_BODY_PIECE_BYTES: usize = 16 * 1024;

impl Core {
    /// `data`, the next bytes of the body being read (`last`: its end; the
    /// decoder knows `remaining` bytes still to come, if it knows), for the
    /// worker.
    pub(super) fn body_piece(
        &mut self,
        machine: &mut Machine,
        data: &[u8],
        last: bool,
        remaining: Option<u64>,
    ) {
        if self.discarding {
            // The handler answered without the rest: nothing more crosses.
            self.gathered = Vec::new();
            return;
        }
        if !self.gathered.is_empty() {
            self.gathered.extend_from_slice(data);
            if last {
                let whole = std::mem::take(&mut self.gathered);
                self.send_piece(machine, whole, true);
            }
            return;
        }
        if !last {
            if let Some(rest) = remaining {
                let whole = data.len() as u64 + rest;
                let window = machine.config().http.body_window as u64;
                if whole >= OWNED_BODY_PIECE_BYTES as u64 && whole <= window {
                    // Sized once: the body's length is declared.
                    let mut gathered = Vec::with_capacity(whole as usize);
                    gathered.extend_from_slice(data);
                    self.gathered = gathered;
                    return;
                }
            }
        }
        if data.len() >= OWNED_BODY_PIECE_BYTES {
            self.send_piece(machine, data.to_vec(), last);
        } else {
            let id = machine.connection.id;
            machine.queue().push(&Record::HttpBody { id, last, data });
            self.body_sent += data.len() as u64;
        }
    }

    /// Hand `piece` over in its own buffer.
    fn send_piece(&mut self, machine: &mut Machine, piece: Vec<u8>, last: bool) {
        let id = machine.connection.id;
        self.body_sent += piece.len() as u64;
        machine
            .queue()
            .push_owned(piece, |index| Record::HttpBodyOwned { id, last, index });
    }
}
