//! HTTP sessions in Redis (docs/http.md, "Sessions": the Redis store;
//! docs/scale-out.md, "Sessions").
//!
//! A session is one string key holding the JSON text the session
//! middleware made, with Redis's own expiry as its TTL: `SET key value PX
//! ttl`, `GET`, `PEXPIRE` (rolling sessions), `DEL`. Nothing else is kept,
//! so every server (and every worker) reads what any other wrote, and an
//! expired session is simply gone.
//!
//! Operations run on the broker's thread, on the query connection of the
//! Redis server that holds the session (`Reader`, shared with history
//! reads and presence): a slow session read never holds up a publish.
//! With several standalone servers, a session's id picks its server as a
//! channel's name does (rendezvous), so every node finds it on the same
//! one. In a Redis Cluster the key's slot picks its master, and the
//! command follows the cluster there (`-MOVED`, `-ASK` mid-migration;
//! `cluster::ClusterReader::query`). NATS keeps no sessions: refused when
//! the store is made.

use std::sync::Arc;
use std::time::Duration;

use switchboard_runtime::history::{QueryError, Reply};
use switchboard_runtime::session_store::{SessionCommand, SessionOp};

use crate::cluster::ClusterReader;
use crate::history::Reader;
use crate::{slot, Broker, Engine};

impl Broker {
    /// Why this broker cannot keep sessions, if it cannot.
    pub(crate) fn sessions_refusal_of(&self) -> Option<&'static str> {
        match &self.engine {
            Engine::Sharded { .. } | Engine::Cluster(_) => None,
            Engine::Nats(_) => {
                Some("sessions in the broker need Redis (broker.redis): NATS keeps no keys")
            }
        }
    }

    /// Run `command` on its server's query connection, bounded by
    /// `connect_timeout` as a whole (connecting included).
    pub(crate) fn session_of(&self, command: SessionCommand, reply: Reply<Option<Vec<u8>>>) {
        let timeout = self.config.connect_timeout;
        match &self.engine {
            Engine::Sharded { shards, route, .. } => {
                let reader = shards[route.pick(&command.id)].reader.clone();
                self.runtime.spawn(async move {
                    reply(run(&reader, &command, timeout).await);
                });
            }
            Engine::Cluster(cluster) => {
                let reader = cluster.reader.clone();
                self.runtime.spawn(async move {
                    reply(run_in_cluster(&reader, &command, timeout).await);
                });
            }
            Engine::Nats(_) => reply(Err(QueryError::Unavailable)),
        }
    }
}

/// Run `command` at the master of its key's slot, following the cluster,
/// all within `timeout`.
async fn run_in_cluster(
    reader: &ClusterReader,
    command: &SessionCommand,
    timeout: Duration,
) -> Result<Option<Vec<u8>>, QueryError> {
    let deadline = tokio::time::Instant::now() + timeout;
    let slot = slot::slot(&command.key);
    let value = reader
        .query(slot, &to_redis(command), &[], Some(deadline))
        .await?;
    answer(&command.op, value)
}

/// Run `command`, once more on a fresh connection if the one in hand
/// failed (Redis may have restarted under it): every operation is
/// idempotent, so a second try cannot do twice what the first did.
async fn run(
    reader: &Arc<Reader>,
    command: &SessionCommand,
    timeout: Duration,
) -> Result<Option<Vec<u8>>, QueryError> {
    let attempts = async {
        // An error reply (a wrong type in the key, say) is Redis
        // answering: no new connection will change it.
        let retry =
            |error: &redis::RedisError| !matches!(error.kind(), redis::ErrorKind::Server(_));
        let value = reader
            .retried(None, retry, |mut connection| async move {
                to_redis(command)
                    .query_async::<redis::Value>(&mut connection)
                    .await
            })
            .await?;
        answer(&command.op, value)
    };
    match tokio::time::timeout(timeout, attempts).await {
        Ok(answer) => answer,
        Err(_) => {
            // The connection may be stuck mid-reply: start afresh.
            reader.lost().await;
            Err(QueryError::Unavailable)
        }
    }
}

