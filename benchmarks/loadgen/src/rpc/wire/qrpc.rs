//! qrpc 1.1.6's wire: one JSON object per line, both ways. A call is what
//! `QrpcClient.call(name, data)` writes (`lib/qrpc-message.js`, encodeV1):
//!
//! ```text
//! {"v":1,"id":"<24 hex digits>","n":"tiny","m":"{\"a\":1,\"b\":\"xy\"}"}\n
//! {"v":1,"id":"<24 hex digits>","n":"fast"}\n
//! ```
//!
//! (qrpc's own ids are 24-hex-digit mongoids; ours are the connection's
//! index in 8 digits and the call's sequence number in 16, so an answer
//! names its call.) The server's `next(null, ret)` answers
//! `{"v":1,"id":"<id>","e":null,"m":<ret as JSON>}\n`; an error reply has a
//! non-null `e`.

use super::{hex_fixed, parse_hex, Answer, Call, Parsed, FAST_CODE};

/// A line longer than this without its newline is not an answer to a small
/// call: the connection is given up rather than buffered without bound.
const MAX_LINE: usize = 64 << 10;

const HEAD: &[u8] = br#"{"v":1,"id":""#;
const ID_DIGITS: usize = 24;

/// One connection's codec.
#[derive(Clone, Debug)]
pub struct Qrpc {
    conn: u32,
    /// After the id: `","n":"tiny","m":"…"}\n` or `","n":"fast"}\n`.
    tail: Vec<u8>,
    /// The `m` of the right answer, as the server's JSON.stringify writes it.
    expect_m: Vec<u8>,
}

/// `s` as a JSON string literal, quotes included, escaped as
/// JSON.stringify escapes it.
pub fn json_string(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &c in s {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0..=0x1f => {
                out.extend_from_slice(b"\\u00");
                hex_fixed::<2>(u64::from(c), out);
            }
            _ => out.push(c),
        }
    }
    out.push(b'"');
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

