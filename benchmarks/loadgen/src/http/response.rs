//! An incremental HTTP/1.1 response parser for pipelined keep-alive
//! connections: pure, no I/O. It is fed whatever bytes have arrived and
//! reports, in order, each response's head, its body in pieces as they come
//! (never buffered: a 1 MiB file passes through in read-sized slices), and
//! its end. It returns how many bytes it used; the caller keeps the rest
//! (an incomplete head or chunk-size line) and feeds it again, followed by
//! the next bytes.
//!
//! Bodies are framed by `Content-Length` or `Transfer-Encoding: chunked`
//! (chunk extensions and trailers are skipped). Interim `1xx` responses are
//! skipped. A response that neither has a length nor is chunked (its body
//! would end only when the server closes), one with both, or a malformed
//! head or chunk is an error: the connection cannot go on. A parser made
//! with [`Parser::until_close`] (SockJS's xhr-streaming transport, whose
//! response may be HTTP/1.0) takes such a body instead, as
//! [`Framing::Close`], and [`Parser::at_eof`] tells it ended.

/// A response head (or a trailer section) longer than this is refused.
pub const MAX_HEAD: usize = 64 << 10;
/// Header fields parsed per response.
const MAX_HEADERS: usize = 64;
/// A chunk-size line (with its extensions) longer than this is refused.
const MAX_CHUNK_LINE: usize = 4 << 10;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// `Content-Length` (0 for 204 and 304 too).
    Length(u64),
    Chunked,
    /// The body ends when the server closes the connection: an HTTP/1.0
    /// response, or one with neither a length nor chunking. Only from a
    /// parser made with [`Parser::until_close`].
    Close,
}

/// What a response's head says about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head<'a> {
    pub status: u16,
    /// The `Content-Type` value as sent.
    pub content_type: Option<&'a [u8]>,
    pub framing: Framing,
    /// `Connection: close`: the server will close after this response.
    pub close: bool,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Event<'a> {
    Head(Head<'a>),
    /// The next piece of the body (never empty).
    Body(&'a [u8]),
    /// The response is complete.
    End,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Head,
    /// Body bytes still to come under `Content-Length`.
    Length(u64),
    ChunkSize,
    /// Bytes left in the current chunk.
    ChunkData(u64),
    /// The CRLF after a chunk's data.
    ChunkEnd,
    /// Trailer fields after the last chunk, up to the empty line.
    Trailers,
    /// Body bytes up to the close ([`Framing::Close`]).
    UntilClose,
}

#[derive(Debug)]
pub struct Parser {
    state: State,
    /// Whether a body may end at the close ([`Parser::until_close`]).
    until_close: bool,
}

/// Where a response stood when the server closed the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Eof {
    /// Between responses: no byte of a next one had been parsed.
    Idle,
    /// The close ended a [`Framing::Close`] body: the response is complete.
    Ended,
    /// The close cut a response short.
    Truncated,
}

impl Default for Parser {
    fn default() -> Self {
        Parser::new()
    }
}

/// The position of the first `\r\n` in `buf`.
fn find_crlf(buf: &[u8]) -> Option<usize> {
    buf.windows(2).position(|w| w == b"\r\n")
}

/// A header value as a token list: does it hold `token` (case-insensitive)?
fn has_token(value: &[u8], token: &str) -> bool {
    value
        .split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
}

