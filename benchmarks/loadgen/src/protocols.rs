//! The three framings of SCENARIOS.md over one WebSocket client: plain `ws`,
//! Socket.IO 5 over Engine.IO 4 (`socketio`) and SockJS's WebSocket
//! transport (`sockjs`). Payloads are ASCII that needs no JSON escaping, so
//! wrapping is a fixed prefix and suffix and unwrapping is a slice.

use crate::frame::{self, XorShift, OP_TEXT};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Ws,
    SocketIo,
    SockJs,
}

impl Protocol {
    pub fn parse(s: &str) -> Option<Protocol> {
        match s {
            "ws" => Some(Protocol::Ws),
            "socketio" => Some(Protocol::SocketIo),
            "sockjs" => Some(Protocol::SockJs),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Protocol::Ws => "ws",
            Protocol::SocketIo => "socketio",
            Protocol::SockJs => "sockjs",
        }
    }
}

/// What one text message from the server means.
#[derive(Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// An application payload (a load message, or `joined`).
    Payload(&'a [u8]),
    /// Engine.IO's open packet `0{...}` or SockJS's `o`.
    Open,
    /// Socket.IO's namespace connect answer `40/<ns>,{...}`.
    NamespaceJoined,
    /// Engine.IO's ping `2`, to be answered with `3`.
    Ping,
    /// The server ended the session (Engine.IO `1`, Socket.IO `41`, SockJS `c[...]`).
    Closed,
}

#[derive(Debug, PartialEq, Eq)]
pub struct ProtoError(pub String);

impl std::fmt::Display for ProtoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn err(what: &str, text: &[u8]) -> ProtoError {
    let shown = &text[..text.len().min(80)];
    ProtoError(format!("{what}: {:?}", String::from_utf8_lossy(shown)))
}

/// Framing for one run: the protocol and the endpoint (`echo`, `room`, ...).
pub struct Codec {
    pub protocol: Protocol,
    endpoint: String,
    /// `42/<endpoint>,["m","`: the start of every Socket.IO message, both ways.
    sio_event: Vec<u8>,
    /// `40/<endpoint>,`: the namespace join (and the start of its answer).
    sio_join: Vec<u8>,
}

impl Codec {
    pub fn new(protocol: Protocol, endpoint: &str) -> Codec {
        Codec {
            protocol,
            endpoint: endpoint.to_string(),
            sio_event: format!("42/{endpoint},[\"m\",\"").into_bytes(),
            sio_join: format!("40/{endpoint},").into_bytes(),
        }
    }

    /// The request path of the WebSocket upgrade.
    pub fn path(&self, rng: &mut XorShift) -> String {
        match self.protocol {
            Protocol::Ws => format!("/{}", self.endpoint),
            Protocol::SocketIo => "/socket.io/?EIO=4&transport=websocket".to_string(),
            Protocol::SockJs => {
                // SockJS URLs carry a server id (3 digits) and a session id.
                const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
                let server = rng.next_u64() % 1000;
                let session: String = (0..8)
                    .map(|_| ALNUM[(rng.next_u64() % ALNUM.len() as u64) as usize] as char)
                    .collect();
                format!("/{}/{server:03}/{session}/websocket", self.endpoint)
            }
        }
    }

    /// Whether the session is usable as soon as the HTTP upgrade succeeds
    /// (otherwise it waits for [`Event::Open`], then for Socket.IO also
    /// [`Event::NamespaceJoined`]).
    pub fn ready_on_upgrade(&self) -> bool {
        self.protocol == Protocol::Ws
    }

    /// The namespace join Socket.IO sends after Engine.IO's open packet.
    pub fn namespace_join(&self) -> Option<&[u8]> {
        (self.protocol == Protocol::SocketIo).then_some(&self.sio_join[..])
    }

    /// Length on the wire of a message carrying `payload_len` bytes.
    #[inline]
    pub fn wrapped_len(&self, payload_len: usize) -> usize {
        match self.protocol {
            Protocol::Ws => payload_len,
            Protocol::SocketIo => self.sio_event.len() + payload_len + 2,
            Protocol::SockJs => payload_len + 4,
        }
    }

