//! Parsing an HTTP/1.x request head with `httparse`, within limits.

use super::error::HandshakeError;

/// Default for [`HeadLimits::max_head_bytes`]: 16 KiB, the same as Node.js's
/// `http.maxHeaderSize`, so a request a plain Node server accepts is not
/// rejected here. Browser upgrade requests are typically 0.5-2 KiB; cookies
/// are what push real requests past 8 KiB. The buffer is only held until
/// the handshake completes.
pub const DEFAULT_MAX_HEAD_BYTES: usize = 16 * 1024;

/// Default for [`HeadLimits::max_headers`]: 64. Browsers send about 15
/// headers on an upgrade and proxies add a handful; 64 leaves ample room
/// while keeping httparse's header array (32 bytes per slot) at 2 KiB.
/// The runtime makes it a server option (`maxHeaders`) for deployments
/// behind chains of proxies that add more.
pub const DEFAULT_MAX_HEADERS: usize = 64;

/// Limits on a request head, both answered with 431 when exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadLimits {
    /// Largest head in bytes, request line and final CRLF included.
    pub max_head_bytes: usize,
    /// Most header lines.
    pub max_headers: usize,
}

impl Default for HeadLimits {
    fn default() -> Self {
        HeadLimits {
            max_head_bytes: DEFAULT_MAX_HEAD_BYTES,
            max_headers: DEFAULT_MAX_HEADERS,
        }
    }
}

/// An owned, parsed request head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead {
    /// The method as sent, e.g. `GET` (methods are case-sensitive).
    pub method: String,
    /// The request target up to `?`.
    pub path: String,
    /// The raw query string after `?`, without decoding; `None` without `?`.
    pub query: Option<String>,
    /// The minor version of HTTP/1.x: 0 or 1.
    pub version: u8,
    /// Headers in order, names lowercased, values as sent (without
    /// surrounding whitespace). Repeated headers stay separate entries.
    pub headers: Vec<(String, String)>,
}

