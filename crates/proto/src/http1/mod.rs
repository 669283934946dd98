//! A strict HTTP/1.1 request codec (RFC 9112) for serving plain HTTP
//! requests, keep-alive and pipelined, on the port that also accepts
//! WebSocket upgrades.
//!
//! Strict, because a server that frames a request differently from the proxy
//! in front of it is a request-smuggling hole: every ambiguity RFC 9112
//! allows a recipient to resolve leniently (bare LF, obs-fold,
//! `Content-Length` next to `Transfer-Encoding`, repeated lengths, odd
//! chunk lines) is rejected here with the status RFC 9112 names. Each rule is
//! documented where it is enforced, citing its section.
//!
//! - [`HeadParser`] parses a request head (with `httparse`) into a
//!   zero-copy [`RequestHead`] and decides how the body is framed;
//! - [`BodyDecoder`] takes the body off the byte stream (`Content-Length`
//!   or chunked), so the next pipelined request starts where it stops;
//! - [`write_response_head`], [`write_chunk`], [`write_last_chunk`] frame a
//!   response; [`HttpDate`] formats the `Date` the runtime passes in;
//! - [`AcceptEncoding`] chooses a response's content coding from the
//!   request's `Accept-Encoding` (the head parser fills one in).
//!
//! Memory: the parser borrows the caller's read buffer and owns two scratch
//! vectors (httparse's header slots and the header spans a [`RequestHead`]
//! points into) that are reused for every request, so a connection that
//! keeps the same parser allocates nothing per request once warmed up. The
//! body decoder holds a few integers.
//!
//! ```
//! use switchboard_proto::http1::{BodyDecoder, BodyKind, BodyLimits, HeadParser, Limits, Method};
//!
//! let input = b"POST /echo?x=1 HTTP/1.1\r\nHost: example.com\r\n\
//!     Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n";
//! let mut parser = HeadParser::new(Limits::default());
//! let head = parser.parse(input).unwrap().expect("a complete head");
//! assert_eq!((head.method, head.path, head.query), (Method::Post, "/echo", Some("x=1")));
//! assert_eq!(head.host, Some("example.com"));
//! assert_eq!(head.body, BodyKind::Chunked);
//! let mut rest = &input[head.head_len..];
//!
//! let mut decoder = BodyDecoder::new(head.body, BodyLimits::default()).unwrap();
//! let mut body = Vec::new();
//! loop {
//!     let chunk = decoder.decode(rest).unwrap();
//!     body.extend_from_slice(chunk.data);
//!     rest = &rest[chunk.consumed..];
//!     if chunk.done || chunk.consumed == 0 {
//!         break;
//!     }
//! }
//! assert_eq!(body, b"hello");
//! // The next pipelined request starts right after the body.
//! let next = parser.parse(rest).unwrap().unwrap();
//! assert_eq!((next.method, next.target), (Method::Get, "/"));
//! ```

mod body;
mod date;
mod encoding;
mod error;
mod fields;
mod head;
mod response;
mod scan;
mod target;

#[cfg(test)]
mod body_tests;
#[cfg(test)]
mod head_tests;

pub use body::{BodyChunk, BodyDecoder, BodyLimits};
pub use date::HttpDate;
pub use encoding::{AcceptEncoding, ContentCoding};
pub use error::{HttpError, ALL_ERROR_CODES};
pub use head::{HeadParser, RequestHead};
pub use response::{
    reason_phrase, status_allows_body, write_chunk, write_last_chunk, write_response_head,
    ChunkHead, ResponseBody, LAST_CHUNK,
};

/// Default for [`Limits::max_url_bytes`]: 8 KiB. RFC 9112 §3 recommends
/// that every recipient support request-lines of at least 8000 octets;
/// browsers send far shorter URLs, and CDNs cap them near this size.
pub const DEFAULT_MAX_URL_BYTES: usize = 8 * 1024;