    /// Appends a masked text frame carrying one message whose payload of
    /// exactly `payload_len` bytes `fill` appends.
    #[inline]
    pub fn write_message(
        &self,
        out: &mut Vec<u8>,
        rng: &mut XorShift,
        payload_len: usize,
        fill: impl FnOnce(&mut Vec<u8>),
    ) {
        let mask = rng.next_mask();
        let wire_len = self.wrapped_len(payload_len);
        let start = frame::begin_masked(out, OP_TEXT, wire_len, mask);
        match self.protocol {
            Protocol::Ws => fill(out),
            Protocol::SocketIo => {
                out.extend_from_slice(&self.sio_event);
                fill(out);
                out.extend_from_slice(b"\"]");
            }
            Protocol::SockJs => {
                out.extend_from_slice(b"[\"");
                fill(out);
                out.extend_from_slice(b"\"]");
            }
        }
        debug_assert_eq!(out.len() - start, wire_len);
        frame::finish_masked(out, start, mask);
    }

    /// Appends a masked text frame carrying `text` as it is (Engine.IO and
    /// Socket.IO control packets).
    pub fn write_raw(out: &mut Vec<u8>, rng: &mut XorShift, text: &[u8]) {
        let mask = rng.next_mask();
        let start = frame::begin_masked(out, OP_TEXT, text.len(), mask);
        out.extend_from_slice(text);
        frame::finish_masked(out, start, mask);
    }

    /// Interprets one text message from the server.
    #[inline]
    pub fn decode<'a>(
        &self,
        text: &'a [u8],
        mut on: impl FnMut(Event<'a>),
    ) -> Result<(), ProtoError> {
        match self.protocol {
            Protocol::Ws => {
                on(Event::Payload(text));
                Ok(())
            }
            Protocol::SocketIo => self.decode_socketio(text, on),
            Protocol::SockJs => decode_sockjs(text, on),
        }
    }

    #[inline]
    fn decode_socketio<'a>(
        &self,
        text: &'a [u8],
        mut on: impl FnMut(Event<'a>),
    ) -> Result<(), ProtoError> {
        // The common case first: our own event, `42/<endpoint>,["m","<payload>"]`.
        if let Some(rest) = text.strip_prefix(&self.sio_event[..]) {
            let (payload, _) =
                json_string_body(rest).ok_or_else(|| err("unterminated Socket.IO event", text))?;
            on(Event::Payload(payload));
            return Ok(());
        }
        match text.first() {
            Some(b'0') => on(Event::Open),
            Some(b'1') => on(Event::Closed),
            Some(b'2') => on(Event::Ping),
            Some(b'3' | b'6') => {} // pong, noop
            Some(b'4') => match text.get(1) {
                Some(b'0') if text.starts_with(&self.sio_join) => on(Event::NamespaceJoined),
                Some(b'1') => on(Event::Closed),
                Some(b'2') => on(Event::Payload(
                    socketio_event_arg(&text[2..])
                        .ok_or_else(|| err("unexpected Socket.IO event", text))?,
                )),
                Some(b'4') => return Err(err("Socket.IO namespace refused", text)),
                _ => return Err(err("unexpected Socket.IO packet", text)),
            },
            _ => return Err(err("unexpected Engine.IO packet", text)),
        }
        Ok(())
    }
}

/// The first argument after the event name of a Socket.IO event packet
/// (after `42`): `[/<ns>,][<ack id>]["<event>","<arg>",...]`.
fn socketio_event_arg(mut s: &[u8]) -> Option<&[u8]> {
    if s.first() == Some(&b'/') {
        let comma = s.iter().position(|&b| b == b',')?;
        s = &s[comma + 1..];
    }
    let digits = s.iter().take_while(|b| b.is_ascii_digit()).count();
    s = s[digits..].strip_prefix(b"[\"")?;
    let (_, end) = json_string_body(s)?;
    let s = s[end..].strip_prefix(b",\"")?;
    Some(json_string_body(s)?.0)
}

