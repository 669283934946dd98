//! An entry's HTTP phase: reading the first request head, deciding
//! between an HTTP session and a WebSocket upgrade (after the route's
//! `upgrade` hook, when it has one), and writing a refusal before closing.

use std::io::{self, IoSlice};
use std::time::Instant;

use switchboard_proto::http1::HttpError;

use super::{
    Context, Entry, Hook, Next, Phase, Respond, HEAD_READ_BYTES, LINGER, RESPONSE_WRITE_TIMEOUT,
};
use crate::connection::ConnectionKind;
use crate::events::Transport;
use crate::handshake::{self, Decision, Response};
use crate::opening::Accepted;
use crate::reactor::inbox::Command;
use crate::session::Session;
use crate::state::{PendingUpgrade, UpgradeDecision};
use crate::stats;
use crate::wake::WakeTarget;

impl Entry {
    /// JavaScript's `upgrade` hook decided.
    pub(crate) fn on_upgrade_decided(
        &mut self,
        key: usize,
        decision: UpgradeDecision,
        cx: &mut Context<'_>,
    ) -> Next {
        let Phase::Hook(_) = &self.phase else {
            // Decided after the deadline answered for it.
            return Next::Keep;
        };
        let Phase::Hook(hook) =
            std::mem::replace(&mut self.phase, Phase::Linger { deadline: cx.now })
        else {
            unreachable!("matched above");
        };
        let Hook {
            upgrade,
            id,
            worker,
            remote,
            tls,
            leftover,
            ..
        } = *hook;
        match upgrade.accept(decision, id, worker, remote, tls) {
            Ok((response, accepted)) => {
                self.open_session(key, accepted, Some(response), leftover, cx)
            }
            Err(response) => self.respond_then_close(response, cx),
        }
    }

    pub(super) fn read_head(&mut self, key: usize, cx: &mut Context<'_>) -> Next {
        let Phase::Head(head) = &mut self.phase else {
            return Next::Keep;
        };
        loop {
            let len = head.buffer.len();
            head.buffer.resize(len + HEAD_READ_BYTES, 0);
            match self.stream.read(&mut head.buffer[len..]) {
                Ok(0) => return Next::Remove,
                Ok(n) => head.buffer.truncate(len + n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    head.buffer.truncate(len);
                    return Next::Keep;
                }
                Err(_) => return Next::Remove,
            }
            let websocket = match head.parser.parse(&head.buffer) {
                Ok(None) => continue,
                Ok(Some(request)) => handshake::wants_websocket(&request),
                Err(error) => {
                    // A first request the parser refused is an HTTP
                    // request answered natively, as a later one is.
                    let metrics = &cx.server.http_metrics;
                    let row = metrics.unrouted_row(crate::http::metrics::Unrouted::BadRequest);
                    metrics.observe_io(row, error.status(), 0);
                    return self.respond_then_close(Response::http_error(error), cx);
                }
            };
            if !websocket {
                // The HTTP session reads the request again, from the start.
                let bytes = std::mem::take(&mut head.buffer);
                let remote = std::mem::take(&mut head.remote);
                return self.open_http(key, remote, bytes, cx);
            }
            return match handshake::parse_head(&head.buffer, &cx.server.config) {
                Ok(Some((request, consumed))) => {
                    let leftover = head.buffer.split_off(consumed);
                    let remote = std::mem::take(&mut head.remote);
                    self.decide(key, request, remote, leftover, cx)
                }
                // Unreachable: the strict parser saw a whole head.
                Ok(None) => {
                    let error = HttpError::BadRequest("malformed request head");
                    self.respond_then_close(Response::http_error(error), cx)
                }
                Err(response) => self.respond_then_close(response, cx),
            };
        }
    }

