//! Parsing a request head: the incremental scan (`scan.rs`) finds and
//! pre-checks it, httparse splits it, and the rules below decide what the
//! request means and how its body is framed.

use std::mem::MaybeUninit;

use httparse::Header;

use super::encoding::AcceptEncoding;
use super::error::HttpError;
use super::fields::{analyse_fields, FieldSpan};
use super::scan::Scanner;
use super::target::parse_target;
use super::{BodyKind, Limits, Method, Version};

/// Parses request heads, one after the other, reusing its scratch memory.
///
/// One parser per connection: it remembers how far it scanned an incomplete
/// head, so feeding it the same growing buffer after every read costs time
/// linear in the head's size.
#[derive(Debug)]
pub struct HeadParser {
    limits: Limits,
    scanner: Scanner,
    /// httparse's header slots, empty between parses. Kept (as `'static`,
    /// which the empty vector trivially is) so that every parse reuses one
    /// allocation: see [`recycle`].
    slots: Vec<MaybeUninit<Header<'static>>>,
    /// Where each header's name and value are in the last parsed head; the
    /// [`RequestHead`] borrows it.
    spans: Vec<FieldSpan>,
}

/// A parsed request head, borrowing the input buffer (`'b`) and the
/// parser's scratch (`'p`). Copy out what must outlive the next
/// [`HeadParser::parse`] call.
#[derive(Debug, Clone, Copy)]
pub struct RequestHead<'b, 'p> {
    /// The method (never CONNECT, which is refused with 501).
    pub method: Method,
    /// The request-target as sent.
    pub target: &'b str,
    /// The path: the target up to `?`; for an absolute-form target the
    /// path part (at least `/`); `*` for `OPTIONS *`.
    pub path: &'b str,
    /// The raw query after the first `?`, not decoded.
    pub query: Option<&'b str>,
    /// HTTP/1.0 or HTTP/1.1.
    pub version: Version,
    /// Bytes of the head, from the first byte of the buffer (empty lines
    /// before the request line included) through the blank line. The body,
    /// or the next request, starts here.
    pub head_len: usize,
    /// The header lines exactly as received, each with its CRLF, without
    /// the final blank line; empty when there are no headers.
    pub headers_raw: &'b [u8],
    /// How the body is framed.
    pub body: BodyKind,
    /// Whether the connection stays open after the response: for HTTP/1.1
    /// unless `Connection` lists `close`, for HTTP/1.0 only when it lists
    /// `keep-alive` (and not `close`) (RFC 9112 §9.3).
    pub keep_alive: bool,
    /// `Expect: 100-continue` on an HTTP/1.1 request: send `100 Continue`
    /// before reading the body (RFC 9110 §10.1.1; the expectation is
    /// ignored on HTTP/1.0, as that section requires).
    pub expect_continue: bool,
    /// An `Upgrade` header is present and `Connection` lists `upgrade`
    /// (RFC 9110 §7.8).
    pub upgrade: bool,
    /// What `Accept-Encoding` (every line of it) accepts of the codings a
    /// response can be sent in; [`AcceptEncoding::preferred`] picks one.
    /// A malformed value is never an error: its odd elements are ignored.
    pub accept_encoding: AcceptEncoding,
    /// The authority: the absolute-form target's, which replaces `Host`
    /// (RFC 9112 §3.2.2), else the `Host` header's value (possibly empty);
    /// `None` for an HTTP/1.0 request without one.
    pub host: Option<&'b str>,
    head: &'b [u8],
    fields: &'p [FieldSpan],
}

impl<'b> RequestHead<'b, '_> {
    /// Every header as `(name as sent, value without surrounding
    /// whitespace)`, in order; repeated headers are separate entries.
    pub fn headers(&self) -> impl Iterator<Item = (&'b str, &'b [u8])> + '_ {
        let head = self.head;
        let fields: &[FieldSpan] = self.fields;
        fields.iter().map(move |span| span.resolve(head))
    }

    /// The value of the first header called `name` (compared
    /// case-insensitively).
    pub fn header(&self, name: &str) -> Option<&'b [u8]> {
        self.headers()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, value)| value)
    }
}

impl HeadParser {
    /// A parser enforcing `limits`.
    pub fn new(limits: Limits) -> Self {
        HeadParser {
            limits,
            scanner: Scanner::default(),
            slots: Vec::new(),
            spans: Vec::new(),
        }
    }

    /// The limits this parser enforces.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Forgets a partly scanned head. Only needed when the caller abandons
    /// a buffer before its head completed; [`HeadParser::parse`] resets
    /// itself after every complete head and every error.
    pub fn reset(&mut self) {
        self.scanner.reset();
    }

