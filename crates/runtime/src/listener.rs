//! Accepting connections: a connection limit, back-off on accept errors, and
//! the end of accepting when the server begins to shut down.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

use crate::connection;
use crate::server::Shared;

/// The first and the longest pause after a failed `accept`. Running out of
/// file descriptors (EMFILE) is the usual cause: spinning on it would burn a
/// core while connections close and free descriptors.
const ACCEPT_BACKOFF_START: Duration = Duration::from_millis(5);
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

pub async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut backoff = ACCEPT_BACKOFF_START;
    loop {
        let accepted = tokio::select! {
            _ = shared.stopping.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let (stream, remote) = match accepted {
            Ok(pair) => {
                backoff = ACCEPT_BACKOFF_START;
                pair
            }
            Err(_) => {
                tokio::select! {
                    _ = shared.stopping.cancelled() => return,
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(ACCEPT_BACKOFF_MAX);
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        match shared.permits.clone().try_acquire_owned() {
            Ok(permit) => {
                let shared_for_task = shared.clone();
                shared.tracker.spawn(async move {
                    connection::run(stream, remote, shared_for_task).await;
                    drop(permit);
                });
            }
            Err(_) => {
                // Over `max_connections`: say so instead of leaving the
                // client in the backlog.
                crate::stats::add(&shared.stats.handshakes_rejected, 1);
                shared.tracker.spawn(async move {
                    let mut stream = stream;
                    let response = switchboard_proto::http::error_response(
                        503,
                        "ERR_SERVER_AT_CAPACITY: too many connections",
                        &[],
                    );
                    let _ =
                        tokio::time::timeout(Duration::from_secs(1), stream.write_all(&response))
                            .await;
                });
            }
        }
    }
}