impl RequestHead {
    /// The first value of header `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of header `name` (lowercase), in order.
    pub fn headers_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Parses a request head from the start of `buf`.
///
/// Returns `Ok(None)` when the head is not complete yet (read more and call
/// again with the longer buffer), or the head and the number of bytes it
/// took; bytes after that belong to the next protocol. Only the first
/// `max_head_bytes` of `buf` are ever looked at.
pub fn parse_request_head(
    buf: &[u8],
    limits: &HeadLimits,
) -> Result<Option<(RequestHead, usize)>, HandshakeError> {
    let window = &buf[..buf.len().min(limits.max_head_bytes)];
    // The runtime calls this after every read, and a slow client can send
    // one byte per read: only allocate and run the full parser once the
    // blank line that ends a head has arrived.
    if !contains_blank_line(window) {
        return if buf.len() >= limits.max_head_bytes {
            Err(HandshakeError::HeadersTooLarge)
        } else {
            Ok(None)
        };
    }
    // A header line takes at least 3 bytes (`a:` and a line end), so the
    // window cannot hold more than `len / 3` of them: a large configured
    // `max_headers` never reserves more slots than the head could fill.
    let slots = limits.max_headers.min(window.len() / 3 + 1);
    let mut headers = vec![httparse::EMPTY_HEADER; slots];
    let mut req = httparse::Request::new(&mut headers);
    let consumed = match req.parse(window) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() >= limits.max_head_bytes => {
            return Err(HandshakeError::HeadersTooLarge);
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(HandshakeError::HeadersTooLarge),
        Err(httparse::Error::Version) => {
            return Err(HandshakeError::BadRequest("unsupported HTTP version"))
        }
        Err(_) => return Err(HandshakeError::BadRequest("malformed request head")),
    };
    let (Some(method), Some(target), Some(version)) = (req.method, req.path, req.version) else {
        return Err(HandshakeError::BadRequest("malformed request line"));
    };
    let (path, query) = match target.split_once('?') {
        Some((path, query)) => (path.to_owned(), Some(query.to_owned())),
        None => (target.to_owned(), None),
    };
    let mut owned = Vec::with_capacity(req.headers.len());
    for h in req.headers.iter() {
        let value = std::str::from_utf8(h.value)
            .map_err(|_| HandshakeError::BadRequest("header value is not valid UTF-8"))?;
        owned.push((
            h.name.to_ascii_lowercase(),
            value.trim_matches([' ', '\t']).to_owned(),
        ));
    }
    let head = RequestHead {
        method: method.to_owned(),
        path,
        query,
        version,
        headers: owned,
    };
    Ok(Some((head, consumed)))
}

/// Whether `buf` contains an empty line (`\n\n` or `\n\r\n`), without
/// which no head is complete. httparse also accepts bare `\n` line ends, so
/// both forms count.
fn contains_blank_line(buf: &[u8]) -> bool {
    buf.windows(2).enumerate().any(|(i, pair)| {
        pair[0] == b'\n'
            && (pair[1] == b'\n' || (pair[1] == b'\r' && buf.get(i + 2) == Some(&b'\n')))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const REQUEST: &[u8] = b"GET /chat?room=1&x=%20 HTTP/1.1\r\n\
        Host: server.example.com\r\n\
        Upgrade: websocket\r\n\
        Connection: Upgrade\r\n\
        Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
        Sec-WebSocket-Protocol: chat, superchat\r\n\
        X-Dup: 1\r\n\
        x-dup:   2  \r\n\
        Sec-WebSocket-Version: 13\r\n\r\n";

    #[test]
    fn parses_a_complete_head() {
        let mut input = REQUEST.to_vec();
        input.extend_from_slice(b"\x81\x80extra"); // bytes after the head are not consumed
        let (head, n) = parse_request_head(&input, &HeadLimits::default())
            .unwrap()
            .unwrap();
        assert_eq!(n, REQUEST.len());
        assert_eq!(head.method, "GET");
        assert_eq!(head.path, "/chat");
        assert_eq!(head.query.as_deref(), Some("room=1&x=%20"));
        assert_eq!(head.version, 1);
        assert_eq!(head.header("host"), Some("server.example.com"));
        assert_eq!(
            head.header("sec-websocket-key"),
            Some("dGhlIHNhbXBsZSBub25jZQ==")
        );
        assert_eq!(head.headers_all("x-dup").collect::<Vec<_>>(), ["1", "2"]);
        assert_eq!(head.header("missing"), None);
    }

    #[test]
    fn every_prefix_needs_more() {
        for end in 0..REQUEST.len() {
            assert_eq!(
                parse_request_head(&REQUEST[..end], &HeadLimits::default()),
                Ok(None),
                "{end}"
            );
        }
    }

    #[test]
    fn bare_lf_line_ends_are_accepted() {
        let (head, n) =
            parse_request_head(b"GET / HTTP/1.1\nHost: a\n\nrest", &HeadLimits::default())
                .unwrap()
                .unwrap();
        assert_eq!((head.header("host"), n), (Some("a"), 24));
        assert!(!contains_blank_line(b"GET / HTTP/1.1\r\nHost: a\r\n"));
        assert!(contains_blank_line(b"\n\r\n"));
    }

    #[test]
    fn no_query_and_empty_query() {
        let (head, _) = parse_request_head(b"GET / HTTP/1.0\r\n\r\n", &HeadLimits::default())
            .unwrap()
            .unwrap();
        assert_eq!(
            (head.path.as_str(), head.query, head.version),
            ("/", None, 0)
        );
        let (head, _) = parse_request_head(b"GET /a? HTTP/1.1\r\n\r\n", &HeadLimits::default())
            .unwrap()
            .unwrap();
        assert_eq!(
            (head.path.as_str(), head.query.as_deref()),
            ("/a", Some(""))
        );
    }

    #[test]
    fn head_size_limit() {
        let limits = HeadLimits {
            max_head_bytes: REQUEST.len(),
            max_headers: 64,
        };
        assert!(parse_request_head(REQUEST, &limits).unwrap().is_some());
        let limits = HeadLimits {
            max_head_bytes: REQUEST.len() - 1,
            max_headers: 64,
        };
        assert_eq!(
            parse_request_head(REQUEST, &limits),
            Err(HandshakeError::HeadersTooLarge)
        );
        // Incomplete, but already over the limit: no point waiting for more.
        assert_eq!(
            parse_request_head(&REQUEST[..REQUEST.len() - 1], &limits),
            Err(HandshakeError::HeadersTooLarge)
        );
        // Incomplete and under the limit: wait.
        assert_eq!(
            parse_request_head(&REQUEST[..REQUEST.len() - 2], &limits),
            Ok(None)
        );
    }

    #[test]
    fn header_count_limit() {
        let limits = HeadLimits {
            max_head_bytes: 16 * 1024,
            max_headers: 8,
        };
        assert!(parse_request_head(REQUEST, &limits).unwrap().is_some());
        let limits = HeadLimits {
            max_headers: 7,
            ..limits
        };
        assert_eq!(
            parse_request_head(REQUEST, &limits),
            Err(HandshakeError::HeadersTooLarge)
        );
        assert_eq!(HandshakeError::HeadersTooLarge.status(), 431);
    }

    #[test]
    fn a_large_header_limit_parses_the_densest_head() {
        // Header lines of 3 bytes each: the slots reserved for the window
        // (len / 3 + 1) still hold every one of them.
        let mut head = b"GET / HTTP/1.1\n".to_vec();
        for _ in 0..500 {
            head.extend_from_slice(b"a:\n");
        }
        head.extend_from_slice(b"\n");
        let limits = HeadLimits {
            max_head_bytes: 16 * 1024,
            max_headers: usize::MAX,
        };
        let (parsed, n) = parse_request_head(&head, &limits).unwrap().unwrap();
        assert_eq!((parsed.headers.len(), n), (500, head.len()));
        let limits = HeadLimits {
            max_headers: 499,
            ..limits
        };
        assert_eq!(
            parse_request_head(&head, &limits),
            Err(HandshakeError::HeadersTooLarge)
        );
    }

    #[test]
    fn malformed_heads_are_400() {
        for bad in [
            &b"GET /chat HTTP/1.1\r\nHost example.com\r\n\r\n"[..],
            b"GET /chat HTTP/2.0\r\n\r\n",
            b"GET  HTTP/1.1\r\n\r\n",
            b"\x00GET / HTTP/1.1\r\n\r\n",
            b"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n",
            b"GET / HTTP/1.1\r\nX: caf\xe9\r\n\r\n",
        ] {
            let err = parse_request_head(bad, &HeadLimits::default()).unwrap_err();
            assert_eq!(
                err.status(),
                400,
                "{:?} -> {err:?}",
                String::from_utf8_lossy(bad)
            );
            assert_eq!(err.code(), "ERR_HTTP_BAD_REQUEST");
        }
    }
}
