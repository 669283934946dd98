//! A session's deadlines: the handshake, idle and heartbeat timers, and the
//! end of a closing handshake or a drain.

use switchboard_proto::wire;
use switchboard_proto::ws::OpCode;
use tokio::time::Instant;

use super::{Context, Dialect};
use crate::framing;

impl Context {
    pub(super) fn next_deadline(&self) -> Instant {
        let far = Instant::now() + std::time::Duration::from_secs(3600);
        let mut deadline = far;
        for limit in [self.closing_deadline, self.handshake_deadline]
            .into_iter()
            .flatten()
        {
            deadline = deadline.min(limit);
        }
        if !self.close_sent {
            if !self.idle_timeout.is_zero() {
                deadline = deadline.min(self.last_received + self.idle_timeout);
            }
            if !self.ping_interval.is_zero() && self.ping_sent_at.is_none() {
                deadline = deadline.min(self.last_received + self.ping_interval);
            }
        }
        deadline
    }

    /// Returns true when the connection must end now.
    pub(super) fn on_timer(&mut self) -> bool {
        let now = Instant::now();
        if self.closing_deadline.is_some_and(|d| now >= d) {
            // The peer never answered our close (or never finished draining).
            return true;
        }
        if self.close_sent {
            return false;
        }
        if self.handshake_deadline.is_some_and(|d| now >= d) {
            self.fail(1002, "ERR_HANDSHAKE_TIMEOUT");
            self.handshake_deadline = None;
            return false;
        }
        if !self.idle_timeout.is_zero() && now >= self.last_received + self.idle_timeout {
            let reason = match self.dialect {
                Dialect::Wire => "ERR_HEARTBEAT_TIMEOUT",
                _ => "ERR_WS_IDLE_TIMEOUT",
            };
            self.send_close(1001, reason);
            return false;
        }
        if !self.ping_interval.is_zero()
            && self.ping_sent_at.is_none()
            && now >= self.last_received + self.ping_interval
        {
            self.ping_sent_at = Some(now);
            if self.dialect == Dialect::Wire {
                let mut ping = Vec::with_capacity(3);
                wire::encode_heartbeat(false, &mut ping);
                self.push_wire(&ping);
            } else {
                self.push_frame(framing::frame_control(OpCode::Ping, &[]));
            }
        }
        false
    }
}