    /// Parses the request head at the start of `buf`.
    ///
    /// `Ok(None)`: the head is not complete; read more and call again with
    /// the same bytes plus the new ones (a shorter buffer starts a new
    /// scan). Over `max_head_bytes` without a complete head is
    /// [`HttpError::HeadersTooLarge`]; a request-target already longer than
    /// `max_url_bytes` is [`HttpError::UriTooLong`] without waiting for the
    /// rest. Only the first `max_head_bytes` of `buf` are read.
    ///
    /// `Ok(Some(head))`: the body, or the next request, starts at
    /// `head.head_len`. On an error, answer with its status and close the
    /// connection.
    pub fn parse<'b>(&mut self, buf: &'b [u8]) -> Result<Option<RequestHead<'b, '_>>, HttpError> {
        if buf.len() < self.scanner.pos() {
            self.scanner.reset();
        }
        let window = &buf[..buf.len().min(self.limits.max_head_bytes)];
        let scanned = self.scanner.scan(window, self.limits.max_url_bytes);
        let head_len = match scanned {
            Ok(Some(len)) => len,
            Ok(None) if buf.len() < self.limits.max_head_bytes => return Ok(None),
            Ok(None) => {
                self.scanner.reset();
                return Err(HttpError::HeadersTooLarge);
            }
            Err(e) => {
                self.scanner.reset();
                return Err(e);
            }
        };
        self.scanner.reset();
        self.parse_head(&buf[..head_len]).map(Some)
    }

    /// Parses a complete head (`head` ends with its blank line).
    fn parse_head<'b>(&mut self, head: &'b [u8]) -> Result<RequestHead<'b, '_>, HttpError> {
        let line = self.split_head(head)?;
        let version = if line.minor == 0 {
            Version::Http10
        } else {
            Version::Http11
        };
        // RFC 9110 §9.1: an unknown method (methods are case-sensitive) is
        // 501. CONNECT asks a proxy for a tunnel; this server is not one.
        let method =
            Method::parse(line.method).ok_or(HttpError::NotImplemented("unknown method"))?;
        if method == Method::Connect {
            return Err(HttpError::NotImplemented("CONNECT"));
        }
        // Also enforced while scanning; kept here so the rule is in one
        // readable place.
        if line.target.len() > self.limits.max_url_bytes {
            return Err(HttpError::UriTooLong);
        }
        let target = parse_target(method, line.target)?;
        let facts = analyse_fields(head, &self.spans, version)?;
        let host = match target.authority {
            Some(authority) => Some(authority),
            None => facts.host,
        };
        // The header lines run from the first name to the CRLF before the
        // final one (the head ends with CRLF CRLF, checked by the scan).
        let fields_end = head.len() - 2;
        let fields_start = self.spans.first().map_or(fields_end, |s| s.start());
        Ok(RequestHead {
            method,
            target: line.target,
            path: target.path,
            query: target.query,
            version,
            head_len: head.len(),
            headers_raw: &head[fields_start..fields_end],
            body: facts.body,
            keep_alive: facts.keep_alive,
            expect_continue: facts.expect_continue,
            upgrade: facts.upgrade,
            accept_encoding: facts.accept_encoding,
            host,
            head,
            fields: &self.spans,
        })
    }

    /// Runs httparse on the complete head, records every header's span and
    /// returns the request line.
    fn split_head<'b>(&mut self, head: &'b [u8]) -> Result<RequestLine<'b>, HttpError> {
        // A header line takes at least 4 bytes (`a:` CRLF), so the head
        // cannot hold more than len / 4 of them: a large `max_headers`
        // never sizes the slots beyond what the head could fill.
        let count = self.limits.max_headers.min(head.len() / 4 + 1);
        let mut slots: Vec<MaybeUninit<Header<'b>>> = std::mem::take(&mut self.slots);
        slots.resize_with(count, MaybeUninit::uninit);
        let mut config = httparse::ParserConfig::default();
        // RFC 9112 §3 lets a recipient accept several spaces between the
        // parts of the request line; Node 20 does (`GET  /  HTTP/1.1` is
        // 200 there), so we agree. Every other whitespace is refused.
        config.allow_multiple_spaces_in_request_line_delimiters(true);
        let result = {
            let mut req = httparse::Request::new(&mut []);
            let status = config.parse_request_with_uninit_headers(&mut req, head, &mut slots);
            match status {
                Ok(httparse::Status::Complete(n)) if n == head.len() => {
                    self.spans.clear();
                    self.spans
                        .extend(req.headers.iter().map(|h| FieldSpan::locate(head, h)));
                    match (req.method, req.path, req.version) {
                        (Some(method), Some(target), Some(minor)) => Ok(RequestLine {
                            method,
                            target,
                            minor,
                        }),
                        _ => Err(HttpError::BadRequest("malformed request line")),
                    }
                }
                // The scan found the blank line, so httparse cannot need more
                // or stop elsewhere; refuse rather than guess if it ever did.
                Ok(_) => Err(HttpError::BadRequest("malformed request head")),
                Err(httparse::Error::TooManyHeaders) => Err(HttpError::HeadersTooLarge),
                Err(httparse::Error::Version) => Err(version_error(head)),
                Err(httparse::Error::HeaderName) => Err(HttpError::BadRequest(
                    "invalid header name (or whitespace before the colon)",
                )),
                Err(httparse::Error::HeaderValue) => {
                    Err(HttpError::BadRequest("invalid header value"))
                }
                Err(_) => Err(HttpError::BadRequest("malformed request line")),
            }
        };
        self.slots = recycle(slots);
        result
    }
}

