//! Framing a response (RFC 9112 §4, §6, §7.1). Pure: the runtime passes the
//! date and owns the output buffer, which it reuses across responses.

use super::date::HttpDate;
use super::Version;

/// How the body of a response is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseBody {
    /// Exactly this many bytes follow: `Content-Length: n`. Also right for
    /// a response to HEAD that announces the length of the GET response.
    Length(u64),
    /// The body follows in chunks ([`write_chunk`], then
    /// [`write_last_chunk`]): `Transfer-Encoding: chunked`. HTTP/1.1
    /// requests only (RFC 9112 §6.1).
    Chunked,
    /// No framing header: for statuses without a body (1xx, 204, 304), a
    /// response to HEAD the caller frames itself, or a body delimited by
    /// closing the connection (then pass `keep_alive = false`).
    None,
}

/// The standard reason phrase of `status` (RFC 9110 §15 and the RFCs that
/// added codes since), `""` for an unknown status (RFC 9112 §4 allows an
/// empty reason; clients ignore it).
pub fn reason_phrase(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        102 => "Processing",
        103 => "Early Hints",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        205 => "Reset Content",
        206 => "Partial Content",
        207 => "Multi-Status",
        208 => "Already Reported",
        226 => "IM Used",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        305 => "Use Proxy",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        421 => "Misdirected Request",
        422 => "Unprocessable Content",
        423 => "Locked",
        424 => "Failed Dependency",
        425 => "Too Early",
        426 => "Upgrade Required",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        451 => "Unavailable For Legal Reasons",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        506 => "Variant Also Negotiates",
        507 => "Insufficient Storage",
        508 => "Loop Detected",
        511 => "Network Authentication Required",
        _ => "",
    }
}

/// Whether a response with this status may carry content: not 1xx, 204 or
/// 304 (RFC 9110 §6.4.1; RFC 9112 §6.3 rule 1).
pub fn status_allows_body(status: u16) -> bool {
    !((100..200).contains(&status) || status == 204 || status == 304)
}

