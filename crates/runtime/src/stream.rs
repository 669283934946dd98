//! The byte streams a connection runs on: TCP, Unix, and TLS over TCP, as
//! one enum with the non-blocking calls the reactor needs. Reads go into a
//! buffer the caller owns (one per I/O thread), so an idle connection owns
//! no buffer; writes are vectored.

use std::io::{self, IoSlice, Read, Write};
use std::net::Shutdown;
use std::os::fd::{AsRawFd, RawFd};

use mio::net::{TcpStream, UnixStream};
use mio::{Interest, Registry, Token};

use crate::tls::{TlsInfo, TlsStream};

pub(crate) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    /// Boxed: rustls's state is large, and plain connections must not pay
    /// for it.
    Tls(Box<TlsStream>),
}

impl Stream {
    /// Read what is available; `Ok(0)` is the end of the stream, and
    /// `WouldBlock` means nothing more for now.
    pub(crate) fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buffer),
            Stream::Unix(s) => s.read(buffer),
            Stream::Tls(s) => s.read(buffer),
        }
    }

    /// Write without waiting; `WouldBlock` when the socket is full.
    pub(crate) fn write_vectored(&mut self, slices: &[IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => write_slices(s, slices),
            Stream::Unix(s) => write_slices(s, slices),
            Stream::Tls(s) => s.write_vectored(slices),
        }
    }

    /// Bytes accepted by an earlier write that are not on the socket yet
    /// (TLS records); [`Stream::flush_buffered`] pushes them.
    pub(crate) fn has_buffered_output(&self) -> bool {
        match self {
            Stream::Tls(s) => s.has_buffered_output(),
            _ => false,
        }
    }

    /// Push out what [`Stream::has_buffered_output`] reports; `Ok` also
    /// when the socket is full.
    pub(crate) fn flush_buffered(&mut self) -> io::Result<()> {
        match self {
            Stream::Tls(s) => s.flush_records(),
            _ => Ok(()),
        }
    }

    /// Whether, after a read that did not fill the caller's buffer, more
    /// may be waiting without a new readiness edge. A plain socket's short
    /// read emptied its receive queue (the next arrival brings an edge); a
    /// TLS stream's did not: rustls takes one slice of ciphertext at a
    /// time, so it is read again until the socket would block.
    pub(crate) fn may_have_more(&self) -> bool {
        matches!(self, Stream::Tls(_))
    }

    /// What the TLS handshake settled; `None` for plain streams and before
    /// the handshake is done.
    pub(crate) fn tls_info(&self) -> Option<TlsInfo> {
        match self {
            Stream::Tls(s) => s.info(),
            _ => None,
        }
    }

    /// No more writes (the peer reads the end of the stream); a TLS stream
    /// sends its close_notify first, as far as the socket takes it.
    pub(crate) fn shutdown_write(&mut self) {
        let _ = match self {
            Stream::Tcp(s) => s.shutdown(Shutdown::Write),
            Stream::Unix(s) => s.shutdown(Shutdown::Write),
            Stream::Tls(s) => s.shutdown_write(),
        };
    }

    /// The socket other threads may write to directly (see
    /// `Outbound::write_direct`): a plain stream's; none for TLS, whose
    /// records only this thread's rustls state can make.
    pub(crate) fn direct_fd(&self) -> Option<RawFd> {
        match self {
            Stream::Tcp(s) => Some(s.as_raw_fd()),
            Stream::Unix(s) => Some(s.as_raw_fd()),
            Stream::Tls(_) => None,
        }
    }

    /// Register for both readiness kinds, edge-triggered, once: the reactor
    /// never re-registers (a readable edge comes with each arrival, a
    /// writable edge after a write that would block).
    pub(crate) fn register(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        let interest = Interest::READABLE | Interest::WRITABLE;
        match self {
            Stream::Tcp(s) => registry.register(s, token, interest),
            Stream::Unix(s) => registry.register(s, token, interest),
            Stream::Tls(s) => registry.register(s.tcp_mut(), token, interest),
        }
    }
}

/// `slices` to a socket: one `send` for a single slice (the common case: a
/// response or a batch of frames already in one buffer), `writev` for more.
/// `send` skips what `writev` costs per call (copying and checking the
/// vector, the file layer), a measurable share of a small request's
/// system time.
pub(crate) fn write_slices(socket: &mut impl Write, slices: &[IoSlice<'_>]) -> io::Result<usize> {
    match slices {
        [one] => socket.write(one),
        _ => socket.write_vectored(slices),
    }
}
