//! Just enough RESP2 for a sharded pub/sub connection: what Redis sends to
//! a subscriber (`ssubscribe`/`sunsubscribe`/`smessage` arrays, errors such
//! as `-MOVED`, the `+OK` of `AUTH`) and the commands it is sent. Pure: bytes
//! in, replies out; "need more bytes" is `Ok(None)`.
//!
//! Why not the `redis` crate's connections: its pub/sub connection has no
//! `SSUBSCRIBE`, and its RESP3 multiplexed connection takes a `sunsubscribe`
//! that Redis pushes unasked (when a slot moves away) for the reply to the
//! oldest command in flight. Here every reply is classified by what it is.

/// One RESP2 value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reply {
    Simple(Vec<u8>),
    Error(String),
    Integer(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Reply>>),
}

/// The bytes do not follow RESP2: the connection is dropped.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Malformed;

/// Nesting deeper than this is refused: pub/sub replies are one level.
const MAX_DEPTH: usize = 8;

/// Parse one reply from the front of `buf`: the reply and the bytes it
/// took, or `None` when the buffer holds only part of it.
pub(crate) fn parse(buf: &[u8]) -> Result<Option<(Reply, usize)>, Malformed> {
    parse_at(buf, 0, 0)
}

fn parse_at(buf: &[u8], at: usize, depth: usize) -> Result<Option<(Reply, usize)>, Malformed> {
    if depth > MAX_DEPTH {
        return Err(Malformed);
    }
    let Some((line, next)) = line(buf, at) else {
        return Ok(None);
    };
    let (&kind, body) = line.split_first().ok_or(Malformed)?;
    match kind {
        b'+' => Ok(Some((Reply::Simple(body.to_vec()), next))),
        b'-' => Ok(Some((
            Reply::Error(String::from_utf8_lossy(body).into_owned()),
            next,
        ))),
        b':' => Ok(Some((Reply::Integer(number(body)?), next))),
        b'$' => {
            let len = number(body)?;
            if len < 0 {
                return Ok(Some((Reply::Bulk(None), next)));
            }
            let len = usize::try_from(len).map_err(|_| Malformed)?;
            let end = next.checked_add(len).ok_or(Malformed)?;
            if buf.len() < end + 2 {
                return Ok(None);
            }
            if &buf[end..end + 2] != b"\r\n" {
                return Err(Malformed);
            }
            Ok(Some((Reply::Bulk(Some(buf[next..end].to_vec())), end + 2)))
        }
        b'*' => {
            let count = number(body)?;
            if count < 0 {
                return Ok(Some((Reply::Array(None), next)));
            }
            // Not reserved from the count: a peer's number is not trusted
            // with an allocation before the elements are there.
            let mut items = Vec::new();
            let mut at = next;
            for _ in 0..count {
                match parse_at(buf, at, depth + 1)? {
                    Some((item, after)) => {
                        items.push(item);
                        at = after;
                    }
                    None => return Ok(None),
                }
            }
            Ok(Some((Reply::Array(Some(items)), at)))
        }
        _ => Err(Malformed),
    }
}

/// The line starting at `at` (without its CRLF) and where the next begins.
fn line(buf: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let rest = buf.get(at..)?;
    let end = rest.windows(2).position(|w| w == b"\r\n")?;
    Some((&rest[..end], at + end + 2))
}

fn number(digits: &[u8]) -> Result<i64, Malformed> {
    std::str::from_utf8(digits)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or(Malformed)
}

