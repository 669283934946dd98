//! What the header fields of a request mean for the server: the authority,
//! the body framing (RFC 9112 §6), the connection options and
//! expectations. Syntax of each line was checked by the scan and httparse;
//! this checks the values the server acts on.

use httparse::Header;

use super::encoding::AcceptEncoding;
use super::error::HttpError;
use super::target::is_valid_host;
use super::{BodyKind, Version};

/// Where one header's name and value are in the head. Offsets, not
/// slices, so the parser can keep the vector between requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FieldSpan {
    name: (usize, usize),
    value: (usize, usize),
}

impl FieldSpan {
    /// The span of a header httparse returned from `head`.
    pub(super) fn locate(head: &[u8], header: &Header<'_>) -> FieldSpan {
        let at = |part: &[u8]| {
            // httparse's slices point into `head`; clamped so a surprise
            // could only misreport a header, never panic.
            let start = (part.as_ptr() as usize)
                .wrapping_sub(head.as_ptr() as usize)
                .min(head.len());
            (start, (start + part.len()).min(head.len()))
        };
        FieldSpan {
            name: at(header.name.as_bytes()),
            value: at(header.value),
        }
    }

    /// Where the header's line starts.
    pub(super) fn start(&self) -> usize {
        self.name.0
    }

    /// The name and value within `head`, as bytes.
    fn bytes<'b>(&self, head: &'b [u8]) -> (&'b [u8], &'b [u8]) {
        let name = head.get(self.name.0..self.name.1).unwrap_or_default();
        let value = head.get(self.value.0..self.value.1).unwrap_or_default();
        (name, value)
    }

    /// The name and value within `head`.
    pub(super) fn resolve<'b>(&self, head: &'b [u8]) -> (&'b str, &'b [u8]) {
        let (name, value) = self.bytes(head);
        // Names are tokens (ASCII), checked by httparse.
        (std::str::from_utf8(name).unwrap_or_default(), value)
    }
}

/// What the headers decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FieldFacts<'b> {
    pub host: Option<&'b str>,
    pub body: BodyKind,
    pub keep_alive: bool,
    pub expect_continue: bool,
    pub upgrade: bool,
    pub accept_encoding: AcceptEncoding,
}