/// The Redis command of an operation.
pub(crate) fn to_redis(command: &SessionCommand) -> redis::Cmd {
    let key = &command.key[..];
    match &command.op {
        SessionOp::Get => {
            let mut cmd = redis::cmd("GET");
            cmd.arg(key);
            cmd
        }
        SessionOp::Set { value, ttl } => {
            let mut cmd = redis::cmd("SET");
            cmd.arg(key).arg(&value[..]).arg("PX").arg(millis(*ttl));
            cmd
        }
        SessionOp::Touch { ttl } => {
            let mut cmd = redis::cmd("PEXPIRE");
            cmd.arg(key).arg(millis(*ttl));
            cmd
        }
        SessionOp::Destroy => {
            let mut cmd = redis::cmd("DEL");
            cmd.arg(key);
            cmd
        }
    }
}

/// A TTL as Redis takes it: whole milliseconds, at least 1 (`PX 0` is an
/// error, not "expire now").
fn millis(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// Redis's reply as the operation's answer: a `GET`'s value (none for a
/// nil), nothing for the others; a reply of another shape is a failure.
fn answer(op: &SessionOp, value: redis::Value) -> Result<Option<Vec<u8>>, QueryError> {
    match (op, value) {
        (SessionOp::Get, redis::Value::BulkString(bytes)) => Ok(Some(bytes)),
        (SessionOp::Get, redis::Value::Nil) => Ok(None),
        (SessionOp::Set { .. }, redis::Value::Okay) => Ok(None),
        (SessionOp::Set { .. }, redis::Value::SimpleString(s)) if s == "OK" => Ok(None),
        (SessionOp::Touch { .. } | SessionOp::Destroy, redis::Value::Int(_)) => Ok(None),
        _ => Err(QueryError::Unavailable),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(op: SessionOp) -> SessionCommand {
        SessionCommand {
            id: "abc".into(),
            key: b"switchboard:session:abc".to_vec(),
            op,
        }
    }

    fn packed(op: SessionOp) -> String {
        String::from_utf8(to_redis(&command(op)).get_packed_command()).unwrap()
    }

    #[test]
    fn commands() {
        assert_eq!(
            packed(SessionOp::Get),
            "*2\r\n$3\r\nGET\r\n$23\r\nswitchboard:session:abc\r\n"
        );
        let set = packed(SessionOp::Set {
            value: b"{}".to_vec(),
            ttl: Duration::from_millis(1500),
        });
        assert_eq!(
            set,
            "*5\r\n$3\r\nSET\r\n$23\r\nswitchboard:session:abc\r\n$2\r\n{}\r\n$2\r\nPX\r\n$4\r\n1500\r\n"
        );
        let touch = packed(SessionOp::Touch {
            ttl: Duration::from_micros(10),
        });
        // Under a millisecond still lives one.
        assert!(touch.ends_with("$1\r\n1\r\n"), "{touch}");
        assert!(packed(SessionOp::Destroy).starts_with("*2\r\n$3\r\nDEL\r\n"));
    }

    #[test]
    fn answers() {
        let get = SessionOp::Get;
        assert_eq!(
            answer(&get, redis::Value::BulkString(b"{}".to_vec())),
            Ok(Some(b"{}".to_vec()))
        );
        assert_eq!(answer(&get, redis::Value::Nil), Ok(None));
        assert_eq!(
            answer(&get, redis::Value::Int(1)),
            Err(QueryError::Unavailable)
        );
        let set = SessionOp::Set {
            value: Vec::new(),
            ttl: Duration::from_secs(1),
        };
        assert_eq!(answer(&set, redis::Value::Okay), Ok(None));
        assert_eq!(answer(&SessionOp::Destroy, redis::Value::Int(0)), Ok(None));
        let touch = SessionOp::Touch {
            ttl: Duration::from_secs(1),
        };
        assert_eq!(answer(&touch, redis::Value::Int(0)), Ok(None));
        assert_eq!(
            answer(&touch, redis::Value::Nil),
            Err(QueryError::Unavailable)
        );
    }
}
