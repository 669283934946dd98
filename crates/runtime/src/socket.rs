//! The byte streams a connection task runs on: TCP and Unix sockets.
//!
//! The session reads and writes with readiness calls (`try_read`,
//! `try_write_vectored` after `readable`/`writable`) rather than through
//! `AsyncRead`/`AsyncWrite`, so it reads into one buffer per I/O thread and
//! an idle connection owns no buffer. Tokio offers those calls on both
//! socket types with the same signatures; this trait names them once so
//! one session serves both.

use std::future::Future;
use std::io::{self, IoSlice};

use tokio::io::{AsyncWriteExt, Interest};
use tokio::net::{TcpStream, UnixStream};

pub(crate) use crate::tls::TlsInfo;

/// A connected, non-blocking byte stream.
pub(crate) trait Socket: Send + Sync + 'static {
    fn readable(&self) -> impl Future<Output = io::Result<()>> + Send;
    fn writable(&self) -> impl Future<Output = io::Result<()>> + Send;
    fn try_read(&self, buffer: &mut [u8]) -> io::Result<usize>;
    fn try_write_vectored(&self, slices: &[IoSlice<'_>]) -> io::Result<usize>;
    fn try_io<R>(&self, interest: Interest, f: impl FnOnce() -> io::Result<R>) -> io::Result<R>;
    /// Bytes accepted by an earlier write that are not on the socket yet
    /// (TLS records): the session keeps waiting for writability, and
    /// flushes them with an empty write, until there are none.
    fn has_buffered_output(&self) -> bool {
        false
    }
    /// What the TLS handshake settled (server name, client certificate...);
    /// `None` for plain sockets, and for TLS before the handshake is done.
    fn tls_info(&self) -> Option<TlsInfo> {
        None
    }
    /// Half-close: no more writes (the peer reads end of stream).
    fn shutdown(&mut self) -> impl Future<Output = io::Result<()>> + Send;
}

/// The methods have the same names on both types; each impl forwards to the
/// type's own (inherent methods take precedence over the trait's).
macro_rules! forward_socket {
    ($type:ty) => {
        impl Socket for $type {
            fn readable(&self) -> impl Future<Output = io::Result<()>> + Send {
                <$type>::readable(self)
            }
            fn writable(&self) -> impl Future<Output = io::Result<()>> + Send {
                <$type>::writable(self)
            }
            fn try_read(&self, buffer: &mut [u8]) -> io::Result<usize> {
                <$type>::try_read(self, buffer)
            }
            fn try_write_vectored(&self, slices: &[IoSlice<'_>]) -> io::Result<usize> {
                <$type>::try_write_vectored(self, slices)
            }
            fn try_io<R>(
                &self,
                interest: Interest,
                f: impl FnOnce() -> io::Result<R>,
            ) -> io::Result<R> {
                <$type>::try_io(self, interest, f)
            }
            fn shutdown(&mut self) -> impl Future<Output = io::Result<()>> + Send {
                AsyncWriteExt::shutdown(self)
            }
        }
    };
}

forward_socket!(TcpStream);
forward_socket!(UnixStream);