/// Checks the fields the server acts on, in this order (the first failure
/// wins): each value's syntax as it comes (400), then Host presence (400),
/// then body framing (400 or 501), then `Expect` (417).
pub(super) fn analyse_fields<'b>(
    head: &'b [u8],
    spans: &[FieldSpan],
    version: Version,
) -> Result<FieldFacts<'b>, HttpError> {
    let mut host = None;
    let mut content_length = None;
    let mut codings = Codings::default();
    let (mut close, mut keep_alive_token, mut upgrade_token) = (false, false, false);
    let mut upgrade_header = false;
    let mut expect = Expect::None;
    let mut accept_encoding = AcceptEncoding::default();
    for span in spans {
        // Most lines of a request are none of these: the length rules a
        // name out before any comparison.
        let (name, value) = span.bytes(head);
        if is(name, b"host") {
            // RFC 9112 §3.2: 400 for more than one Host line or an invalid
            // Host value (grammar: RFC 9110 §7.2, see `is_valid_host`).
            if host.is_some() {
                return Err(HttpError::BadRequest("repeated Host header"));
            }
            if !is_valid_host(value) {
                return Err(HttpError::BadRequest("invalid Host header"));
            }
            host = Some(std::str::from_utf8(value).unwrap_or_default());
        } else if is(name, b"content-length") {
            // RFC 9110 §8.6 lets a recipient merge identical repeated
            // values or a list of them; a proxy that does and one that does
            // not disagree on framing, so any second Content-Length is 400.
            if content_length.is_some() {
                return Err(HttpError::BadRequest("repeated Content-Length"));
            }
            content_length = Some(parse_content_length(value)?);
        } else if is(name, b"transfer-encoding") {
            codings.add(value)?;
        } else if is(name, b"connection") {
            // RFC 9110 §7.6.1: Connection = #connection-option (tokens,
            // case-insensitive).
            for option in ListElements::new(value) {
                if !is_token(option) {
                    return Err(HttpError::BadRequest("invalid Connection option"));
                }
                close |= option.eq_ignore_ascii_case(b"close");
                keep_alive_token |= option.eq_ignore_ascii_case(b"keep-alive");
                upgrade_token |= option.eq_ignore_ascii_case(b"upgrade");
            }
        } else if is(name, b"expect") {
            // RFC 9110 §10.1.1: 100-continue (case-insensitive) is the only
            // expectation; any other (or an empty value) is 417.
            let mut any = false;
            for expectation in ListElements::new(value) {
                any = true;
                if !expectation.eq_ignore_ascii_case(b"100-continue") {
                    expect = Expect::Other;
                }
            }
            if !any {
                expect = Expect::Other;
            } else if expect == Expect::None {
                expect = Expect::Continue;
            }
        } else if is(name, b"upgrade") {
            upgrade_header = true;
        } else if is(name, b"accept-encoding") {
            // Never an error: a malformed element is ignored (encoding.rs).
            accept_encoding.add(value);
        }
    }
    // RFC 9112 §3.2: an HTTP/1.1 request without Host is 400.
    if version == Version::Http11 && host.is_none() {
        return Err(HttpError::BadRequest("missing Host header"));
    }
    let body = match (codings.seen, content_length) {
        (true, _) if version == Version::Http10 => {
            // RFC 9112 §6.1: Transfer-Encoding in an HTTP/1.0 message means
            // faulty framing (1.0 has no chunked coding).
            return Err(HttpError::BadRequest(
                "Transfer-Encoding in an HTTP/1.0 request",
            ));
        }
        (true, Some(_)) => {
            // RFC 9112 §6.1 lets a server reject a request with both, and
            // §6.3 warns that it is the classic smuggling attempt: we do.
            return Err(HttpError::BadRequest(
                "both Content-Length and Transfer-Encoding",
            ));
        }
        (true, None) => {
            codings.finish()?;
            BodyKind::Chunked
        }
        (false, Some(0) | None) => BodyKind::Empty,
        (false, Some(n)) => BodyKind::Length(n),
    };
    if expect == Expect::Other {
        return Err(HttpError::ExpectationFailed);
    }
    Ok(FieldFacts {
        host,
        body,
        // RFC 9112 §9.3: HTTP/1.1 persists unless "close"; HTTP/1.0 only
        // with "keep-alive"; "close" wins over both.
        keep_alive: !close && (version == Version::Http11 || keep_alive_token),
        // RFC 9110 §10.1.1: a 100-continue in an HTTP/1.0 request MUST be
        // ignored.
        expect_continue: expect == Expect::Continue && version == Version::Http11,
        upgrade: upgrade_header && upgrade_token,
        accept_encoding,
    })
}

/// Whether header `name` is `wanted` (lowercase), ASCII case aside.
#[inline(always)]
fn is(name: &[u8], wanted: &[u8]) -> bool {
    name.len() == wanted.len() && name.eq_ignore_ascii_case(wanted)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    None,
    Continue,
    Other,
}

/// RFC 9110 §8.6: `Content-Length = 1*DIGIT`. No sign, no whitespace
/// inside, no list; a value that overflows u64 is 400 (§8.6: a recipient
/// MUST anticipate large numbers and avoid overflow).
fn parse_content_length(value: &[u8]) -> Result<u64, HttpError> {
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return Err(HttpError::BadRequest("invalid Content-Length"));
    }
    value.iter().try_fold(0u64, |n, &d| {
        n.checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(d - b'0')))
            .ok_or(HttpError::BadRequest("Content-Length overflows"))
    })
}