impl Qrpc {
    /// `conn`: the connection's index, the first half of every call id.
    /// The payload must be text (qrpc's client sends a string).
    pub fn new(call: Call, payload: &[u8], conn: u32) -> Qrpc {
        let mut tail = Vec::new();
        let mut expect_m = Vec::new();
        match call {
            Call::Echo => {
                tail.extend_from_slice(br#"","n":"tiny","m":"#);
                json_string(payload, &mut tail);
                json_string(payload, &mut expect_m);
            }
            Call::Fast => {
                tail.extend_from_slice(br#"","n":"fast""#);
                expect_m.extend_from_slice(FAST_CODE.to_string().as_bytes());
            }
        }
        tail.extend_from_slice(b"}\n");
        Qrpc {
            conn,
            tail,
            expect_m,
        }
    }

    /// Appends call `seq`.
    #[inline]
    pub fn write_call(&self, seq: u64, out: &mut Vec<u8>) {
        out.extend_from_slice(HEAD);
        hex_fixed::<8>(u64::from(self.conn), out);
        hex_fixed::<16>(seq, out);
        out.extend_from_slice(&self.tail);
    }

    /// The line at the start of `buf`.
    #[inline]
    pub fn parse(&self, buf: &[u8]) -> Parsed {
        let Some(nl) = buf.iter().position(|&c| c == b'\n') else {
            if buf.len() > MAX_LINE {
                return Err(format!("no newline in {} bytes", buf.len()));
            }
            return Ok(None);
        };
        Ok(Some((self.answer(&buf[..nl])?, nl + 1)))
    }

    fn answer(&self, line: &[u8]) -> Result<Answer, String> {
        let text = || String::from_utf8_lossy(&line[..line.len().min(120)]).into_owned();
        let id = line
            .strip_prefix(HEAD)
            .and_then(|rest| rest.get(..ID_DIGITS + 1))
            .filter(|id| id[ID_DIGITS] == b'"')
            .map(|id| (parse_hex(&id[..8]), parse_hex(&id[8..ID_DIGITS])));
        let Some((Some(conn), Some(seq))) = id else {
            return Err(format!("not a qrpc answer: {}", text()));
        };
        if conn != u64::from(self.conn) {
            return Err(format!(
                "an answer to another connection's call: {}",
                text()
            ));
        }
        let id = Some(seq);
        let rest = &line[HEAD.len() + ID_DIGITS + 1..];
        if !rest.ends_with(b"}") {
            return Err(format!("not a qrpc answer: {}", text()));
        }
        if let Some(at) = find(rest, br#","e":"#) {
            if !rest[at + 5..].starts_with(b"null") {
                return Ok(Answer::Bad(id, "an error reply"));
            }
        }
        let Some(at) = find(rest, br#","m":"#) else {
            return Ok(Answer::Bad(id, "an answer without a result"));
        };
        if &rest[at + 5..rest.len() - 1] != self.expect_m.as_slice() {
            return Ok(Answer::Bad(id, "a wrong result"));
        }
        Ok(Answer::Ok(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::TINY;

    #[test]
    fn calls_are_what_qrpc_client_writes() {
        let q = Qrpc::new(Call::Echo, TINY, 0x2a);
        let mut out = Vec::new();
        q.write_call(0x1234, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"v\":1,\"id\":\"0000002a0000000000001234\",\"n\":\"tiny\",\"m\":\"{\\\"a\\\":1,\\\"b\\\":\\\"xy\\\"}\"}\n"
        );
        let f = Qrpc::new(Call::Fast, TINY, 1);
        let mut out = Vec::new();
        f.write_call(1, &mut out);
        assert_eq!(
            out,
            b"{\"v\":1,\"id\":\"000000010000000000000001\",\"n\":\"fast\"}\n"
        );
    }

    #[test]
    fn answers_as_the_server_writes_them() {
        let q = Qrpc::new(Call::Echo, TINY, 0x2a);
        // Captured from benchmarks/rpc/peers/qrpc/server.mjs.
        let ok = b"{\"v\":1,\"id\":\"0000002a0000000000001234\",\"e\":null,\"m\":\"{\\\"a\\\":1,\\\"b\\\":\\\"xy\\\"}\"}\n";
        let mut rx = ok.to_vec();
        rx.extend_from_slice(
            b"{\"v\":1,\"id\":\"0000002a0000000000001235\",\"e\":null,\"m\":\"nope\"}\n",
        );
        for n in 0..ok.len() {
            assert_eq!(q.parse(&rx[..n]), Ok(None));
        }
        assert_eq!(q.parse(&rx), Ok(Some((Answer::Ok(Some(0x1234)), ok.len()))));
        assert_eq!(
            q.parse(&rx[ok.len()..]),
            Ok(Some((
                Answer::Bad(Some(0x1235), "a wrong result"),
                rx.len() - ok.len()
            )))
        );
        let err = b"{\"v\":1,\"id\":\"0000002a0000000000000009\",\"e\":{\"message\":\"tiny: no handler\"}}\n";
        assert_eq!(
            q.parse(err),
            Ok(Some((Answer::Bad(Some(9), "an error reply"), err.len())))
        );
        assert!(q
            .parse(b"{\"v\":1,\"id\":\"0000002b0000000000000009\",\"e\":null,\"m\":1}\n")
            .is_err());
        assert!(q.parse(b"garbage\n").is_err());
        assert!(q.parse(&vec![b'x'; MAX_LINE + 1]).is_err());

        let f = Qrpc::new(Call::Fast, TINY, 0);
        let line = b"{\"v\":1,\"id\":\"00000000000000000000000b\",\"e\":null,\"m\":200}\n";
        assert_eq!(f.parse(line), Ok(Some((Answer::Ok(Some(11)), line.len()))));
    }

    #[test]
    fn json_escapes() {
        let mut out = Vec::new();
        json_string(b"a\"b\\c\n\x01", &mut out);
        assert_eq!(out, b"\"a\\\"b\\\\c\\n\\u0001\"");
    }
}