fn parse_decimal(value: &[u8]) -> Option<u64> {
    let v = value.trim_ascii();
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    v.iter().try_fold(0u64, |acc, &d| {
        acc.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
}

/// The size at the start of a chunk-size line (extensions after `;` ignored).
fn parse_chunk_size(line: &[u8]) -> Option<u64> {
    let end = line
        .iter()
        .position(|&b| b == b';' || b == b' ' || b == b'\t')
        .unwrap_or(line.len());
    let digits = &line[..end];
    if digits.is_empty() || digits.len() > 15 {
        return None;
    }
    digits.iter().try_fold(0u64, |acc, &c| {
        let d = (c as char).to_digit(16)?;
        Some((acc << 4) | u64::from(d))
    })
}

/// A complete head at the start of `buf`: the head and its length, `None`
/// for an interim (1xx) response, or an error. `until_close`: an HTTP/1.0
/// response, or a body framed by neither a length nor chunking, is
/// [`Framing::Close`] rather than an error.
fn parse_head(buf: &[u8], until_close: bool) -> Result<Option<(Option<Head<'_>>, usize)>, String> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut res = httparse::Response::new(&mut headers);
    let used = match res.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD => {
            return Err(format!("no end of a response head in {} bytes", buf.len()))
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(format!("malformed response head: {e}")),
    };
    let status = res.code.unwrap_or(0);
    let http10 = res.version != Some(1);
    if http10 && !until_close {
        return Err("an HTTP/1.0 response on an HTTP/1.1 keep-alive connection".into());
    }
    if (100..200).contains(&status) {
        if status == 101 {
            return Err("101 Switching Protocols to a plain request".into());
        }
        return Ok(Some((None, used)));
    }
    let (mut length, mut chunked, mut close, mut content_type) = (None, false, false, None);
    for h in res.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let n = parse_decimal(h.value).ok_or("a Content-Length that is not a number")?;
            if length.is_some_and(|l| l != n) {
                return Err("two different Content-Length values".into());
            }
            length = Some(n);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            // Only `chunked` (last, and alone) frames a body a client can read.
            if !h.value.trim_ascii().eq_ignore_ascii_case(b"chunked") {
                return Err(format!(
                    "Transfer-Encoding {:?} (only chunked is understood)",
                    String::from_utf8_lossy(h.value)
                ));
            }
            chunked = true;
        } else if h.name.eq_ignore_ascii_case("connection") {
            close |= has_token(h.value, "close");
        } else if h.name.eq_ignore_ascii_case("content-type") {
            content_type = Some(h.value);
        }
    }
    let framing = match (length, chunked) {
        (Some(_), true) => return Err("both Content-Length and chunked".into()),
        _ if status == 204 || status == 304 => Framing::Length(0),
        (Some(n), false) => Framing::Length(n),
        (None, true) => Framing::Chunked,
        (None, false) if until_close => Framing::Close,
        (None, false) => {
            return Err(format!(
                "a {status} response with neither Content-Length nor chunked encoding (its body ends only at the close)"
            ))
        }
    };
    let head = Head {
        status,
        content_type,
        framing,
        // An HTTP/1.0 server closes unless asked to keep the connection,
        // and a close-delimited body ends with the connection: either
        // way the connection carries no next request.
        close: close || http10 || framing == Framing::Close,
    };
    Ok(Some((Some(head), used)))
}

impl Parser {
    pub fn new() -> Parser {
        Parser {
            state: State::Head,
            until_close: false,
        }
    }

    /// A parser that also takes a body ending at the close ([`Framing::Close`]).
    pub fn until_close() -> Parser {
        Parser {
            state: State::Head,
            until_close: true,
        }
    }

    /// The server closed the connection: where that left the response.
    /// A [`Framing::Close`] body is complete then ([`Eof::Ended`]; the
    /// parser is ready for a response on a new connection). `pending`:
    /// bytes the caller holds that were not parsed yet (an incomplete head).
    pub fn at_eof(&mut self, pending: usize) -> Eof {
        match self.state {
            State::UntilClose => {
                self.state = State::Head;
                Eof::Ended
            }
            State::Head if pending == 0 => Eof::Idle,
            _ => Eof::Truncated,
        }
    }