/// The transfer codings of every Transfer-Encoding line, in order (RFC 9110
/// §5.3: lines of a list field combine in order).
#[derive(Debug, Default)]
struct Codings {
    seen: bool,
    count: usize,
    chunked: usize,
    last_is_chunked: bool,
    other: bool,
}

impl Codings {
    /// Adds one line's codings: `#transfer-coding` where transfer-coding =
    /// token *( OWS ";" OWS token BWS "=" BWS ( token / quoted-string ) )
    /// (RFC 9112 §7; names case-insensitive). A malformed element is 400.
    fn add(&mut self, value: &[u8]) -> Result<(), HttpError> {
        self.seen = true;
        for element in ListElements::new(value) {
            let name_len = token_len(element);
            let (name, params) = element.split_at(name_len);
            if name.is_empty() || !valid_parameters(params) {
                return Err(HttpError::BadRequest("malformed Transfer-Encoding"));
            }
            let chunked = name.eq_ignore_ascii_case(b"chunked");
            if chunked && !params.is_empty() {
                // RFC 9112 §7.1 defines no parameters for chunked.
                return Err(HttpError::BadRequest("parameters on chunked"));
            }
            self.count += 1;
            self.chunked += usize::from(chunked);
            self.other |= !chunked;
            self.last_is_chunked = chunked;
        }
        Ok(())
    }

    /// The verdict on the whole list.
    fn finish(&self) -> Result<(), HttpError> {
        if self.count == 0 {
            return Err(HttpError::BadRequest("empty Transfer-Encoding"));
        }
        // RFC 9112 §6.1: a sender MUST NOT apply chunked more than once.
        if self.chunked > 1 {
            return Err(HttpError::BadRequest("chunked applied more than once"));
        }
        // RFC 9112 §6.3 rule 4: chunked not last leaves the length of a
        // request undeterminable: 400, then close.
        if !self.last_is_chunked {
            return Err(HttpError::BadRequest(
                "chunked is not the final transfer coding",
            ));
        }
        // RFC 9112 §6.1: a coding the server does not understand is 501;
        // we decode none but chunked (no gzip or deflate of request bodies).
        if self.other {
            return Err(HttpError::NotImplemented(
                "transfer coding other than chunked",
            ));
        }
        Ok(())
    }
}

/// RFC 9110 §5.6.2 tchar.
pub(super) fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'!' | b'#'
                | b'$'
                | b'%'
                | b'&'
                | b'\''
                | b'*'
                | b'+'
                | b'-'
                | b'.'
                | b'^'
                | b'_'
                | b'`'
                | b'|'
                | b'~'
        )
}

pub(super) fn token_len(s: &[u8]) -> usize {
    s.iter().take_while(|&&b| is_tchar(b)).count()
}

fn is_token(s: &[u8]) -> bool {
    !s.is_empty() && token_len(s) == s.len()
}

fn trim_ows_start(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|&&b| b == b' ' || b == b'\t').count();
    &s[n..]
}

/// Length of the quoted-string at the start of `s` (RFC 9110 §5.6.4), or
/// `None` if it is not one.
pub(super) fn quoted_string_len(s: &[u8]) -> Option<usize> {
    if s.first() != Some(&b'"') {
        return None;
    }
    let mut i = 1;
    while i < s.len() {
        match s[i] {
            b'"' => return Some(i + 1),
            b'\\' => {
                // quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text )
                let next = *s.get(i + 1)?;
                if !(next == b'\t' || next == b' ' || (next > 0x20 && next != 0x7f)) {
                    return None;
                }
                i += 2;
            }
            // qdtext = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text
            b'\t' | b' ' => i += 1,
            b if b > 0x20 && b != 0x7f => i += 1,
            _ => return None,
        }
    }
    None
}