/// A command as RESP2 bytes, appended to `out`.
pub(crate) fn command<A: AsRef<[u8]>>(out: &mut Vec<u8>, args: &[A]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for arg in args {
        let arg = arg.as_ref();
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

/// What a reply on a sharded pub/sub connection means.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Event {
    /// `smessage`: a message on a sharded channel.
    Message { channel: Vec<u8>, payload: Vec<u8> },
    /// `ssubscribe`: a subscription confirmed.
    Subscribed(Vec<u8>),
    /// `sunsubscribe`: the answer to our SUNSUBSCRIBE, or Redis dropping
    /// the subscription itself because the channel's slot moved away.
    Unsubscribed(Vec<u8>),
    /// `-MOVED <slot> <host>:<port>`: the slot is served elsewhere.
    Moved { slot: u16, addr: String },
    /// Another error, such as `-NOPERM`.
    Error(String),
    /// Anything else (`+OK`, a `pong`): nothing to do.
    Other,
}

impl Event {
    pub(crate) fn of(reply: Reply) -> Self {
        match reply {
            Reply::Error(text) => match moved(&text) {
                Some((slot, addr)) => Event::Moved { slot, addr },
                None => Event::Error(text),
            },
            Reply::Array(Some(items)) => {
                let mut items = items.into_iter();
                let (Some(Reply::Bulk(Some(kind))), Some(Reply::Bulk(Some(channel)))) =
                    (items.next(), items.next())
                else {
                    return Event::Other;
                };
                match kind.as_slice() {
                    b"smessage" => match items.next() {
                        Some(Reply::Bulk(Some(payload))) => Event::Message { channel, payload },
                        _ => Event::Other,
                    },
                    b"ssubscribe" => Event::Subscribed(channel),
                    b"sunsubscribe" => Event::Unsubscribed(channel),
                    _ => Event::Other,
                }
            }
            _ => Event::Other,
        }
    }
}

/// `MOVED <slot> <host>:<port>`, as Redis writes it.
pub(crate) fn moved(error: &str) -> Option<(u16, String)> {
    let mut words = error.split_ascii_whitespace();
    if words.next()? != "MOVED" {
        return None;
    }
    let slot = words.next()?.parse().ok()?;
    let addr = words.next()?.to_string();
    Some((slot, addr))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(b: &[u8]) -> Reply {
        Reply::Bulk(Some(b.to_vec()))
    }

    #[test]
    fn parses_what_a_subscriber_receives() {
        let bytes = b"*3\r\n$8\r\nsmessage\r\n$4\r\nroom\r\n$5\r\nhe\r\no\r\n";
        let (reply, used) = parse(bytes).unwrap().unwrap();
        assert_eq!(used, bytes.len());
        assert_eq!(
            Event::of(reply),
            Event::Message {
                channel: b"room".to_vec(),
                payload: b"he\r\no".to_vec()
            }
        );
        let (reply, _) = parse(b"*3\r\n$10\r\nssubscribe\r\n$1\r\na\r\n:1\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(Event::of(reply), Event::Subscribed(b"a".to_vec()));
        let (reply, _) = parse(b"*3\r\n$12\r\nsunsubscribe\r\n$1\r\na\r\n:0\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(Event::of(reply), Event::Unsubscribed(b"a".to_vec()));
        let (reply, _) = parse(b"-MOVED 3999 127.0.0.1:6381\r\n").unwrap().unwrap();
        assert_eq!(
            Event::of(reply),
            Event::Moved {
                slot: 3999,
                addr: "127.0.0.1:6381".into()
            }
        );
        let (reply, _) = parse(b"-NOPERM no\r\n").unwrap().unwrap();
        assert_eq!(Event::of(reply), Event::Error("NOPERM no".into()));
        let (reply, _) = parse(b"+OK\r\n").unwrap().unwrap();
        assert_eq!(Event::of(reply), Event::Other);
    }

    #[test]
    fn needs_more_bytes_at_every_cut() {
        let bytes = b"*3\r\n$8\r\nsmessage\r\n$4\r\nroom\r\n$2\r\nhi\r\n:12\r\n$-1\r\n*-1\r\n";
        let (_, first) = parse(bytes).unwrap().unwrap();
        for cut in 0..first {
            assert_eq!(parse(&bytes[..cut]), Ok(None), "cut at {cut}");
        }
        let rest = &bytes[first..];
        let (n, a) = parse(rest).unwrap().unwrap();
        assert_eq!(n, Reply::Integer(12));
        let (nil, b) = parse(&rest[a..]).unwrap().unwrap();
        assert_eq!(nil, Reply::Bulk(None));
        let (none, _) = parse(&rest[a + b..]).unwrap().unwrap();
        assert_eq!(none, Reply::Array(None));
        assert_eq!(bulk(b"x"), Reply::Bulk(Some(vec![b'x'])));
    }

    #[test]
    fn refuses_what_is_not_resp() {
        assert_eq!(parse(b"hello\r\n"), Err(Malformed));
        assert_eq!(parse(b"$x\r\n"), Err(Malformed));
        assert_eq!(parse(b"$2\r\nabcd\r\n"), Err(Malformed));
        assert_eq!(parse(b"\r\n"), Err(Malformed));
        let deep = "*1\r\n".repeat(20);
        assert_eq!(parse(deep.as_bytes()), Err(Malformed));
    }

    #[test]
    fn writes_commands() {
        let mut out = Vec::new();
        command(&mut out, &[&b"SSUBSCRIBE"[..], b"a{b}"]);
        assert_eq!(out, b"*2\r\n$10\r\nSSUBSCRIBE\r\n$4\r\na{b}\r\n");
    }
}