/// Given the bytes after a JSON string's opening quote, the string's body
/// (still escaped: load payloads never need escaping) and the index just
/// past its closing quote.
#[inline]
fn json_string_body(s: &[u8]) -> Option<(&[u8], usize)> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Marks the bytes of `v` equal to `b`. Borrows can only mark bytes after
    // a real match, so the lowest mark is always a real one.
    let matches = |v: u64, b: u8| {
        let x = v ^ (b as u64 * ONES);
        x.wrapping_sub(ONES) & !x & HIGH
    };
    let mut i = 0;
    // Eight bytes at a time up to the first quote or backslash: payloads
    // are long runs of neither.
    while i + 8 <= s.len() {
        let mut w = [0u8; 8];
        w.copy_from_slice(&s[i..i + 8]);
        let v = u64::from_le_bytes(w);
        let m = matches(v, b'"') | matches(v, b'\\');
        if m == 0 {
            i += 8;
            continue;
        }
        let at = i + (m.trailing_zeros() / 8) as usize;
        if s[at] == b'"' {
            return Some((&s[..at], at + 1));
        }
        i = at + 2;
    }
    while i < s.len() {
        match s[i] {
            b'"' => return Some((&s[..i], i + 1)),
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    None
}

#[inline]
fn decode_sockjs<'a>(text: &'a [u8], mut on: impl FnMut(Event<'a>)) -> Result<(), ProtoError> {
    match text.first() {
        Some(b'a') => {
            // a["m1","m2",...]: one frame may batch several messages.
            let mut s = text[1..]
                .strip_prefix(b"[")
                .ok_or_else(|| err("bad SockJS array", text))?;
            loop {
                s = s
                    .strip_prefix(b"\"")
                    .ok_or_else(|| err("bad SockJS array", text))?;
                let (body, end) =
                    json_string_body(s).ok_or_else(|| err("bad SockJS array", text))?;
                on(Event::Payload(body));
                match s.get(end) {
                    Some(b',') => s = &s[end + 1..],
                    Some(b']') => return Ok(()),
                    _ => return Err(err("bad SockJS array", text)),
                }
            }
        }
        Some(b'm') => {
            // The older single-message form m"...".
            let s = text[1..]
                .strip_prefix(b"\"")
                .ok_or_else(|| err("bad SockJS message", text))?;
            on(Event::Payload(
                json_string_body(s)
                    .ok_or_else(|| err("bad SockJS message", text))?
                    .0,
            ));
        }
        Some(b'o') => on(Event::Open),
        Some(b'h') => {}
        Some(b'c') => on(Event::Closed),
        _ => return Err(err("unexpected SockJS frame", text)),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{Deframer, Flow, Msg};

    fn events(codec: &Codec, text: &[u8]) -> Result<Vec<String>, ProtoError> {
        let mut out = Vec::new();
        codec.decode(text, |e| {
            out.push(match e {
                Event::Payload(p) => format!("payload {}", String::from_utf8_lossy(p)),
                other => format!("{other:?}"),
            })
        })?;
        Ok(out)
    }

    /// Unmasks a client frame the way a server would, returning its text.
    fn unmask(frame: &[u8]) -> Vec<u8> {
        assert_eq!(frame[1] & 0x80, 0x80);
        let (len, head) = match frame[1] & 0x7F {
            126 => (u16::from_be_bytes([frame[2], frame[3]]) as usize, 4),
            n => (n as usize, 2),
        };
        let mask = &frame[head..head + 4];
        let body = &frame[head + 4..];
        assert_eq!(body.len(), len);
        body.iter()
            .enumerate()
            .map(|(i, b)| b ^ mask[i % 4])
            .collect()
    }

    fn wire(codec: &Codec, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        codec.write_message(&mut out, &mut XorShift::new(3), payload.len(), |o| {
            o.extend_from_slice(payload)
        });
        unmask(&out)
    }

    #[test]
    fn ws_is_transparent() {
        let c = Codec::new(Protocol::Ws, "echo");
        assert_eq!(wire(&c, b"abc"), b"abc");
        assert_eq!(events(&c, b"abc").unwrap(), ["payload abc"]);
        assert!(c.ready_on_upgrade());
        assert_eq!(c.path(&mut XorShift::new(1)), "/echo");
    }

    #[test]
    fn socketio_framing() {
        let c = Codec::new(Protocol::SocketIo, "room");
        assert_eq!(
            c.path(&mut XorShift::new(1)),
            "/socket.io/?EIO=4&transport=websocket"
        );
        assert_eq!(wire(&c, b"abc"), br#"42/room,["m","abc"]"#);
        assert_eq!(c.namespace_join(), Some(&b"40/room,"[..]));
        let open = br#"0{"sid":"x","upgrades":[],"pingInterval":25000,"pingTimeout":20000,"maxPayload":1000000}"#;
        assert_eq!(events(&c, open).unwrap(), ["Open"]);
        assert_eq!(
            events(&c, br#"40/room,{"sid":"y"}"#).unwrap(),
            ["NamespaceJoined"]
        );
        assert_eq!(events(&c, b"2").unwrap(), ["Ping"]);
        assert_eq!(events(&c, b"3").unwrap(), Vec::<String>::new());
        assert_eq!(
            events(&c, br#"42/room,["m","0000abc"]"#).unwrap(),
            ["payload 0000abc"]
        );
        // Other spellings of the same event: an ack id, extra arguments.
        assert_eq!(
            events(&c, br#"42/room,7["m","p",1]"#).unwrap(),
            ["payload p"]
        );
        assert_eq!(
            events(&c, br#"42/room,["m","a\"b"]"#).unwrap(),
            [r#"payload a\"b"#]
        );
        assert_eq!(events(&c, b"41/room,").unwrap(), ["Closed"]);
        assert_eq!(events(&c, b"1").unwrap(), ["Closed"]);
        assert!(events(&c, br#"44/room,{"message":"Invalid namespace"}"#).is_err());
        assert!(events(&c, br#"42/room,["m","unterminated"#).is_err());
        assert!(events(&c, b"x").is_err());
    }

    #[test]
    fn sockjs_framing() {
        let c = Codec::new(Protocol::SockJs, "channels");
        let path = c.path(&mut XorShift::new(9));
        let parts: Vec<&str> = path.split('/').collect();
        assert_eq!(parts[1], "channels");
        assert!(parts[2].len() == 3 && parts[2].bytes().all(|b| b.is_ascii_digit()));
        assert!(parts[3].len() == 8 && parts[3].bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_eq!(parts[4], "websocket");
        assert_eq!(wire(&c, b"join:c1"), br#"["join:c1"]"#);
        assert_eq!(events(&c, b"o").unwrap(), ["Open"]);
        assert_eq!(events(&c, b"h").unwrap(), Vec::<String>::new());
        assert_eq!(events(&c, br#"a["joined"]"#).unwrap(), ["payload joined"]);
        assert_eq!(
            events(&c, br#"a["p1","p2","p\\3"]"#).unwrap(),
            ["payload p1", "payload p2", r"payload p\\3"]
        );
        assert_eq!(events(&c, br#"m"single""#).unwrap(), ["payload single"]);
        assert_eq!(events(&c, br#"c[3000,"Go away!"]"#).unwrap(), ["Closed"]);
        assert!(events(&c, br#"a["p1""#).is_err());
        assert!(events(&c, br#"a[1]"#).is_err());
        assert!(events(&c, b"").is_err());
    }

    #[test]
    fn json_strings() {
        assert_eq!(json_string_body(br#"abc"]"#), Some((&b"abc"[..], 4)));
        assert_eq!(json_string_body(b"\""), Some((&b""[..], 1)));
        assert_eq!(
            json_string_body(br#"0123456789abcdef"x"#),
            Some((&b"0123456789abcdef"[..], 17))
        );
        let escaped = br#"01234\"67\\89ab"x"#;
        assert_eq!(json_string_body(escaped), Some((&escaped[..15], 16)));
        assert_eq!(json_string_body(br#"0123456\"#), None);
        assert_eq!(json_string_body(b"0123456789abcdefg"), None);
        // Every position of the closing quote, after every kind of byte.
        for len in 0..40 {
            for fill in [
                b'x',
                0x80,
                0xFF,
                0x00,
                0x01,
                b'!',
                b'#',
                b'"' + 1,
                b'\\' + 1,
            ] {
                let mut s = vec![fill; len];
                s.extend_from_slice(b"\"tail\"");
                assert_eq!(
                    json_string_body(&s),
                    Some((&s[..len], len + 1)),
                    "len {len} fill {fill}"
                );
            }
        }
    }

    #[test]
    fn sockjs_batch_split_over_frames() {
        // A server batch arrives in two TCP reads; the deframer delivers it whole.
        let body = br#"a["000000000000000100000002xxxxxxxx","000000000000000200000003xxxxxxxx"]"#;
        let mut stream = vec![0x81, body.len() as u8];
        stream.extend_from_slice(body);
        let c = Codec::new(Protocol::SockJs, "room");
        let mut d = Deframer::new(1 << 16);
        let mut got = Vec::new();
        let (a, b) = stream.split_at(30);
        let mut buf = a.to_vec();
        let mut feed = |buf: &[u8], got: &mut Vec<(u64, u32)>| {
            d.feed(buf, |m| {
                if let Msg::Text(t) = m {
                    c.decode(t, |e| {
                        if let Event::Payload(p) = e {
                            got.push(crate::payload::parse(p).unwrap());
                        }
                    })
                    .unwrap();
                }
                Flow::Continue
            })
            .unwrap()
        };
        assert_eq!(feed(&buf, &mut got), 0);
        buf.extend_from_slice(b);
        assert_eq!(feed(&buf, &mut got), stream.len());
        assert_eq!(got, [(1, 2), (2, 3)]);
    }
}
