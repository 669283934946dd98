//! Accepting connections: a connection limit, back-off on accept errors, and
//! the end of accepting when the server begins to shut down. A listener is
//! a protocol (HTTP, or the Switchboard protocol) and TLS around it or not;
//! every pairing starts its connections through the same two entry points
//! of the driver.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};

use crate::config::Protocol;
use crate::driver::{self, serve_http, serve_rpc};
use crate::errors;
use crate::events::Transport;
use crate::handshake::Response;
use crate::socket::Socket;
use crate::state::ServerState;
use crate::tls::TlsSocket;

/// The first and the longest pause after a failed `accept`. Running out of
/// file descriptors (EMFILE) is the usual cause: spinning on it would burn a
/// core while connections close and free descriptors.
const ACCEPT_BACKOFF_START: Duration = Duration::from_millis(5);
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// What a listener serves.
#[derive(Clone)]
pub(crate) struct Listener {
    pub protocol: Protocol,
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

/// A connection's task, boxed so that each kind is allocated at its own
/// size: one future matching on the listener would be sized for its
/// largest arm (a TLS session, ~20 kB), and every plain connection's task
/// would pay for it.
type ConnectionTask = Pin<Box<dyn Future<Output = ()> + Send>>;

pub(crate) async fn accept_tcp(listener: TcpListener, server: Arc<ServerState>, kind: Listener) {
    let accept = || async {
        let (stream, remote) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        Ok((stream, remote.to_string()))
    };
    let refused = kind.clone();
    run(
        &server,
        accept,
        |stream: TcpStream, remote, server| -> ConnectionTask {
            match (kind.protocol, kind.tls.clone()) {
                (Protocol::Http, None) => Box::pin(serve_http(stream, remote, server)),
                (Protocol::Rpc, None) => {
                    Box::pin(serve_rpc(stream, remote, server, Transport::Tcp))
                }
                (protocol, Some(config)) => Box::pin(async move {
                    // Fails only when rustls cannot allocate its state.
                    let Ok(socket) = TlsSocket::new(stream, config) else {
                        return;
                    };
                    match protocol {
                        Protocol::Http => serve_http(socket, remote, server).await,
                        Protocol::Rpc => serve_rpc(socket, remote, server, Transport::Tls).await,
                    }
                }),
            }
        },
        move |stream, server| refuse(stream, server, refused.clone()),
    )
    .await;
}

pub(crate) async fn accept_unix(
    listener: UnixListener,
    server: Arc<ServerState>,
    protocol: Protocol,
) {
    let accept = || async {
        let (stream, remote) = listener.accept().await?;
        let remote = remote
            .as_pathname()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "unix".to_owned());
        Ok((stream, remote))
    };
    run(
        &server,
        accept,
        |stream: UnixStream, remote, server| -> ConnectionTask {
            match protocol {
                Protocol::Http => Box::pin(serve_http(stream, remote, server)),
                Protocol::Rpc => Box::pin(serve_rpc(stream, remote, server, Transport::Unix)),
            }
        },
        move |stream, server| {
            let kind = Listener {
                protocol,
                tls: None,
            };
            refuse(stream, server, kind)
        },
    )
    .await;
}

/// The loop every listener shares: accept, admit under the connection
/// limit, spawn the connection's task (or refuse it), back off on errors.
async fn run<S, A, AF, C, F, FF>(server: &Arc<ServerState>, accept: A, connect: C, refuse: F)
where
    S: Socket,
    A: Fn() -> AF,
    AF: Future<Output = io::Result<(S, String)>>,
    C: Fn(S, String, Arc<ServerState>) -> ConnectionTask,
    F: Fn(S, Arc<ServerState>) -> FF,
    FF: Future<Output = ()> + Send + 'static,
{
    let mut backoff = ACCEPT_BACKOFF_START;
    loop {
        let accepted = tokio::select! {
            _ = server.stopping.cancelled() => return,
            accepted = accept() => accepted,
        };
        let (stream, remote) = match accepted {
            Ok(pair) => {
                backoff = ACCEPT_BACKOFF_START;
                pair
            }
            Err(_) => {
                tokio::select! {
                    _ = server.stopping.cancelled() => return,
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(ACCEPT_BACKOFF_MAX);
                continue;
            }
        };
        match server.permits.clone().try_acquire_owned() {
            Ok(permit) => {
                let task = connect(stream, remote, server.clone());
                server.tracker.spawn(async move {
                    task.await;
                    drop(permit);
                });
            }
            Err(_) => {
                // Over `max_connections`: say so instead of leaving the
                // client in the backlog.
                server.tracker.spawn(refuse(stream, server.clone()));
            }
        }
    }
}

/// Tell a client over the connection limit why it is refused: a `503` on
/// HTTP, a preface and GO_AWAY on the protocol.
async fn refuse<S: Socket>(mut stream: S, server: Arc<ServerState>, kind: Listener) {
    let failure = errors::SERVER_AT_CAPACITY;
    let response = match (kind.protocol, kind.tls) {
        // Saying why would take a TLS handshake: just close.
        (_, Some(_)) => Response {
            bytes: Vec::new(),
            rejected: true,
        },
        (Protocol::Http, None) => Response::failure(failure, &[]),
        (Protocol::Rpc, None) => {
            let mut bytes = switchboard_proto::wire::PREFACE.to_vec();
            switchboard_proto::wire::encode_go_away(0, failure.code, &failure.reason(), &mut bytes);
            Response {
                bytes,
                rejected: true,
            }
        }
    };
    driver::respond(&mut stream, &server, response).await;
}
