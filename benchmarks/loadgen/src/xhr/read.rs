//! What arrives on a client's legs. On the stream: responses and their
//! frames (messages counted, closed loops answered, the next
//! `xhr_streaming` request sent as soon as the server ends a response). On
//! the send leg: the answers to its `xhr_send` requests. This is the
//! per-message path: frames are parsed in place, nothing is allocated per
//! message.

use super::client::{token, Client, Phase, Reading, Sending, RECV, SEND};
use super::engine::{enqueue_load, mark_batch};
use super::request;
use super::stream::{Closed, StreamEvent};
use super::Engine;
use crate::conn::{pump, ReadEnd};
use crate::dispatch::{queue_flush, Stop};
use crate::engine_core::{EngineCore, READ_BUDGET};
use crate::http::response::{Eof, Event as HttpEvent};
use crate::payload;
use crate::protocols::{decode_sockjs, Event};

/// New connections the stream may need in a row without a response
/// beginning on any: beyond that the server is taken to refuse the session.
const MAX_STREAM_RETRIES: u8 = 3;

/// What a burst of stream reads leaves to do once it is over.
#[derive(Default)]
struct After {
    /// The session's `o` arrived.
    opened: bool,
    /// The response ended with its connection: the next request needs another.
    reconnect: bool,
}

impl Engine {
    pub(super) fn on_stream_readable(&mut self, idx: usize) {
        let Engine {
            core,
            clients,
            figures,
            to_send,
            host,
            ..
        } = self;
        let EngineCore {
            scratch,
            clock,
            stats,
            dirty,
            joined,
            closed_loop,
            payload_size,
            ..
        } = core;
        let Client {
            phase,
            recv,
            decoder,
            stream_retries,
            base,
            batch,
            batch_queued,
            joined: client_joined,
            ..
        } = &mut clients[idx];
        let Some(Reading {
            sock,
            carry,
            out,
            peer_closed,
        }) = recv.reading()
        else {
            return;
        };
        let tok = token(idx, RECV).0 as u32;
        let mut after = After::default();
        let mut stop: Option<Stop> = None;
        let result = pump(sock, scratch, carry, READ_BUDGET, |buf| {
            // One clock read per read(2): every message in it arrived then.
            let now = clock.now();
            decoder
                .feed(buf, |ev| {
                    match ev {
                        StreamEvent::Head { status } => {
                            if status != 200 {
                                stop = Some(Stop::Upgrade(format!(
                                    "xhr_streaming answered HTTP {status}"
                                )));
                            }
                            *stream_retries = 0;
                        }
                        StreamEvent::Frame(frame) => {
                            let decoded = decode_sockjs(frame, |e| match e {
                                Event::Payload(p) if *phase == Phase::Ready => {
                                    if let Some((sent_ns, sender)) = payload::parse(p) {
                                        stats.record(sent_ns, now);
                                        // Echo replies are the sender's own.
                                        if *closed_loop && sender == idx as u32 {
                                            enqueue_load(
                                                batch,
                                                batch_queued,
                                                to_send,
                                                idx,
                                                now,
                                                *payload_size,
                                            );
                                            stats.count_sent(1);
                                        }
                                    } else if p == b"joined" {
                                        if !*client_joined {
                                            *client_joined = true;
                                            *joined += 1;
                                        }
                                    } else {
                                        // Unknown payloads are counted, not fatal.
                                        stats.errors.protocol += 1;
                                    }
                                }
                                Event::Payload(_) => {
                                    stop = Some(Stop::Protocol(
                                        "message before the session opened".into(),
                                    ))
                                }
                                Event::Open => {
                                    if *phase == Phase::Opening {
                                        *phase = Phase::Ready;
                                        after.opened = true;
                                    }
                                }
                                Event::Closed => {
                                    stop = Some(Stop::Closed(format!(
                                        "the server ended the session: {}",
                                        String::from_utf8_lossy(frame)
                                    )))
                                }
                                // Engine.IO's and Socket.IO's, not SockJS's.
                                Event::Ping | Event::NamespaceJoined => {}
                            });
                            if let Err(e) = decoded {
                                stop = Some(Stop::Protocol(e.0));
                            }
                        }
                        StreamEvent::End { reusable } => {
                            if stats.measuring {
                                figures.streams_ended += 1;
                            }
                            // The session lives on: ask for its stream again at once.
                            if reusable {
                                request::write_streaming(&mut out.buf, base, host);
                                queue_flush(out, dirty, tok);
                            } else {
                                after.reconnect = true;
                            }
                        }
                    }
                    if stop.is_some() {
                        Err(String::new())
                    } else {
                        Ok(())
                    }
                })
                .map_err(|e| stop.take().unwrap_or(Stop::Protocol(e)))
        });
        if after.opened {
            self.on_open(idx);
        }
        match result {
            Err(stop) => self.close_client(idx, stop),
            Ok(_) if after.reconnect => self.reopen_stream(idx),
            Ok(ReadEnd::Eof) => self.stream_eof(idx),
            Ok(ReadEnd::Drained) if peer_closed => self.stream_eof(idx),
            Ok(ReadEnd::Drained) => {}
            Ok(ReadEnd::Budget) => self.core.again.push(tok),
            Ok(ReadEnd::Error(e)) => {
                self.close_client(idx, Stop::Closed(format!("read failed: {e}")))
            }
        }
    }

