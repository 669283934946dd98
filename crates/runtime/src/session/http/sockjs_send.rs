//! A send to a SockJS session (`xhr_send`, `jsonp_send`): the body is read
//! whole here, up to the route's `maxPayloadLength`, then parsed, and each
//! message crosses to the session's worker as a `MESSAGE` record of the
//! session, as its WebSocket transport's messages do. The answer is `204`
//! (`xhr_send`) or `200 ok` (`jsonp_send`); an unknown session is `404`, a
//! body that is empty or not a JSON array of strings `500` with the
//! protocol's texts (the session lives on), a body over the limit `413`
//! (the session closes with `1009`, as a WebSocket message over the limit
//! closes its connection). A session that carries the Switchboard
//! protocol takes its messages through `sockjs_rpc.rs` instead.

use std::sync::Arc;
use std::time::{Duration, Instant};

use switchboard_proto::http1::{BodyDecoder, BodyKind, BodyLimits, RequestHead, Version};
use switchboard_proto::sockjs::{
    self, CloseReason, PayloadError, Transport, CONTENT_TYPE_PLAIN, JSONP_SEND_OK,
};

use super::sockjs_answer::Answer;
use super::{sockjs_rpc, Core, ReadState};
use crate::errors;
use crate::events::Record;
use crate::session::Machine;
use crate::sockjs::SockJsSession;
use crate::stats;

/// What a session that sent more than its limit is closed with.
const MESSAGE_TOO_BIG: CloseReason = CloseReason {
    code: errors::SOCKJS_MESSAGE_TOO_BIG.status,
    reason: errors::SOCKJS_MESSAGE_TOO_BIG.message,
};

/// A send whose body is being read.
pub(super) struct Send {
    decoder: BodyDecoder,
    body: Vec<u8>,
    session: Arc<SockJsSession>,
    transport: Transport,
    /// The answer's header lines (type, caching, CORS, cookie).
    headers: String,
    content_type: Option<String>,
    keep_alive: bool,
    version: Version,
}

impl Core {
    /// A send's head: find the session, then read the body.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn sockjs_send(
        &mut self,
        machine: &mut Machine,
        route: usize,
        session: &str,
        transport: Transport,
        headers: String,
        head: &RequestHead<'_, '_>,
        keep_alive: bool,
        now: Instant,
    ) {
        let server = machine.server.clone();
        let Some(session) = server.sockjs.get(route, session) else {
            self.sockjs_answer(machine, Answer::new(404), head, keep_alive, now);
            return;
        };
        let max_body_bytes = match session.rpc {
            Some(_) => sockjs_rpc::send_body_limit(&server, route),
            None => server.config.routes[route].max_payload_length,
        };
        let limits = BodyLimits {
            max_body_bytes: max_body_bytes as u64,
            ..BodyLimits::default()
        };
        let decoder = match head.body {
            BodyKind::Empty => None,
            kind => match BodyDecoder::new(kind, limits) {
                Ok(decoder) => Some(decoder),
                Err(error) => {
                    self.sockjs_send_failed(machine, &session, error, now);
                    return;
                }
            },
        };
        let content_type = head
            .header("content-type")
            .map(|value| String::from_utf8_lossy(value).into_owned());
        let mut send = Box::new(Send {
            // Replaced below when there is a body.
            decoder: BodyDecoder::new(BodyKind::Length(0), limits).expect("an empty body"),
            body: Vec::new(),
            session,
            transport,
            headers,
            content_type,
            keep_alive,
            version: head.version,
        });
        match decoder {
            Some(decoder) => {
                send.decoder = decoder;
                self.state = ReadState::SockJsSend(send);
            }
            None => {
                self.after_own(!keep_alive, now);
                self.sockjs_sent(machine, *send, now);
            }
        }
    }

    /// Bytes of a send's body; returns how many were used.
    pub(super) fn sockjs_send_bytes(
        &mut self,
        machine: &mut Machine,
        input: &[u8],
        now: Instant,
    ) -> usize {
        let ReadState::SockJsSend(send) = &mut self.state else {
            return 0;
        };
        let chunk = match send.decoder.decode(input) {
            Ok(chunk) => chunk,
            Err(error) => {
                let session = send.session.clone();
                self.sockjs_send_failed(machine, &session, error, now);
                return input.len();
            }
        };
        send.body.extend_from_slice(chunk.data);
        if chunk.done {
            let ReadState::SockJsSend(send) = std::mem::replace(&mut self.state, ReadState::Head)
            else {
                unreachable!("matched above");
            };
            self.after_own(!send.keep_alive, now);
            self.sockjs_sent(machine, *send, now);
        }
        chunk.consumed
    }

    /// The body cannot be read: over the limit (the session closes too), or
    /// malformed. The connection closes.
    fn sockjs_send_failed(
        &mut self,
        machine: &mut Machine,
        session: &SockJsSession,
        error: switchboard_proto::http1::HttpError,
        now: Instant,
    ) {
        if error.status() == 413 {
            let server = machine.server.clone();
            session.close(&*server, MESSAGE_TOO_BIG, (1009, ""));
            // Its receiver, if one waits, hears the close frame.
            session.connection.outbound.wake();
        }
        self.reject(machine, error, now);
    }

    /// A send's body is read: deliver its messages and answer.
    fn sockjs_sent(&mut self, machine: &mut Machine, send: Send, now: Instant) {
        let mut scratch = Vec::new();
        let parsed = match send.transport {
            Transport::JsonpSend => {
                sockjs::parse_jsonp_send(send.content_type.as_deref(), &send.body, &mut scratch)
            }
            _ => sockjs::parse_xhr_send(&send.body),
        };
        let answer = match parsed {
            Ok(messages) if send.session.rpc.is_some() => {
                match sockjs_rpc::feed(&machine.server, &send.session, messages) {
                    Ok(()) => Answer::new(204),
                    Err(sockjs_rpc::Refusal::BrokenBase64) => {
                        let failure = errors::SOCKJS_BROKEN_BASE64;
                        Answer::new(500).body(CONTENT_TYPE_PLAIN, failure.reason())
                    }
                }
                .sent(send.headers, send.transport)
            }
            Ok(messages) => {
                let connection = &send.session.connection;
                // A closed session (or one its hook has not opened) takes
                // nothing: sockjs-node drops them too.
                if send.session.is_open() && messages.len() > 0 {
                    let server = &machine.server;
                    let queue = &server.queues[connection.worker()];
                    for message in messages {
                        stats::add(&server.stats.messages_in, 1);
                        stats::add(&server.worker_stats[connection.worker()].messages_in, 1);
                        queue.push(&Record::Message {
                            id: connection.id,
                            binary: false,
                            payload: message.as_bytes(),
                        });
                    }
                    // The answer waits until the handlers ran (below).
                    queue.push(&Record::SockJsSent {
                        id: connection.id,
                        http: machine.connection.id,
                    });
                    let answer = Answer::new(204).sent(send.headers, send.transport);
                    let response = answer.framed(send.keep_alive, send.version);
                    self.await_sockjs_ack(machine, response, !send.keep_alive, now);
                    return;
                }
                Answer::new(204).sent(send.headers, send.transport)
            }
            Err(error) => {
                let failure = match error {
                    PayloadError::PayloadExpected => errors::SOCKJS_PAYLOAD_EXPECTED,
                    PayloadError::BrokenJson => errors::SOCKJS_BROKEN_JSON,
                };
                Answer::new(failure.status).body(CONTENT_TYPE_PLAIN, failure.reason())
            }
        };
        let response = answer.framed(send.keep_alive, send.version);
        self.respond(machine, response, !send.keep_alive, now);
    }
}

