//! One vectored write to a socket named by its file descriptor, for the
//! direct writes of `Outbound::write_direct` (a worker thread writing to a
//! socket its connection's I/O thread owns).

use std::io::{self, IoSlice};
use std::mem::ManuallyDrop;
use std::os::fd::{FromRawFd, RawFd};

/// `writev(fd, slices)`, non-blocking as the socket is; `send` when there
/// is one slice (see [`crate::stream::write_slices`]).
///
/// The caller must guarantee that `fd` is an open socket for the whole
/// call. `Outbound` does: it hands out a descriptor only while its state
/// says `Writer::Direct(fd)`, and only under its lock, which it holds
/// during this call; the I/O thread sets the state back (`take`, `close`)
/// under the same lock before it closes or reuses the descriptor.
#[allow(unsafe_code)]
pub(crate) fn write_vectored(fd: RawFd, slices: &[IoSlice<'_>]) -> io::Result<usize> {
    // SAFETY: `fd` is an open socket for the duration of this call (see
    // above). The `TcpStream` only borrows it: `ManuallyDrop` keeps it from
    // closing the descriptor, and `write_vectored` on any stream socket
    // (TCP or Unix) is a plain `writev`.
    let socket = ManuallyDrop::new(unsafe { std::net::TcpStream::from_raw_fd(fd) });
    crate::stream::write_slices(&mut &*socket, slices)
}
