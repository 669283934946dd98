//! One xhr-streaming client: its SockJS session, its two connections
//! ("legs": the stream in, the sends out) and what waits between them.

use mio::net::TcpStream;
use mio::Token;

use super::request::Batch;
use super::stream::StreamDecoder;
use crate::conn::{Outbox, MAX_MESSAGE};
use crate::http::response::Parser;

/// The leg that carries the `xhr_streaming` requests and their responses.
pub const RECV: usize = 0;
/// The leg that carries the `xhr_send` requests.
pub const SEND: usize = 1;

/// The epoll token of a client's leg: two per client.
#[inline]
pub fn token(idx: usize, leg: usize) -> Token {
    Token(idx * 2 + leg)
}

/// The client and leg of a token.
#[inline]
pub fn split_token(token: usize) -> (usize, usize) {
    (token / 2, token % 2)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Not started yet, or waiting to retry.
    Waiting,
    /// The stream is opening: TCP connect, the `xhr_streaming` request, the
    /// prelude, up to the session's `o`.
    Opening,
    /// The session is open: messages go both ways.
    Ready,
    Closed,
}

/// One of a client's connections.
#[derive(Default)]
pub struct Leg {
    pub stream: Option<TcpStream>,
    /// Its TCP connect has not completed yet.
    pub connecting: bool,
    /// The unparsed tail of the last read.
    pub carry: Vec<u8>,
    pub out: Outbox,
    /// epoll reported the server's FIN (EPOLLRDHUP). A short read is taken
    /// to drain the socket, which saves the read that would return EAGAIN,
    /// but when the FIN came with the last bytes no later edge will say
    /// so: once those are read, this stands for the read that returns 0.
    pub peer_closed: bool,
    /// The connection has carried an answered request: a kept-alive one,
    /// which the server may close just as the next request goes out.
    pub reused: bool,
}

impl Leg {
    /// Connected, so a request can be written.
    pub fn is_open(&self) -> bool {
        self.stream.is_some() && !self.connecting
    }

    /// What a burst of reads needs of the leg, borrowed apart; None when it
    /// has no socket.
    pub fn reading(&mut self) -> Option<Reading<'_>> {
        let Leg {
            stream,
            carry,
            out,
            peer_closed,
            ..
        } = self;
        Some(Reading {
            sock: stream.as_mut()?,
            carry,
            out,
            peer_closed: *peer_closed,
        })
    }
}

/// A leg's parts for reading it: see [`Leg::reading`].
pub struct Reading<'a> {
    pub sock: &'a mut TcpStream,
    pub carry: &'a mut Vec<u8>,
    pub out: &'a mut Outbox,
    pub peer_closed: bool,
}

/// Where the client's `xhr_send` stands: at most one is in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sending {
    Idle,
    /// A request is written, or waits for its connection. `answered`: its
    /// response has begun.
    InFlight {
        answered: bool,
    },
}

pub struct Client {
    pub phase: Phase,
    pub attempts: u8,
    /// The session's URL before the transport: `/<endpoint>/<server>/<session>`.
    pub base: String,
    pub recv: Leg,
    pub decoder: StreamDecoder,
    /// New connections for the stream since its last response began: a
    /// server that closes each unanswered must not be retried forever.
    pub stream_retries: u8,
    pub send: Leg,
    pub send_parser: Parser,
    pub sending: Sending,
    /// The `xhr_send` in flight, kept until it is answered, to be sent again
    /// on a new connection if the server closes the old one first.
    pub request: Vec<u8>,
    /// Messages waiting for the next `xhr_send`.
    pub batch: Batch,
    /// On the engine's list of clients whose batch may go this turn.
    pub batch_queued: bool,
    /// channels: the server answered `joined`.
    pub joined: bool,
}

impl Client {
    pub fn new() -> Client {
        Client {
            phase: Phase::Waiting,
            attempts: 0,
            base: String::new(),
            recv: Leg::default(),
            decoder: StreamDecoder::new(MAX_MESSAGE),
            stream_retries: 0,
            send: Leg::default(),
            send_parser: Parser::until_close(),
            sending: Sending::Idle,
            request: Vec::new(),
            batch: Batch::default(),
            batch_queued: false,
            joined: false,
        }
    }

    pub fn leg(&mut self, leg: usize) -> &mut Leg {
        if leg == RECV {
            &mut self.recv
        } else {
            &mut self.send
        }
    }

    /// Forgets everything of a previous attempt but the attempts (the
    /// engine has dropped the sockets).
    pub fn reset(&mut self) {
        *self = Client {
            attempts: self.attempts,
            ..Client::new()
        };
    }
}