/// Appends a response head to `out`: the status line, `Date`, the caller's
/// `headers` (complete `Name: value\r\n` lines, written verbatim: the caller
/// validated them), the framing header for `body`, the connection header,
/// and the blank line.
///
/// `Connection: close` is written when `!keep_alive`; `Connection:
/// keep-alive` when an HTTP/1.0 request is kept alive (HTTP/1.0 closes by
/// default, RFC 9112 §9.3). `reason` replaces the standard phrase; control
/// characters in it are written as spaces so it cannot end the line.
///
/// Preconditions (checked in debug builds): `status` is 100..=999; no
/// `Content-Length`/chunked framing for 1xx and 204 (RFC 9110 §8.6, RFC
/// 9112 §6.1); no chunked response to an HTTP/1.0 request (RFC 9112 §6.1:
/// send `ResponseBody::None` with `keep_alive = false` and the raw body).
#[allow(clippy::too_many_arguments)] // The API the runtime calls: one call per response, no builder.
pub fn write_response_head(
    out: &mut Vec<u8>,
    status: u16,
    reason: Option<&str>,
    date: &HttpDate,
    headers: &[u8],
    body: ResponseBody,
    keep_alive: bool,
    request_version: Version,
) {
    debug_assert!((100..1000).contains(&status), "status {status}");
    debug_assert!(
        status_allows_body(status) || status == 304 || body == ResponseBody::None,
        "status {status} has no body framing"
    );
    debug_assert!(
        !(body == ResponseBody::Chunked && request_version == Version::Http10),
        "chunked responses need an HTTP/1.1 request"
    );
    out.extend_from_slice(b"HTTP/1.1 ");
    push_decimal(out, u64::from(status));
    out.push(b' ');
    let reason = reason.unwrap_or_else(|| reason_phrase(status));
    out.extend(reason.bytes().map(|b| {
        // reason-phrase = *( HTAB / SP / VCHAR / obs-text ) (RFC 9112 §4)
        if b.is_ascii_control() && b != b'\t' {
            b' '
        } else {
            b
        }
    }));
    out.extend_from_slice(b"\r\nDate: ");
    out.extend_from_slice(date.as_bytes());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(headers);
    match body {
        ResponseBody::Length(n) => {
            out.extend_from_slice(b"Content-Length: ");
            push_decimal(out, n);
            out.extend_from_slice(b"\r\n");
        }
        ResponseBody::Chunked => out.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
        ResponseBody::None => {}
    }
    if !keep_alive {
        out.extend_from_slice(b"Connection: close\r\n");
    } else if request_version == Version::Http10 {
        out.extend_from_slice(b"Connection: keep-alive\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// The last chunk and an empty trailer section (RFC 9112 §7.1).
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// The line that opens a chunk of `len` bytes: the size in hex and CRLF,
/// on the stack, for writers that frame into buffers of their own.
#[derive(Clone, Copy, Debug)]
pub struct ChunkHead {
    bytes: [u8; 18],
    start: u8,
}

impl ChunkHead {
    /// The size line of a chunk of `len` bytes.
    pub fn new(len: usize) -> Self {
        let mut bytes = [0u8; 18];
        bytes[16] = b'\r';
        bytes[17] = b'\n';
        let mut n = len as u64;
        let mut i = 16;
        loop {
            i -= 1;
            bytes[i] = b"0123456789abcdef"[(n % 16) as usize];
            n /= 16;
            if n == 0 {
                break;
            }
        }
        Self {
            bytes,
            start: i as u8,
        }
    }

    /// The line's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[self.start as usize..]
    }

    /// A whole chunk's bytes on the wire: this line, the data and CRLF.
    pub fn framed_len(&self, len: usize) -> usize {
        self.as_bytes().len() + len + 2
    }
}

/// Appends one chunk (RFC 9112 §7.1): the size in hex, CRLF, the data,
/// CRLF. Writes nothing for empty data, which would end the body.
pub fn write_chunk(out: &mut Vec<u8>, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    out.extend_from_slice(ChunkHead::new(data.len()).as_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

/// Appends the last chunk and an empty trailer section: `0\r\n\r\n`.
pub fn write_last_chunk(out: &mut Vec<u8>) {
    out.extend_from_slice(LAST_CHUNK);
}

fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date() -> HttpDate {
        HttpDate::from_unix_seconds(784_111_777)
    }

    fn head(
        status: u16,
        reason: Option<&str>,
        headers: &str,
        body: ResponseBody,
        keep_alive: bool,
        version: Version,
    ) -> String {
        let mut out = b"previous".to_vec();
        write_response_head(
            &mut out,
            status,
            reason,
            &date(),
            headers.as_bytes(),
            body,
            keep_alive,
            version,
        );
        let text = String::from_utf8(out).unwrap();
        text.strip_prefix("previous").unwrap().to_owned()
    }

    #[test]
    fn response_heads() {
        assert_eq!(
            head(
                200,
                None,
                "Content-Type: text/plain\r\n",
                ResponseBody::Length(5),
                true,
                Version::Http11
            ),
            "HTTP/1.1 200 OK\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\
             Content-Type: text/plain\r\nContent-Length: 5\r\n\r\n"
        );
        assert_eq!(
            head(
                404,
                Some("Nope\r\nX: y"),
                "",
                ResponseBody::Chunked,
                false,
                Version::Http11
            ),
            "HTTP/1.1 404 Nope  X: y\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\
             Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        );
        assert_eq!(
            head(204, None, "", ResponseBody::None, true, Version::Http10),
            "HTTP/1.1 204 No Content\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\
             Connection: keep-alive\r\n\r\n"
        );
        assert_eq!(
            head(
                599,
                None,
                "",
                ResponseBody::Length(0),
                false,
                Version::Http10
            ),
            "HTTP/1.1 599 \r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\
             Content-Length: 0\r\nConnection: close\r\n\r\n"
        );
        assert!(head(
            200,
            None,
            "",
            ResponseBody::Length(u64::MAX),
            true,
            Version::Http11
        )
        .contains("Content-Length: 18446744073709551615\r\n"));
    }

    #[test]
    fn chunks() {
        let mut out = Vec::new();
        write_chunk(&mut out, b"");
        assert!(out.is_empty());
        write_chunk(&mut out, b"hello");
        write_chunk(&mut out, &[b'x'; 26]);
        write_last_chunk(&mut out);
        let mut expected = b"5\r\nhello\r\n1a\r\n".to_vec();
        expected.extend_from_slice(&[b'x'; 26]);
        expected.extend_from_slice(b"\r\n0\r\n\r\n");
        assert_eq!(out, expected);
        assert_eq!(ChunkHead::new(0).as_bytes(), b"0\r\n");
        assert_eq!(
            ChunkHead::new(usize::MAX).as_bytes(),
            b"ffffffffffffffff\r\n"
        );
        assert_eq!(ChunkHead::new(4096).framed_len(4096), 4 + 2 + 4096 + 2);
    }

    #[test]
    fn our_chunks_decode() {
        use crate::http1::{BodyDecoder, BodyKind, BodyLimits};
        let mut out = Vec::new();
        for part in [&b"a"[..], b"", b"bc", &[7u8; 300]] {
            write_chunk(&mut out, part);
        }
        write_last_chunk(&mut out);
        let mut decoder = BodyDecoder::new(BodyKind::Chunked, BodyLimits::default()).unwrap();
        let (mut rest, mut body) = (&out[..], Vec::new());
        loop {
            let chunk = decoder.decode(rest).unwrap();
            body.extend_from_slice(chunk.data);
            rest = &rest[chunk.consumed..];
            if chunk.done {
                break;
            }
        }
        assert!(rest.is_empty());
        assert_eq!(body.len(), 303);
    }

    #[test]
    fn phrases_and_bodies() {
        assert_eq!(reason_phrase(413), "Content Too Large");
        assert_eq!(reason_phrase(414), "URI Too Long");
        assert_eq!(reason_phrase(417), "Expectation Failed");
        assert_eq!(reason_phrase(501), "Not Implemented");
        assert_eq!(reason_phrase(299), "");
        for status in [100, 101, 199, 204, 304] {
            assert!(!status_allows_body(status), "{status}");
        }
        for status in [200, 201, 205, 303, 400, 500] {
            assert!(status_allows_body(status), "{status}");
        }
        // Every error of this module has a phrase.
        for (_, status, _) in crate::http1::ALL_ERROR_CODES {
            assert!(!reason_phrase(*status).is_empty());
        }
    }
}