    /// Parses what it can of `buf`, calling `on` for every event in order;
    /// returns the bytes used (the caller passes the rest again, followed by
    /// more). An error from `on` stops the parse and is returned as is.
    pub fn feed<F>(&mut self, buf: &[u8], mut on: F) -> Result<usize, String>
    where
        F: FnMut(Event<'_>) -> Result<(), String>,
    {
        let mut at = 0;
        loop {
            let rest = &buf[at..];
            match self.state {
                State::Head => {
                    if rest.is_empty() {
                        return Ok(at);
                    }
                    let Some((head, used)) = parse_head(rest, self.until_close)? else {
                        return Ok(at);
                    };
                    at += used;
                    let Some(head) = head else {
                        continue; // an interim response: the real one follows
                    };
                    on(Event::Head(head))?;
                    self.state = match head.framing {
                        Framing::Length(0) => {
                            on(Event::End)?;
                            State::Head
                        }
                        Framing::Length(n) => State::Length(n),
                        Framing::Chunked => State::ChunkSize,
                        Framing::Close => State::UntilClose,
                    };
                }
                State::UntilClose => {
                    if !rest.is_empty() {
                        on(Event::Body(rest))?;
                    }
                    return Ok(buf.len());
                }
                State::Length(left) | State::ChunkData(left) => {
                    if rest.is_empty() {
                        return Ok(at);
                    }
                    let take = rest.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                    on(Event::Body(&rest[..take]))?;
                    at += take;
                    let left = left - take as u64;
                    self.state = match (self.state, left) {
                        (State::Length(_), 0) => {
                            on(Event::End)?;
                            State::Head
                        }
                        (State::Length(_), l) => State::Length(l),
                        (_, 0) => State::ChunkEnd,
                        (_, l) => State::ChunkData(l),
                    };
                }
                State::ChunkSize => {
                    let Some(eol) = find_crlf(rest) else {
                        if rest.len() > MAX_CHUNK_LINE {
                            return Err("a chunk-size line without an end".into());
                        }
                        return Ok(at);
                    };
                    let size = parse_chunk_size(&rest[..eol]).ok_or_else(|| {
                        format!(
                            "a malformed chunk-size line {:?}",
                            String::from_utf8_lossy(&rest[..eol.min(40)])
                        )
                    })?;
                    at += eol + 2;
                    self.state = if size == 0 {
                        State::Trailers
                    } else {
                        State::ChunkData(size)
                    };
                }
                State::ChunkEnd => {
                    if rest.len() < 2 {
                        return Ok(at);
                    }
                    if &rest[..2] != b"\r\n" {
                        return Err("chunk data longer than its size".into());
                    }
                    at += 2;
                    self.state = State::ChunkSize;
                }
                State::Trailers => {
                    let Some(eol) = find_crlf(rest) else {
                        if rest.len() > MAX_HEAD {
                            return Err("a trailer section without an end".into());
                        }
                        return Ok(at);
                    };
                    at += eol + 2;
                    if eol == 0 {
                        self.state = State::Head;
                        on(Event::End)?;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An event with owned bytes, consecutive body pieces merged.
    #[derive(Clone, Debug, PartialEq, Eq)]
    enum Ev {
        Head(u16, Option<Vec<u8>>, Framing, bool),
        Body(Vec<u8>),
        End,
    }

    /// Feeds `parts` one after the other as reads would deliver them,
    /// carrying what the parser leaves over, as the engine does.
    fn parse_parts(parts: &[&[u8]]) -> Result<(Vec<Ev>, usize), String> {
        parse_with(Parser::new(), parts)
    }

    fn parse_with(mut p: Parser, parts: &[&[u8]]) -> Result<(Vec<Ev>, usize), String> {
        let mut evs: Vec<Ev> = Vec::new();
        let mut carry: Vec<u8> = Vec::new();
        for part in parts {
            carry.extend_from_slice(part);
            let used = p.feed(&carry, |e| {
                match e {
                    Event::Head(h) => evs.push(Ev::Head(
                        h.status,
                        h.content_type.map(<[u8]>::to_vec),
                        h.framing,
                        h.close,
                    )),
                    Event::Body(b) => {
                        assert!(!b.is_empty());
                        match evs.last_mut() {
                            Some(Ev::Body(v)) => v.extend_from_slice(b),
                            _ => evs.push(Ev::Body(b.to_vec())),
                        }
                    }
                    Event::End => evs.push(Ev::End),
                }
                Ok(())
            })?;
            carry.drain(..used);
        }
        Ok((evs, carry.len()))
    }

    fn stream() -> Vec<u8> {
        let mut s = Vec::new();
        s.extend_from_slice(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\nDate: Thu, 26 Nov 2026 04:00:00 GMT\r\n\r\nHello, World!",
        );
        // An interim response, then a chunked body with an extension and a trailer.
        s.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
        s.extend_from_slice(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json; charset=utf-8\r\ntransfer-encoding: chunked\r\n\r\n\
              5;name=value\r\n{\"mes\r\n16\r\nsage\":\"Hello, World!\"}\r\n0\r\nX-Checksum: 1\r\n\r\n",
        );
        s.extend_from_slice(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n");
        s.extend_from_slice(b"HTTP/1.1 204 No Content\r\n\r\n");
        s.extend_from_slice(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
        let big: Vec<u8> = (0..3000u32).map(|i| (i * 7 % 251) as u8).collect();
        s.extend_from_slice(
            b"HTTP/1.1 200 OK\r\nContent-Length: 3000\r\nConnection: keep-alive, Close\r\n\r\n",
        );
        s.extend_from_slice(&big);
        s
    }

    fn expected() -> Vec<Ev> {
        let big: Vec<u8> = (0..3000u32).map(|i| (i * 7 % 251) as u8).collect();
        vec![
            Ev::Head(
                200,
                Some(b"text/plain".to_vec()),
                Framing::Length(13),
                false,
            ),
            Ev::Body(b"Hello, World!".to_vec()),
            Ev::End,
            Ev::Head(
                200,
                Some(b"application/json; charset=utf-8".to_vec()),
                Framing::Chunked,
                false,
            ),
            Ev::Body(br#"{"message":"Hello, World!"}"#.to_vec()),
            Ev::End,
            Ev::Head(404, None, Framing::Length(0), false),
            Ev::End,
            Ev::Head(204, None, Framing::Length(0), false),
            Ev::End,
            Ev::Head(200, None, Framing::Chunked, false),
            Ev::End,
            Ev::Head(200, None, Framing::Length(3000), true),
            Ev::Body(big),
            Ev::End,
        ]
    }

    #[test]
    fn whole_stream() {
        let s = stream();
        assert_eq!(parse_parts(&[&s]), Ok((expected(), 0)));
    }

    #[test]
    fn split_at_every_byte() {
        let s = stream();
        for cut in 0..=s.len() {
            let (a, b) = s.split_at(cut);
            assert_eq!(parse_parts(&[a, b]), Ok((expected(), 0)), "cut at {cut}");
        }
        // Two cuts: every piece of the stream at every position, in three reads.
        for cut in (0..s.len()).step_by(7) {
            for len in [1, 2, 3, 5, 40] {
                let end = (cut + len).min(s.len());
                let parts = [&s[..cut], &s[cut..end], &s[end..]];
                assert_eq!(parse_parts(&parts), Ok((expected(), 0)), "{cut}+{len}");
            }
        }
    }

    #[test]
    fn one_byte_at_a_time() {
        let s = stream();
        let parts: Vec<&[u8]> = s.chunks(1).collect();
        assert_eq!(parse_parts(&parts), Ok((expected(), 0)));
    }

    #[test]
    fn incomplete_input_waits() {
        let (evs, left) = parse_parts(&[b"HTTP/1.1 200 OK\r\nContent-Le"]).unwrap();
        assert_eq!((evs, left), (vec![], 27));
        let (evs, left) =
            parse_parts(&[b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1f"]).unwrap();
        assert_eq!(evs.len(), 1);
        assert_eq!(left, 2);
    }

    #[test]
    fn refuses_what_breaks_keep_alive() {
        for bad in [
            &b"HTTP/1.1 200 OK\r\n\r\nbody until close"[..],
            b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n",
            b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n",
            b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
            b"garbage\r\n\r\n",
        ] {
            assert!(
                parse_parts(&[bad]).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        // A head that never ends.
        let mut long = b"HTTP/1.1 200 OK\r\n".to_vec();
        while long.len() <= MAX_HEAD {
            long.extend_from_slice(b"X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
        }
        assert!(parse_parts(&[&long]).is_err());
    }

    #[test]
    fn until_close_takes_bodies_that_end_at_the_close() {
        // Framed responses parse as with `new`, an unframed body runs to the close.
        let mut s = stream();
        s.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nhh\no\n");
        let mut want = expected();
        want.extend([
            Ev::Head(200, Some(b"text/plain".to_vec()), Framing::Close, true),
            Ev::Body(b"hh\no\n".to_vec()),
        ]);
        for cut in 0..=s.len() {
            let (a, b) = s.split_at(cut);
            assert_eq!(
                parse_with(Parser::until_close(), &[a, b]),
                Ok((want.clone(), 0)),
                "cut at {cut}"
            );
        }
        // HTTP/1.0: close-delimited, or with a length but never kept alive.
        let (evs, _) = parse_with(Parser::until_close(), &[b"HTTP/1.0 200 OK\r\n\r\nab"]).unwrap();
        assert_eq!(
            evs,
            [
                Ev::Head(200, None, Framing::Close, true),
                Ev::Body(b"ab".to_vec())
            ]
        );
        let (evs, _) =
            parse_with(Parser::until_close(), &[b"HTTP/1.0 204 No Content\r\n\r\n"]).unwrap();
        assert_eq!(
            evs,
            [Ev::Head(204, None, Framing::Length(0), true), Ev::End]
        );
    }

    #[test]
    fn where_the_close_leaves_a_response() {
        let mut p = Parser::until_close();
        assert_eq!(p.at_eof(0), Eof::Idle);
        assert_eq!(p.at_eof(3), Eof::Truncated, "an incomplete head");
        p.feed(b"HTTP/1.1 200 OK\r\n\r\nabc", |_| Ok(())).unwrap();
        assert_eq!(p.at_eof(0), Eof::Ended);
        assert_eq!(p.at_eof(0), Eof::Idle, "ready for the next response");
        p.feed(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab",
            |_| Ok(()),
        )
        .unwrap();
        assert_eq!(p.at_eof(0), Eof::Truncated);
        let mut p = Parser::new();
        p.feed(
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nab",
            |_| Ok(()),
        )
        .unwrap();
        assert_eq!(p.at_eof(0), Eof::Idle);
    }

    #[test]
    fn an_error_from_the_caller_stops_the_parse() {
        let mut p = Parser::new();
        let r = p.feed(
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nab",
            |e| match e {
                Event::Body(_) => Err("stop".into()),
                _ => Ok(()),
            },
        );
        assert_eq!(r, Err("stop".to_string()));
    }

    #[test]
    fn chunk_sizes() {
        assert_eq!(parse_chunk_size(b"1F"), Some(31));
        assert_eq!(parse_chunk_size(b"10;a=b"), Some(16));
        assert_eq!(parse_chunk_size(b"0"), Some(0));
        assert_eq!(parse_chunk_size(b""), None);
        assert_eq!(parse_chunk_size(b";x"), None);
        assert_eq!(parse_chunk_size(b"1234567890abcdef0"), None);
        assert!(has_token(b"keep-alive, Close", "close"));
        assert!(!has_token(b"closed", "close"));
        assert_eq!(parse_decimal(b" 65536 "), Some(65536));
        assert_eq!(parse_decimal(b"99999999999999999999999"), None);
    }
}