    fn decide(
        &mut self,
        key: usize,
        request: switchboard_proto::http::RequestHead,
        remote: String,
        leftover: Vec<u8>,
        cx: &mut Context<'_>,
    ) -> Next {
        let upgrade = match handshake::decide(request, &cx.server.config) {
            Decision::Respond(response) => return self.respond_then_close(response, cx),
            Decision::Upgrade(upgrade) => upgrade,
        };
        let server = cx.server;
        let id = server.next_id();
        let worker = server.pick_worker();
        let tls = self.stream.tls_info();
        if !upgrade.ask_hook {
            let decision = UpgradeDecision::Accept { protocol: None };
            return match upgrade.accept(decision, id, worker, remote, tls) {
                Ok((response, accepted)) => {
                    self.open_session(key, accepted, Some(response), leftover, cx)
                }
                Err(response) => self.respond_then_close(response, cx),
            };
        }
        // Ask JavaScript; its decision comes back through the inbox.
        let inbox = cx.inbox.clone();
        let generation = self.generation;
        server.pending_upgrades.lock().insert(
            id,
            PendingUpgrade {
                worker,
                reply: Box::new(move |decision| {
                    inbox.push(Command::UpgradeDecided {
                        key,
                        generation,
                        decision,
                    })
                }),
            },
        );
        server.queues[worker].push(&upgrade.hook_record(id, &remote, tls.as_ref()));
        self.phase = Phase::Hook(Box::new(Hook {
            upgrade,
            id,
            worker,
            remote,
            tls,
            leftover,
            deadline: cx.now + server.config.upgrade_timeout,
        }));
        Next::Keep
    }

    /// Start an HTTP session with the bytes read so far.
    fn open_http(
        &mut self,
        key: usize,
        remote: String,
        bytes: Vec<u8>,
        cx: &mut Context<'_>,
    ) -> Next {
        let server = cx.server;
        let accepted = Accepted {
            id: server.next_id(),
            worker: server.pick_http_worker(),
            kind: ConnectionKind::Http,
            route: None,
            transport: Transport::Tcp,
            remote,
            protocol: String::new(),
            extensions: String::new(),
            deflate: None,
            tls: self.stream.tls_info(),
        };
        self.open_session(key, accepted, None, bytes, cx)
    }

    /// Start the session of an accepted upgrade: the `101` goes out first,
    /// then whatever the session writes; bytes that came after the request
    /// head are its first input.
    pub(super) fn open_session(
        &mut self,
        key: usize,
        accepted: Accepted,
        response: Option<Vec<u8>>,
        mut leftover: Vec<u8>,
        cx: &mut Context<'_>,
    ) -> Next {
        let waker = WakeTarget::new(cx.waker.clone(), key, self.generation);
        let mut session = Session::start(accepted, cx.server.clone(), waker, cx.now);
        if let Some(response) = response {
            session.push_first(response);
        }
        if !leftover.is_empty() {
            session.on_bytes(&mut leftover, cx.now);
        }
        self.phase = Phase::Session(session);
        self.service(key, true, cx)
    }

    /// Start writing `response`; the connection closes once it is out.
    pub(super) fn respond_then_close(&mut self, response: Response, cx: &mut Context<'_>) -> Next {
        if response.rejected {
            stats::add(&cx.server.stats.handshakes_rejected, 1);
        }
        self.phase = Phase::Respond(Box::new(Respond {
            bytes: response.bytes,
            written: 0,
            deadline: cx.now + RESPONSE_WRITE_TIMEOUT,
        }));
        self.write_response()
    }

    pub(super) fn write_response(&mut self) -> Next {
        let Phase::Respond(respond) = &mut self.phase else {
            return Next::Keep;
        };
        while respond.written < respond.bytes.len() {
            match self
                .stream
                .write_vectored(&[IoSlice::new(&respond.bytes[respond.written..])])
            {
                Ok(0) => return Next::Remove,
                Ok(n) => respond.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Next::Keep,
                Err(_) => return Next::Remove,
            }
        }
        if self.stream.has_buffered_output() {
            return Next::Keep;
        }
        // Half-close, and read until the client closes too, so its unread
        // request does not turn into a reset that destroys the response.
        self.stream.shutdown_write();
        self.phase = Phase::Linger {
            deadline: respond.deadline.max(Instant::now()) + LINGER,
        };
        Next::Keep
    }
}