/// Limits on a request head. Each is checked while the head arrives, before
/// anything is allocated for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest head in bytes, from the first byte (empty lines before the
    /// request line included) to the blank line that ends it. Default
    /// [`crate::http::DEFAULT_MAX_HEAD_BYTES`] (16 KiB, Node's
    /// `maxHeaderSize`). Over it: [`HttpError::HeadersTooLarge`] (431).
    pub max_head_bytes: usize,
    /// Most header lines. Default [`crate::http::DEFAULT_MAX_HEADERS`] (64).
    /// Over it: [`HttpError::HeadersTooLarge`] (431).
    pub max_headers: usize,
    /// Longest request-target. Default [`DEFAULT_MAX_URL_BYTES`]. Over it:
    /// [`HttpError::UriTooLong`] (414), as soon as the target has grown past
    /// it, without waiting for the rest of the head.
    pub max_url_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_head_bytes: crate::http::DEFAULT_MAX_HEAD_BYTES,
            max_headers: crate::http::DEFAULT_MAX_HEADERS,
            max_url_bytes: DEFAULT_MAX_URL_BYTES,
        }
    }
}

/// The request methods this server implements (RFC 9110 §9, RFC 5789 for
/// PATCH). Any other method is answered with 501 (RFC 9110 §9.1); methods
/// are case-sensitive, so `get` is not `GET`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// `GET`
    Get,
    /// `HEAD`
    Head,
    /// `POST`
    Post,
    /// `PUT`
    Put,
    /// `DELETE`
    Delete,
    /// `OPTIONS`
    Options,
    /// `PATCH`
    Patch,
    /// `TRACE`
    Trace,
    /// `CONNECT`: recognised so it can be refused with 501 (this server is
    /// not a proxy); [`HeadParser::parse`] never returns it.
    Connect,
}

impl Method {
    /// Every method, in [`Method::index`] order.
    pub const ALL: [Method; 9] = [
        Method::Get,
        Method::Head,
        Method::Post,
        Method::Put,
        Method::Delete,
        Method::Options,
        Method::Patch,
        Method::Trace,
        Method::Connect,
    ];

    /// The method token, e.g. `"GET"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Delete => "DELETE",
            Method::Options => "OPTIONS",
            Method::Patch => "PATCH",
            Method::Trace => "TRACE",
            Method::Connect => "CONNECT",
        }
    }

    /// The method named by `token`, compared case-sensitively (RFC 9110
    /// §9.1); `None` for any other token.
    pub fn parse(token: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.as_str() == token)
    }

    /// Position in [`Method::ALL`] (0..9), for per-method tables such as a
    /// router's.
    pub fn index(self) -> u8 {
        self as u8
    }
}

/// The protocol version of a request. HTTP/1.x versions other than these
/// two and every other major version are answered with 505.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Version {
    /// `HTTP/1.0`: no persistent connection unless asked for, no chunked
    /// transfer coding.
    Http10,
    /// `HTTP/1.1`
    Http11,
}

impl Version {
    /// `"HTTP/1.0"` or `"HTTP/1.1"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Version::Http10 => "HTTP/1.0",
            Version::Http11 => "HTTP/1.1",
        }
    }
}

/// How a request's body is framed (RFC 9112 §6.3), as the head decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BodyKind {
    /// No body: neither `Content-Length` nor `Transfer-Encoding`, or
    /// `Content-Length: 0`. The next request starts right after the head.
    Empty,
    /// Exactly this many bytes (never 0).
    Length(u64),
    /// The chunked transfer coding (RFC 9112 §7.1).
    Chunked,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_round_trip() {
        for (i, m) in Method::ALL.into_iter().enumerate() {
            assert_eq!(usize::from(m.index()), i);
            assert_eq!(Method::parse(m.as_str()), Some(m));
        }
        assert_eq!(Method::parse("get"), None);
        assert_eq!(Method::parse("PROPFIND"), None);
        assert_eq!(Method::parse(""), None);
    }

    #[test]
    fn default_limits() {
        let l = Limits::default();
        assert_eq!(
            (l.max_head_bytes, l.max_headers, l.max_url_bytes),
            (16 * 1024, 64, 8 * 1024)
        );
        assert_eq!(Version::Http10.as_str(), "HTTP/1.0");
    }
}
