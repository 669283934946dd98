//! The three framings of SCENARIOS.md over one WebSocket client: plain `ws`,
//! Socket.IO 5 over Engine.IO 4 (`socketio`) and SockJS's WebSocket
//! transport (`sockjs`); the SockJS frames are the same on its xhr-streaming
//! transport (`crate::xhr`). Payloads are ASCII that needs no JSON escaping,
//! so wrapping is a fixed prefix and suffix and unwrapping is a slice; a
//! string a server did escape (JSON allows any character to be, and
//! sockjs-node escapes some as `\uXXXX`) is decoded first, off that path.

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

/// A SockJS session's URL before its transport: `/<endpoint>/<server>/<session>`,
/// a server id of 3 digits and a session id of 8 random characters.
pub fn sockjs_session(endpoint: &str, rng: &mut XorShift) -> String {
    const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let server = rng.next_u64() % 1000;
    let session: String = (0..8)
        .map(|_| ALNUM[(rng.next_u64() % ALNUM.len() as u64) as usize] as char)
        .collect();
    format!("/{endpoint}/{server:03}/{session}")
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
                format!("{}/websocket", sockjs_session(&self.endpoint, rng))
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

    /// Interprets one text message from the server. A payload is handed
    /// to `on` as a slice of `text`, or of a buffer holding it decoded
    /// when the server escaped some of it.
    #[inline]
    pub fn decode(&self, text: &[u8], mut on: impl FnMut(Event<'_>)) -> Result<(), ProtoError> {
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
    fn decode_socketio(
        &self,
        text: &[u8],
        mut on: impl FnMut(Event<'_>),
    ) -> Result<(), ProtoError> {
        // The common case first: our own event, `42/<endpoint>,["m","<payload>"]`.
        if let Some(rest) = text.strip_prefix(&self.sio_event[..]) {
            let s =
                json_string_body(rest).ok_or_else(|| err("unterminated Socket.IO event", text))?;
            return payload_event(s, text, &mut on);
        }
        match text.first() {
            Some(b'0') => on(Event::Open),
            Some(b'1') => on(Event::Closed),
            Some(b'2') => on(Event::Ping),
            Some(b'3' | b'6') => {} // pong, noop
            Some(b'4') => match text.get(1) {
                Some(b'0') if text.starts_with(&self.sio_join) => on(Event::NamespaceJoined),
                Some(b'1') => on(Event::Closed),
                Some(b'2') => payload_event(
                    socketio_event_arg(&text[2..])
                        .ok_or_else(|| err("unexpected Socket.IO event", text))?,
                    text,
                    &mut on,
                )?,
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
fn socketio_event_arg(mut s: &[u8]) -> Option<JsonStr<'_>> {
    if s.first() == Some(&b'/') {
        let comma = s.iter().position(|&b| b == b',')?;
        s = &s[comma + 1..];
    }
    let digits = s.iter().take_while(|b| b.is_ascii_digit()).count();
    s = s[digits..].strip_prefix(b"[\"")?;
    let first = json_string_body(s)?;
    let s = s[first.end..].strip_prefix(b",\"")?;
    json_string_body(s)
}

/// A JSON string found in a message: its body as sent (between the quotes,
/// escapes and all), the index just past its closing quote, and whether the
/// body holds an escape (then it must be decoded to be read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct JsonStr<'a> {
    body: &'a [u8],
    end: usize,
    escaped: bool,
}

/// Hands `on` the payload `s` carries: the body itself when nothing in it
/// is escaped (every load payload), else its decoded copy.
#[inline]
fn payload_event(
    s: JsonStr<'_>,
    text: &[u8],
    on: &mut impl FnMut(Event<'_>),
) -> Result<(), ProtoError> {
    if !s.escaped {
        on(Event::Payload(s.body));
        return Ok(());
    }
    let decoded = unescaped_payload(s.body, text)?;
    on(Event::Payload(&decoded));
    Ok(())
}

/// The escaped path, out of line: load payloads never take it, and
/// inlined it cost the per-message path a third of its time.
#[cold]
#[inline(never)]
fn unescaped_payload(body: &[u8], text: &[u8]) -> Result<Vec<u8>, ProtoError> {
    let mut decoded = Vec::with_capacity(body.len());
    json_unescape(body, &mut decoded).map_err(|e| err(e, text))?;
    Ok(decoded)
}

/// Appends the UTF-8 text of a JSON string's body (RFC 8259 §7): the
/// two-character escapes and `\uXXXX`, a surrogate pair as the one
/// character it encodes. A lone surrogate, which JSON allows and UTF-8
/// cannot hold, becomes U+FFFD, as a UTF-8 decoder's replacement would.
pub fn json_unescape(body: &[u8], out: &mut Vec<u8>) -> Result<(), &'static str> {
    fn hex4(b: Option<&[u8]>) -> Option<u32> {
        let b = b?;
        let s = std::str::from_utf8(b).ok()?;
        if !s.bytes().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        u32::from_str_radix(s, 16).ok()
    }
    const BAD_U: &str = "a \\u escape without four hex digits";
    let mut i = 0;
    while i < body.len() {
        // Runs without escapes go over as they are.
        let run = memchr::memchr(b'\\', &body[i..]).unwrap_or(body.len() - i);
        out.extend_from_slice(&body[i..i + run]);
        i += run;
        if i == body.len() {
            break;
        }
        let Some(&e) = body.get(i + 1) else {
            return Err("a backslash that escapes nothing");
        };
        i += 2;
        let c = match e {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = hex4(body.get(i..i + 4)).ok_or(BAD_U)?;
                i += 4;
                let code = match unit {
                    0xD800..=0xDBFF => {
                        // A high surrogate: a low one must follow for a character.
                        let low = body
                            .get(i..i + 2)
                            .filter(|p| *p == b"\\u")
                            .and_then(|_| hex4(body.get(i + 2..i + 6)))
                            .filter(|l| (0xDC00..=0xDFFF).contains(l));
                        match low {
                            Some(low) => {
                                i += 6;
                                0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                            }
                            None => 0xFFFD,
                        }
                    }
                    0xDC00..=0xDFFF => 0xFFFD,
                    u => u,
                };
                char::from_u32(code).unwrap_or('\u{FFFD}')
            }
            _ => return Err("an unknown escape in a JSON string"),
        };
        let mut utf8 = [0u8; 4];
        out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
    }
    Ok(())
}

/// Given the bytes after a JSON string's opening quote, the string as
/// [`JsonStr`] (still escaped: load payloads never need escaping).
#[inline]
fn json_string_body(s: &[u8]) -> Option<JsonStr<'_>> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Marks the bytes of `v` equal to `b`. Borrows can only mark bytes after
    // a real match, so the lowest mark is always a real one.
    let matches = |v: u64, b: u8| {
        let x = v ^ (b as u64 * ONES);
        x.wrapping_sub(ONES) & !x & HIGH
    };
    let mut i = 0;
    let mut escaped = false;
    let found = |at: usize, escaped: bool| JsonStr {
        body: &s[..at],
        end: at + 1,
        escaped,
    };
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
            return Some(found(at, escaped));
        }
        escaped = true;
        i = at + 2;
    }
    while i < s.len() {
        match s[i] {
            b'"' => return Some(found(i, escaped)),
            b'\\' => {
                escaped = true;
                i += 2
            }
            _ => i += 1,
        }
    }
    None
}

/// Interprets one SockJS frame (a WebSocket text message, or a line of an
/// xhr-streaming response): `o`, `h`, `a[...]` (each message one
/// [`Event::Payload`]), `c[...]`, or the older `m"..."`.
#[inline]
pub fn decode_sockjs(text: &[u8], mut on: impl FnMut(Event<'_>)) -> Result<(), ProtoError> {
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
                let string = json_string_body(s).ok_or_else(|| err("bad SockJS array", text))?;
                payload_event(string, text, &mut on)?;
                let end = string.end;
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
            let string = json_string_body(s).ok_or_else(|| err("bad SockJS message", text))?;
            payload_event(string, text, &mut on)?;
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
            [r#"payload a"b"#]
        );
        assert_eq!(
            events(&c, br#"42/room,1["m","\u00e9",2]"#).unwrap(),
            ["payload é"]
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
            ["payload p1", "payload p2", r"payload p\3"]
        );
        // Escaped payloads arrive decoded, a stamp spelt with \u escapes too.
        assert_eq!(
            events(
                &c,
                br#"a["\u0030000000000000001\u00300000002xxxxxxxx","caf\u00e9 \ud83d\ude00\n"]"#
            )
            .unwrap(),
            [
                "payload 000000000000000100000002xxxxxxxx",
                "payload café 😀\n"
            ]
        );
        assert_eq!(events(&c, br#"m"single""#).unwrap(), ["payload single"]);
        assert_eq!(events(&c, br#"c[3000,"Go away!"]"#).unwrap(), ["Closed"]);
        assert!(events(&c, br#"a["p1""#).is_err());
        assert!(events(&c, br#"a[1]"#).is_err());
        assert!(events(&c, b"").is_err());
    }

    /// `json_string_body`'s answer as (body, end, escaped).
    fn string_at(s: &[u8]) -> Option<(&[u8], usize, bool)> {
        json_string_body(s).map(|j| (j.body, j.end, j.escaped))
    }

    #[test]
    fn json_strings() {
        assert_eq!(string_at(br#"abc"]"#), Some((&b"abc"[..], 4, false)));
        assert_eq!(string_at(b"\""), Some((&b""[..], 1, false)));
        assert_eq!(
            string_at(br#"0123456789abcdef"x"#),
            Some((&b"0123456789abcdef"[..], 17, false))
        );
        let escaped = br#"01234\"67\\89ab"x"#;
        assert_eq!(string_at(escaped), Some((&escaped[..15], 16, true)));
        // An escape found by the eight-byte loop, and by the byte loop after it.
        assert_eq!(string_at(br#"0123456789\u0041"#), None);
        assert_eq!(
            string_at(br#"0123456789\u0041""#),
            Some((&br#"0123456789\u0041"#[..], 17, true))
        );
        assert_eq!(string_at(br#"ab\"""#), Some((&br#"ab\""#[..], 5, true)));
        assert_eq!(string_at(br#"0123456\"#), None);
        assert_eq!(string_at(b"0123456789abcdefg"), None);
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
                    string_at(&s),
                    Some((&s[..len], len + 1, false)),
                    "len {len} fill {fill}"
                );
            }
        }
    }

    fn unescaped(body: &[u8]) -> Result<String, &'static str> {
        let mut out = b"pre:".to_vec();
        json_unescape(body, &mut out)?;
        Ok(String::from_utf8(out).expect("UTF-8"))
    }

    #[test]
    fn json_escapes() {
        assert_eq!(unescaped(b"plain"), Ok("pre:plain".into()));
        assert_eq!(
            unescaped(br#"\"\\\/\b\f\n\r\t"#),
            Ok("pre:\"\\/\u{8}\u{c}\n\r\t".into())
        );
        // What sockjs-node escapes: control characters, U+2028 and friends, surrogates.
        assert_eq!(
            unescaped(br#"a\u0000\u001f\u2028\u00E9\uFFFF"#),
            Ok("pre:a\u{0}\u{1f}\u{2028}é\u{ffff}".into())
        );
        assert_eq!(unescaped(br#"\ud83d\ude00!"#), Ok("pre:😀!".into()));
        assert_eq!(unescaped(br#"\uD83D\uDE00"#), Ok("pre:😀".into()));
        // Lone surrogates, in every arrangement, become U+FFFD.
        assert_eq!(unescaped(br#"\ud83dx"#), Ok("pre:\u{fffd}x".into()));
        assert_eq!(
            unescaped(br#"\ude00\ud83d"#),
            Ok("pre:\u{fffd}\u{fffd}".into())
        );
        assert_eq!(unescaped(br#"\ud83d\u0041"#), Ok("pre:\u{fffd}A".into()));
        assert_eq!(unescaped(br#"\ud83d\n"#), Ok("pre:\u{fffd}\n".into()));
        for bad in [
            &br#"\"#[..],
            br#"a\x"#,
            br#"\u12"#,
            br#"\u12g4"#,
            br#"\u+123"#,
        ] {
            assert!(
                unescaped(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        // UTF-8 passes through.
        assert_eq!(unescaped("é\\n".as_bytes()), Ok("pre:é\n".into()));
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