    /// The server closed the stream's connection: between responses (or
    /// ending one that ran to the close) the session goes on over a new
    /// connection; in the middle of one it is lost.
    fn stream_eof(&mut self, idx: usize) {
        let c = &mut self.clients[idx];
        let mut ended = false;
        let closed = c.decoder.at_eof(c.recv.carry.len(), |_| {
            ended = true;
            Ok(())
        });
        match closed {
            Ok(Closed::Between) => {
                if ended && self.core.stats.measuring {
                    self.figures.streams_ended += 1;
                }
                c.stream_retries += 1;
                if c.stream_retries > MAX_STREAM_RETRIES {
                    let why = format!(
                        "the server closed {MAX_STREAM_RETRIES} xhr_streaming connections in a row unanswered"
                    );
                    self.close_client(idx, Stop::Closed(why));
                } else {
                    self.reopen_stream(idx);
                }
            }
            Ok(Closed::MidResponse) => self.close_client(
                idx,
                Stop::Closed(
                    "the server closed the xhr_streaming connection in the middle of a response"
                        .into(),
                ),
            ),
            Err(e) => self.close_client(idx, Stop::Protocol(e)),
        }
    }

    pub(super) fn on_send_readable(&mut self, idx: usize) {
        let Engine { core, clients, .. } = self;
        let scratch = &mut core.scratch;
        let Client {
            send,
            send_parser,
            sending,
            ..
        } = &mut clients[idx];
        let Some(Reading {
            sock,
            carry,
            peer_closed,
            ..
        }) = send.reading()
        else {
            return;
        };
        let (mut answered, mut close_after) = (false, false);
        let mut stop: Option<Stop> = None;
        let result = pump(sock, scratch, carry, READ_BUDGET, |buf| {
            send_parser
                .feed(buf, |ev| {
                    match ev {
                        HttpEvent::Head(head) => {
                            match sending {
                                Sending::InFlight { answered, .. } if !*answered => {
                                    *answered = true
                                }
                                _ => {
                                    stop = Some(Stop::Protocol(
                                        "an xhr_send answer to no request".into(),
                                    ))
                                }
                            }
                            if !(200..300).contains(&head.status) {
                                stop = Some(Stop::Protocol(format!(
                                    "xhr_send answered HTTP {}",
                                    head.status
                                )));
                            }
                            close_after = head.close;
                        }
                        HttpEvent::Body(_) => {}
                        HttpEvent::End => answered = true,
                    }
                    if stop.is_some() {
                        Err(String::new())
                    } else {
                        Ok(())
                    }
                })
                .map_err(|e| stop.take().unwrap_or(Stop::Protocol(e)))
        });
        if answered {
            self.send_answered(idx);
        }
        match result {
            Err(stop) => self.close_client(idx, stop),
            // The server will close it: the next batch opens another.
            Ok(_) if answered && close_after => self.drop_leg(idx, SEND),
            Ok(ReadEnd::Eof) => self.send_closed(idx, "the server closed it"),
            Ok(ReadEnd::Drained) if peer_closed => self.send_closed(idx, "the server closed it"),
            Ok(ReadEnd::Drained) => {}
            Ok(ReadEnd::Budget) => self.core.again.push(token(idx, SEND).0 as u32),
            Ok(ReadEnd::Error(e)) => self.send_closed(idx, &format!("read failed: {e}")),
        }
    }

    /// The `xhr_send` in flight was answered: messages that waited go next.
    fn send_answered(&mut self, idx: usize) {
        if self.core.stats.measuring {
            self.figures.send_requests += 1;
        }
        let c = &mut self.clients[idx];
        c.sending = Sending::Idle;
        c.send.reused = true;
        if !c.batch.is_empty() {
            mark_batch(&mut c.batch_queued, &mut self.to_send, idx);
        }
    }

    /// The send leg's connection is gone. Idle, it was a keep-alive
    /// connection the server closed (the next batch opens another). With a
    /// request unanswered on a reused connection, the server closed it as
    /// the request arrived, so never saw it: the request goes again on a new
    /// connection, as browsers resend it. Otherwise the session is lost.
    pub(super) fn send_closed(&mut self, idx: usize, why: &str) {
        let c = &mut self.clients[idx];
        let ended = c.send_parser.at_eof(c.send.carry.len()) == Eof::Ended;
        let (sending, reused) = (c.sending, c.send.reused);
        self.drop_leg(idx, SEND);
        if ended {
            // An answer whose body ran to the close.
            return self.send_answered(idx);
        }
        match sending {
            Sending::Idle => {}
            Sending::InFlight { answered: false } if reused => {
                if self.core.stats.measuring {
                    self.figures.send_retries += 1;
                }
                self.open_leg(idx, SEND);
            }
            Sending::InFlight { .. } => self.close_client(
                idx,
                Stop::Closed(format!(
                    "the xhr_send connection closed before its answer ({why})"
                )),
            ),
        }
    }
}