/// Whether `s` is `*( OWS ";" OWS token BWS "=" BWS ( token /
/// quoted-string ) )`, with nothing after the last parameter.
fn valid_parameters(mut s: &[u8]) -> bool {
    loop {
        s = trim_ows_start(s);
        if s.is_empty() {
            return true;
        }
        let Some(rest) = s.strip_prefix(b";") else {
            return false;
        };
        let rest = trim_ows_start(rest);
        let name = token_len(rest);
        if name == 0 {
            return false;
        }
        let Some(rest) = trim_ows_start(&rest[name..]).strip_prefix(b"=") else {
            return false;
        };
        let rest = trim_ows_start(rest);
        let value = match quoted_string_len(rest) {
            Some(n) => n,
            None => token_len(rest),
        };
        if value == 0 {
            return false;
        }
        s = &rest[value..];
    }
}

/// The elements of a list-based field value (RFC 9110 §5.6.1): split at
/// commas outside quoted strings, OWS trimmed, empty elements skipped (a
/// recipient MUST accept them).
pub(super) struct ListElements<'a> {
    rest: Option<&'a [u8]>,
}

impl<'a> ListElements<'a> {
    pub(super) fn new(value: &'a [u8]) -> Self {
        ListElements { rest: Some(value) }
    }
}

impl<'a> Iterator for ListElements<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        loop {
            let s = self.rest?;
            let mut i = 0;
            let mut quoted = false;
            while i < s.len() {
                match s[i] {
                    b'"' => quoted = !quoted,
                    b'\\' if quoted => i += 1,
                    b',' if !quoted => break,
                    _ => {}
                }
                i += 1;
            }
            let end = i.min(s.len());
            self.rest = s.get(end + 1..).filter(|_| end < s.len());
            let element = trim_ows_start(&s[..end]);
            let trailing = element
                .iter()
                .rev()
                .take_while(|&&b| b == b' ' || b == b'\t')
                .count();
            let element = &element[..element.len() - trailing];
            if !element.is_empty() {
                return Some(element);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elements(value: &str) -> Vec<&str> {
        ListElements::new(value.as_bytes())
            .map(|e| std::str::from_utf8(e).unwrap())
            .collect()
    }

    #[test]
    fn list_elements() {
        assert_eq!(elements("a, b ,c"), ["a", "b", "c"]);
        assert_eq!(elements(" , ,a,,\t,b, "), ["a", "b"]);
        assert_eq!(elements(""), Vec::<&str>::new());
        assert_eq!(elements(r#"x;q="a,b", y"#), [r#"x;q="a,b""#, "y"]);
        assert_eq!(elements(r#"x;q="a\",b", y"#), [r#"x;q="a\",b""#, "y"]);
    }

    #[test]
    fn content_lengths() {
        assert_eq!(parse_content_length(b"0"), Ok(0));
        assert_eq!(parse_content_length(b"003"), Ok(3));
        assert_eq!(parse_content_length(b"18446744073709551615"), Ok(u64::MAX));
        for bad in [
            &b""[..],
            b"+1",
            b"-1",
            b"1 2",
            b"1,1",
            b"0x10",
            b"1.0",
            b"18446744073709551616",
        ] {
            assert!(parse_content_length(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn coding_syntax() {
        for good in [
            "chunked",
            "gzip, chunked",
            "x;a=b, chunked",
            "x ; a = \"q ; ,\" ,chunked",
        ] {
            let mut c = Codings::default();
            assert!(c.add(good.as_bytes()).is_ok(), "{good}");
        }
        for bad in [
            "chunked;", "x;a", "x;=b", "x;a=", "x y", "x;a=b c", "\"x\"", "x;a=\"b",
        ] {
            let mut c = Codings::default();
            assert!(c.add(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn quoted_strings() {
        assert_eq!(quoted_string_len(br#""""#), Some(2));
        assert_eq!(quoted_string_len(br#""a\"b" rest"#), Some(6));
        assert_eq!(quoted_string_len(br#""abc"#), None);
        assert_eq!(quoted_string_len(b"\"a\rb\""), None);
        assert_eq!(quoted_string_len(b"\"a\\\nb\""), None);
        assert_eq!(quoted_string_len(b"abc"), None);
    }
}
