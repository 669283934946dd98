//! The three protocols switchboard-rpcload speaks, as pure codecs: bytes of
//! a call out, answers parsed from received bytes, no I/O and no clock.
//! Each file writes exactly what the Node client of its peer
//! (`benchmarks/rpc/peers/<name>/client.mjs`) writes for the same scenario,
//! and checks every answer against what the peer's server
//! (`.../server.mjs`) must send back.

pub mod http;
pub mod qrpc;
pub mod switchboard;

use http::Http;
use qrpc::Qrpc;
use switchboard::Switchboard;

/// The 16-byte request and response of tiny-response and serial-rtt
/// (`benchmarks/rpc/lib/wire.mjs`, `TINY`).
pub const TINY: &[u8; 16] = br#"{"a":1,"b":"xy"}"#;

/// The integer a fast reply carries (`FAST_CODE` in wire.mjs).
pub const FAST_CODE: u64 = 200;

/// The request payload of `bytes` bytes: TINY itself for 16, otherwise
/// TINY repeated and cut, so every size is the same kind of JSON-ish ASCII.
pub fn payload(bytes: usize) -> Vec<u8> {
    TINY.iter().copied().cycle().take(bytes).collect()
}

/// What the load asks for: which server action, and what answer is right.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// `tiny`: the payload, echoed back byte for byte.
    Echo,
    /// `fast`: no payload, answered with [`FAST_CODE`].
    Fast,
}

/// One parsed answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The right answer to call `seq` (`None`: the protocol answers in
    /// order and carries no id, so it is the oldest call's).
    Ok(Option<u64>),
    /// An answer to call `seq` that is not the right one (an error reply, a
    /// wrong payload or code): the call is over, but counted as bad.
    Bad(Option<u64>, &'static str),
    /// Bytes that answer no call (a heartbeat): nothing to count.
    Other,
}

/// A parse result: an answer and the bytes it used, `Ok(None)` until the
/// whole answer has arrived, or `Err` for bytes that break the protocol
/// (the connection cannot go on).
pub type Parsed = Result<Option<(Answer, usize)>, String>;

/// The protocols of `--protocol`, named after the peers that speak them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Switchboard,
    Qrpc,
    Http,
}

impl Protocol {
    pub const ALL: [Protocol; 3] = [Protocol::Switchboard, Protocol::Qrpc, Protocol::Http];

    pub fn name(self) -> &'static str {
        match self {
            Protocol::Switchboard => "switchboard",
            Protocol::Qrpc => "qrpc",
            Protocol::Http => "http",
        }
    }
}

/// One connection's codec, whichever the protocol: a match per call is
/// cheaper than a trait object's indirect call and keeps each codec a
/// plain struct.
#[derive(Clone, Debug)]
pub enum Codec {
    Switchboard(Switchboard),
    Qrpc(Qrpc),
    Http(Http),
}

impl Codec {
    /// `conn`: the connection's index (qrpc's call ids carry it); `host`:
    /// the HTTP `host` header.
    pub fn new(protocol: Protocol, call: Call, payload: &[u8], conn: u32, host: &str) -> Codec {
        match protocol {
            Protocol::Switchboard => Codec::Switchboard(Switchboard::new(call, payload)),
            Protocol::Qrpc => Codec::Qrpc(Qrpc::new(call, payload, conn)),
            Protocol::Http => Codec::Http(Http::new(call, payload, host)),
        }
    }

    /// What the client sends once connected, before any call (Switchboard's
    /// preface and HELLO; nothing for the others).
    pub fn greeting(&self, random: [u8; 16], out: &mut Vec<u8>) {
        if let Codec::Switchboard(_) = self {
            Switchboard::hello(random, out);
        }
    }

    /// The server's side of the handshake at the start of `buf`: the bytes
    /// it used once complete (`Some(0)` at once where there is none).
    pub fn handshake(&self, buf: &[u8], in_flight: u32) -> Result<Option<usize>, String> {
        match self {
            Codec::Switchboard(_) => Switchboard::handshake(buf, in_flight),
            Codec::Qrpc(_) | Codec::Http(_) => Ok(Some(0)),
        }
    }

    #[inline]
    pub fn write_call(&self, seq: u64, out: &mut Vec<u8>) {
        match self {
            Codec::Switchboard(c) => c.write_call(seq, out),
            Codec::Qrpc(c) => c.write_call(seq, out),
            Codec::Http(c) => c.write_call(seq, out),
        }
    }

    /// The answer at the start of `buf`; protocol-level replies (a pong)
    /// go to `out`.
    #[inline]
    pub fn parse(&self, buf: &[u8], out: &mut Vec<u8>) -> Parsed {
        match self {
            Codec::Switchboard(c) => c.parse(buf, out),
            Codec::Qrpc(c) => c.parse(buf),
            Codec::Http(c) => c.parse(buf),
        }
    }
}

/// Lowercase hexadecimal of `v` in exactly `N` digits (the low 4·N bits).
pub fn hex_fixed<const N: usize>(v: u64, out: &mut Vec<u8>) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut buf = [0u8; N];
    for (i, b) in buf.iter_mut().enumerate() {
        *b = DIGITS[((v >> (4 * (N - 1 - i))) & 0xf) as usize];
    }
    out.extend_from_slice(&buf);
}

/// The value of `N` hexadecimal digits, or None when one is not a digit.
pub fn parse_hex(digits: &[u8]) -> Option<u64> {
    digits.iter().try_fold(0u64, |acc, &c| {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => return None,
        };
        Some((acc << 4) | u64::from(d))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_sizes() {
        assert_eq!(payload(16), TINY.to_vec());
        assert_eq!(payload(0), Vec::<u8>::new());
        assert_eq!(payload(20), br#"{"a":1,"b":"xy"}{"a""#.to_vec());
    }

    #[test]
    fn hex_round_trip() {
        let mut out = Vec::new();
        hex_fixed::<8>(0x1a2b, &mut out);
        assert_eq!(out, b"00001a2b");
        assert_eq!(parse_hex(&out), Some(0x1a2b));
        assert_eq!(parse_hex(b"00001A2B"), Some(0x1a2b));
        assert_eq!(parse_hex(b"0000zz2b"), None);
    }
}