/// The request line's parts, as httparse split them.
struct RequestLine<'b> {
    method: &'b str,
    target: &'b str,
    minor: u8,
}

/// Gives the header slots back without their borrow of the buffer. The
/// vector is emptied first, so the map never runs, and collecting a
/// `vec::IntoIter` into a vector of a same-sized type reuses its allocation
/// (std's in-place collection): no allocation per request. A unit test
/// checks the reuse.
fn recycle(mut slots: Vec<MaybeUninit<Header<'_>>>) -> Vec<MaybeUninit<Header<'static>>> {
    slots.clear();
    slots.into_iter().map(|_| MaybeUninit::uninit()).collect()
}

/// httparse refuses every version but HTTP/1.0 and HTTP/1.1 alike. RFC 9112
/// §2.3: `HTTP-version = "HTTP/" DIGIT "." DIGIT`; a well-formed other
/// version is 505 (RFC 9110 §15.6.6), anything else in its place is 400.
fn version_error(head: &[u8]) -> HttpError {
    let start = head
        .iter()
        .position(|&b| b != b'\r' && b != b'\n')
        .unwrap_or(0);
    let line = head[start..].split(|&b| b == b'\r').next().unwrap_or(&[]);
    let mut words = line.split(|&b| b == b' ').filter(|w| !w.is_empty());
    let version = (words.next(), words.next(), words.next(), words.next());
    match version {
        (Some(_), Some(_), Some([b'H', b'T', b'T', b'P', b'/', major, b'.', minor]), None)
            if major.is_ascii_digit() && minor.is_ascii_digit() =>
        {
            HttpError::VersionNotSupported
        }
        _ => HttpError::BadRequest("malformed HTTP version"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_reused() {
        let mut parser = HeadParser::new(Limits::default());
        let req = b"GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\n\r\n";
        parser.parse(req).unwrap().unwrap();
        let (slots, spans) = (parser.slots.as_ptr(), parser.spans.as_ptr());
        assert!(parser.slots.capacity() > 0 && parser.slots.is_empty());
        for _ in 0..3 {
            let head = parser.parse(req).unwrap().unwrap();
            assert_eq!(head.headers().count(), 3);
        }
        assert_eq!(parser.slots.as_ptr(), slots, "httparse slots reallocated");
        assert_eq!(parser.spans.as_ptr(), spans, "spans reallocated");
    }

    #[test]
    fn accept_encoding_from_every_line() {
        use crate::http1::ContentCoding;
        let mut parser = HeadParser::new(Limits::default());
        let preferred = |parser: &mut HeadParser, lines: &str| {
            let req = format!("GET / HTTP/1.1\r\nHost: a\r\n{lines}\r\n");
            let head = parser.parse(req.as_bytes()).unwrap().unwrap();
            (
                head.accept_encoding.is_present(),
                head.accept_encoding.preferred(),
            )
        };
        assert_eq!(preferred(&mut parser, ""), (false, None));
        assert_eq!(
            preferred(&mut parser, "Accept-Encoding: gzip\r\n"),
            (true, Some(ContentCoding::Gzip))
        );
        assert_eq!(
            preferred(
                &mut parser,
                "accept-encoding: gzip\r\nX: y\r\nACCEPT-ENCODING: br\r\n"
            ),
            (true, Some(ContentCoding::Br))
        );
        assert_eq!(
            preferred(
                &mut parser,
                "Accept-Encoding: br\r\nAccept-Encoding: br;q=0\r\n"
            ),
            (true, None)
        );
        // A malformed value is no error.
        assert_eq!(
            preferred(&mut parser, "Accept-Encoding: ;;;, \"\r\n"),
            (true, None)
        );
    }

    #[test]
    fn versions() {
        for (line, err) in [
            ("GET / HTTP/2.0", HttpError::VersionNotSupported),
            ("GET / HTTP/1.2", HttpError::VersionNotSupported),
            ("GET  /  HTTP/0.9", HttpError::VersionNotSupported),
            (
                "GET / HTTP/1.10",
                HttpError::BadRequest("malformed request line"),
            ),
            (
                "GET / HTTP/2",
                HttpError::BadRequest("malformed HTTP version"),
            ),
            (
                "GET / http/1.1",
                HttpError::BadRequest("malformed HTTP version"),
            ),
            (
                "GET / ICE/1.0",
                HttpError::BadRequest("malformed HTTP version"),
            ),
            (
                "GET / HTTP/1.1 x",
                HttpError::BadRequest("malformed request line"),
            ),
            (
                "GET / HTTP/2.0 x",
                HttpError::BadRequest("malformed HTTP version"),
            ),
        ] {
            let req = format!("{line}\r\nHost: a\r\n\r\n");
            let mut parser = HeadParser::new(Limits::default());
            let got = parser.parse(req.as_bytes()).err();
            assert_eq!(got, Some(err), "{line}");
        }
    }
}
