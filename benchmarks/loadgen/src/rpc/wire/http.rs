//! HTTP/1.1 keep-alive, requests pipelined (the `http` peer's undici client
//! with `pipelining` = calls in flight). The requests are byte for byte
//! what undici sends to `benchmarks/rpc/peers/http/server.mjs`:
//!
//! ```text
//! POST /tiny HTTP/1.1\r\nhost: 127.0.0.1:<port>\r\nconnection: keep-alive\r\n
//! content-type: application/json\r\ncontent-length: 16\r\n\r\n{"a":1,"b":"xy"}
//! GET /fast HTTP/1.1\r\nhost: 127.0.0.1:<port>\r\nconnection: keep-alive\r\n\r\n
//! ```
//!
//! Answers come in request order and carry no id: `200` with the body
//! echoed (`content-length`), or `200` with an empty body for `/fast`.

use super::{Answer, Call, Parsed};

/// A response head longer than this is not an answer to a small call.
const MAX_HEAD: usize = 16 << 10;
/// Headers parsed per response (Node's answers have five).
const MAX_HEADERS: usize = 16;

/// One connection's codec (the same for every connection of a run).
#[derive(Clone, Debug)]
pub struct Http {
    request: Vec<u8>,
    expect_body: Vec<u8>,
}

impl Http {
    /// `host`: the value of the `host` header (`127.0.0.1:<port>`).
    pub fn new(call: Call, payload: &[u8], host: &str) -> Http {
        let mut request = Vec::new();
        let expect_body = match call {
            Call::Echo => {
                request.extend_from_slice(
                    format!(
                        "POST /tiny HTTP/1.1\r\nhost: {host}\r\nconnection: keep-alive\r\n\
                         content-type: application/json\r\ncontent-length: {}\r\n\r\n",
                        payload.len()
                    )
                    .as_bytes(),
                );
                request.extend_from_slice(payload);
                payload.to_vec()
            }
            Call::Fast => {
                request.extend_from_slice(
                    format!("GET /fast HTTP/1.1\r\nhost: {host}\r\nconnection: keep-alive\r\n\r\n")
                        .as_bytes(),
                );
                Vec::new()
            }
        };
        Http {
            request,
            expect_body,
        }
    }

    /// Appends one request (HTTP/1.1 has no call id: `_seq` is unused).
    #[inline]
    pub fn write_call(&self, _seq: u64, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.request);
    }

    /// The response at the start of `buf`.
    #[inline]
    pub fn parse(&self, buf: &[u8]) -> Parsed {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut res = httparse::Response::new(&mut headers);
        let head = match res.parse(buf) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD => {
                return Err(format!(
                    "no end of the response head in {} bytes",
                    buf.len()
                ))
            }
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(e) => return Err(format!("bad response: {e}")),
        };
        let mut length = None;
        for h in res.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                let v = std::str::from_utf8(h.value)
                    .ok()
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .ok_or("a content-length that is not a number")?;
                length = Some(v);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                return Err("a chunked response to a small call".into());
            }
        }
        let length = length.ok_or("a response without content-length")?;
        let Some(body) = buf.get(head..head + length) else {
            return Ok(None);
        };
        let answer = if res.code != Some(200) {
            Answer::Bad(None, "a status other than 200")
        } else if body != self.expect_body.as_slice() {
            Answer::Bad(None, "a wrong body")
        } else {
            Answer::Ok(None)
        };
        Ok(Some((answer, head + length)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::TINY;

    #[test]
    fn requests_are_what_undici_sends() {
        let h = Http::new(Call::Echo, TINY, "127.0.0.1:35919");
        let mut out = Vec::new();
        h.write_call(1, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "POST /tiny HTTP/1.1\r\nhost: 127.0.0.1:35919\r\nconnection: keep-alive\r\ncontent-type: application/json\r\ncontent-length: 16\r\n\r\n{\"a\":1,\"b\":\"xy\"}"
        );
        let f = Http::new(Call::Fast, TINY, "127.0.0.1:41035");
        let mut out = Vec::new();
        f.write_call(1, &mut out);
        assert_eq!(
            out,
            b"GET /fast HTTP/1.1\r\nhost: 127.0.0.1:41035\r\nconnection: keep-alive\r\n\r\n"
        );
    }

    #[test]
    fn pipelined_answers() {
        let h = Http::new(Call::Echo, TINY, "x");
        // Captured from benchmarks/rpc/peers/http/server.mjs.
        let ok = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 16\r\nDate: Wed, 25 Nov 2026 11:19:42 GMT\r\nConnection: keep-alive\r\nKeep-Alive: timeout=60\r\n\r\n{\"a\":1,\"b\":\"xy\"}";
        let mut rx = ok.to_vec();
        rx.extend_from_slice(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n");
        rx.extend_from_slice(b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nabc");
        for n in 0..ok.len() {
            assert_eq!(h.parse(&rx[..n]), Ok(None), "{n}");
        }
        assert_eq!(h.parse(&rx), Ok(Some((Answer::Ok(None), ok.len()))));
        let rest = &rx[ok.len()..];
        let (a, n) = h.parse(rest).unwrap().unwrap();
        assert_eq!(a, Answer::Bad(None, "a status other than 200"));
        assert_eq!(
            h.parse(&rest[n..]),
            Ok(Some((Answer::Bad(None, "a wrong body"), rest.len() - n)))
        );
        assert!(h
            .parse(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
            .is_err());
        assert!(h.parse(b"HTTP/1.1 200 OK\r\n\r\n").is_err());
        assert!(h.parse(b"garbage\r\n\r\n").is_err());

        let f = Http::new(Call::Fast, TINY, "x");
        let fast = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nDate: Wed, 25 Nov 2026 11:19:42 GMT\r\nConnection: keep-alive\r\nKeep-Alive: timeout=60\r\n\r\n";
        assert_eq!(f.parse(fast), Ok(Some((Answer::Ok(None), fast.len()))));
    }
}
