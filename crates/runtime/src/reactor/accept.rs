//! Listening sockets on an I/O thread: accept until the socket would
//! block, admit each connection under `max_connections` or refuse it with
//! a reason, and back off when accepting fails (running out of file
//! descriptors, EMFILE, is the usual cause: spinning on it would burn a
//! core while connections close and free descriptors).

use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::{TcpListener, UnixListener};

use crate::config::Protocol;
use crate::errors;
use crate::events::Transport;
use crate::handshake::Response;
use crate::stream::Stream;
use crate::tls::TlsStream;

/// The first and the longest pause after a failed `accept`.
const BACKOFF_START: Duration = Duration::from_millis(5);
const BACKOFF_MAX: Duration = Duration::from_secs(1);

pub(crate) enum ListenSocket {
    Tcp(TcpListener),
    Unix(UnixListener),
}

/// A listener: a socket, what it speaks, and TLS around it or not.
pub(crate) struct Listening {
    pub socket: ListenSocket,
    pub protocol: Protocol,
    pub tls: Option<Arc<rustls::ServerConfig>>,
    backoff: Duration,
    /// Accepting failed; try again at this time.
    pub paused_until: Option<Instant>,
}

/// What one accepted connection becomes.
pub(crate) enum Accepted {
    /// Admitted: serve it.
    Serve {
        stream: Stream,
        remote: String,
        transport: Transport,
    },
    /// Over `max_connections`: tell it why, then close.
    Refuse { stream: Stream, response: Response },
    /// Nothing to serve (a TLS state rustls could not allocate).
    Drop,
}

impl Listening {
    pub(crate) fn new(
        socket: ListenSocket,
        protocol: Protocol,
        tls: Option<Arc<rustls::ServerConfig>>,
    ) -> Self {
        Self {
            socket,
            protocol,
            tls,
            backoff: BACKOFF_START,
            paused_until: None,
        }
    }

    /// Accept one connection; `Ok(None)` when none waits. `admit` counts
    /// it in under the connection limit (false: refuse it).
    pub(crate) fn accept(
        &mut self,
        admit: impl FnOnce() -> bool,
        now: Instant,
    ) -> io::Result<Option<Accepted>> {
        let (stream, remote, transport) = match &self.socket {
            ListenSocket::Tcp(listener) => match listener.accept() {
                Ok((stream, remote)) => {
                    let _ = stream.set_nodelay(true);
                    (Stream::Tcp(stream), remote.to_string(), Transport::Tcp)
                }
                Err(e) => return self.failed(e, now),
            },
            ListenSocket::Unix(listener) => match listener.accept() {
                Ok((stream, remote)) => {
                    let remote = remote
                        .as_pathname()
                        .map(|p| p.display().to_string())
                        .unwrap_or_else(|| "unix".to_owned());
                    (Stream::Unix(stream), remote, Transport::Unix)
                }
                Err(e) => return self.failed(e, now),
            },
        };
        self.backoff = BACKOFF_START;
        if !admit() {
            return Ok(Some(self.refusal(stream)));
        }
        let (stream, transport) = match (&self.tls, stream) {
            (Some(config), Stream::Tcp(tcp)) => match TlsStream::new(tcp, config.clone()) {
                Ok(tls) => (Stream::Tls(Box::new(tls)), Transport::Tls),
                Err(_) => return Ok(Some(Accepted::Drop)),
            },
            (_, stream) => (stream, transport),
        };
        Ok(Some(Accepted::Serve {
            stream,
            remote,
            transport,
        }))
    }

    /// `WouldBlock` ends this round; anything else pauses accepting.
    fn failed(&mut self, error: io::Error, now: Instant) -> io::Result<Option<Accepted>> {
        if error.kind() == io::ErrorKind::WouldBlock {
            return Ok(None);
        }
        if error.kind() == io::ErrorKind::Interrupted {
            // Retried by the caller's loop.
            return Ok(Some(Accepted::Drop));
        }
        self.paused_until = Some(now + self.backoff);
        self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
        Err(error)
    }

    /// Tell a client over the connection limit why it is refused: a `503` on
    /// HTTP, a preface and GO_AWAY on the protocol; over TLS, saying why
    /// would take a handshake: it is just closed.
    fn refusal(&self, stream: Stream) -> Accepted {
        let failure = errors::SERVER_AT_CAPACITY;
        let bytes = match (self.protocol, &self.tls) {
            (_, Some(_)) => Vec::new(),
            (Protocol::Http, None) => Response::failure(failure, &[]).bytes,
            (Protocol::Rpc, None) => {
                let mut bytes = switchboard_proto::rpc::PREFACE.to_vec();
                switchboard_proto::rpc::encode_go_away(
                    0,
                    failure.code,
                    &failure.reason(),
                    &mut bytes,
                );
                bytes
            }
        };
        Accepted::Refuse {
            stream,
            response: Response {
                bytes,
                rejected: true,
            },
        }
    }

    pub(crate) fn register(
        &mut self,
        registry: &mio::Registry,
        token: mio::Token,
    ) -> io::Result<()> {
        match &mut self.socket {
            ListenSocket::Tcp(listener) => {
                registry.register(listener, token, mio::Interest::READABLE)
            }
            ListenSocket::Unix(listener) => {
                registry.register(listener, token, mio::Interest::READABLE)
            }
        }
    }
}