impl Answer {
    /// A send's answer once its messages were taken: `jsonp_send` gets
    /// `200 ok` for a `204` (Konqueror mishandles 204), with the transport's
    /// headers; an error keeps its own.
    fn sent(mut self, headers: String, transport: Transport) -> Self {
        if self.status != 204 {
            return self;
        }
        self.headers = headers;
        if transport == Transport::JsonpSend {
            self.status = 200;
            self.body = JSONP_SEND_OK.into();
        }
        self
    }
}

impl Core {
    /// Hold a send's answer until the session's worker handled its
    /// messages (`SOCKJS_SENT`, acknowledged by the worker once the
    /// handlers before it settled), at most [`SEND_ACK_WAIT`]: a client
    /// that polls right after its send then finds what the handlers sent
    /// back, as with sockjs-node, whose handlers run before it answers.
    /// Nothing more is read meanwhile.
    fn await_sockjs_ack(
        &mut self,
        machine: &mut Machine,
        response: Vec<u8>,
        close: bool,
        now: Instant,
    ) {
        self.sockjs_acks_owed = self.sockjs_acks_owed.wrapping_add(1);
        self.state = ReadState::SockJsAck(Box::new(AckWait {
            response,
            close,
            deadline: now + SEND_ACK_WAIT,
        }));
        self.answer_if_acked(machine, now);
    }

    /// Answer the send waiting for its acknowledgement if it came (every
    /// send before it acknowledged too) or the wait is over.
    pub(super) fn answer_if_acked(&mut self, machine: &mut Machine, now: Instant) {
        let ReadState::SockJsAck(wait) = &self.state else {
            return;
        };
        let deadline = wait.deadline;
        // With `await_next`: an acknowledgement still owed wakes us.
        self.refresh(machine, true);
        let owed = self.sockjs_acks_owed.wrapping_sub(self.sockjs_acks) as i32 > 0;
        if owed && now < deadline {
            return;
        }
        let ReadState::SockJsAck(wait) = std::mem::replace(&mut self.state, ReadState::Head) else {
            unreachable!("matched above");
        };
        if wait.close {
            self.last_request = true;
            self.state = ReadState::Done;
        }
        self.respond(machine, wait.response, wait.close, now);
    }
}

/// A send's answer, held until the session's worker handled its messages.
pub(super) struct AckWait {
    response: Vec<u8>,
    close: bool,
    /// Answered then at the latest: a handler that takes longer (an async
    /// one waiting on I/O, a worker that died) does not hold the client.
    pub(super) deadline: Instant,
}

/// The longest a send's answer waits for its messages' handlers.
const SEND_ACK_WAIT: Duration = Duration::from_secs(2);
