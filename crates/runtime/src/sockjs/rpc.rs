//! A SockJS session that carries the Switchboard protocol
//! (`ConnectionKind::RpcSockJsHttp`, `app.sockjs(prefix, { rpc: true })`):
//! the protocol's reading side, kept with the session.
//!
//! A protocol connection on a socket has its reader in its session on its
//! I/O thread (`session/`), which also answers the HELLO and heartbeats
//! there. A SockJS session has no such home: its sends (`xhr_send`) may
//! arrive on any connection of any I/O thread. So the reader lives here,
//! behind the session's own lock, and whichever thread reads a send feeds
//! it (`session/http/sockjs_rpc.rs`): the handshake, heartbeats and every
//! frame's checks happen natively, as on every other transport, and the
//! worker sees an `RPC_OPEN` and frames, like any protocol connection's.
//! The lock also keeps two sends that race on two threads from
//! interleaving their frames.

use std::time::Instant;

use bytes::Bytes;
use switchboard_proto::rpc::{self, PREFACE};

use crate::framing;
use crate::rpc_reader::RpcReader;
use crate::tls::TlsInfo;

/// What the worker's `RPC_OPEN` reports of the session's first request.
pub(crate) struct CarriedOpening {
    pub(crate) remote: String,
    pub(crate) tls: Option<TlsInfo>,
}

pub(crate) struct RpcCarriage {
    pub(crate) reader: RpcReader,
    /// Kept from the session's opening until its HELLO.
    pub(crate) opening: Option<CarriedOpening>,
    /// The HELLO must come by then (`handshakeTimeout` after the session
    /// opened); `None` before it opened and once the HELLO came.
    pub(crate) hello_deadline: Option<Instant>,
    /// Our WELCOME is queued: our preface went out with it.
    pub(crate) welcomed: bool,
    /// The client broke the protocol (or was too slow to greet): what it
    /// sends from now on is dropped, the session is closing.
    pub(crate) failed: bool,
    /// The highest call id of the client's so far, for a GO_AWAY.
    pub(crate) last_call_id: u64,
    /// Decoded bytes of the message being fed (kept between messages of
    /// one send; freed with the send's end).
    pub(crate) scratch: Vec<u8>,
}

impl RpcCarriage {
    /// `max_frame_size`: the largest frame body our WELCOME allows.
    pub(crate) fn new(max_frame_size: usize) -> Self {
        Self {
            reader: RpcReader::new(max_frame_size),
            opening: None,
            hello_deadline: None,
            welcomed: false,
            failed: false,
            last_call_id: 0,
            scratch: Vec::new(),
        }
    }

    /// A GO_AWAY with `code` and `message` in one carried message; our
    /// preface first when no WELCOME went out (docs/protocol.md §2). A
    /// client that did not even send the preface is not speaking the
    /// protocol: it gets none (`None`).
    pub(crate) fn go_away(&self, code: &str, message: &str) -> Option<Bytes> {
        if !self.welcomed && code == "ERR_PROTOCOL_PREFACE" {
            return None;
        }
        let mut frame = Vec::with_capacity(24 + code.len() + message.len());
        if !self.welcomed {
            frame.extend_from_slice(PREFACE);
        }
        rpc::encode_go_away(self.last_call_id, code, message, &mut frame);
        Some(framing::sockjs_carried(&frame))
    }
}

/// The protocol code a close reason starts with (`<code>: text`), if it is
/// one the protocol can carry (§3: printable ASCII); else the generic
/// `ERR_GOING_AWAY`. The same rule as a socket session's close.
pub(crate) fn reason_code(reason: &str) -> &str {
    reason
        .split(':')
        .next()
        .filter(|c| c.starts_with("ERR_") && rpc::is_code(c))
        .unwrap_or(crate::errors::GOING_AWAY.code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_go_away_before_the_welcome_starts_with_our_preface() {
        let mut carriage = RpcCarriage::new(1024);
        let before = carriage.go_away("ERR_HANDSHAKE_TIMEOUT", "").unwrap();
        carriage.welcomed = true;
        let after = carriage.go_away("ERR_HANDSHAKE_TIMEOUT", "").unwrap();
        let decode = |frame: &Bytes| {
            let text = std::str::from_utf8(&frame[3..frame.len() - 2]).unwrap();
            let mut bytes = Vec::new();
            switchboard_proto::sockjs::decode_carried(text, &mut bytes).unwrap();
            bytes
        };
        assert_eq!(&decode(&before)[..4], PREFACE);
        assert_eq!(&decode(&before)[4..], &decode(&after)[..]);
        assert!(carriage.go_away("ERR_PROTOCOL_PREFACE", "").is_some());
        carriage.welcomed = false;
        assert!(carriage.go_away("ERR_PROTOCOL_PREFACE", "").is_none());
    }

    #[test]
    fn a_close_reason_gives_its_code_when_the_protocol_can_carry_it() {
        assert_eq!(reason_code("ERR_X: why"), "ERR_X");
        assert_eq!(reason_code("ERR_X"), "ERR_X");
        assert_eq!(reason_code("server shutting down"), "ERR_GOING_AWAY");
        assert_eq!(reason_code("ERR_ spaced: no"), "ERR_GOING_AWAY");
    }
}
