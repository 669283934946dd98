//! The request-target (RFC 9112 §3.2) and the `Host` value (RFC 9110 §7.2),
//! checked with the URI grammar of RFC 3986.

use super::error::HttpError;
use super::Method;

/// A request-target split into the parts a router needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Target<'b> {
    /// The path (`"*"` for asterisk-form; at least `"/"` for absolute-form).
    pub path: &'b str,
    /// The raw query after the first `?`.
    pub query: Option<&'b str>,
    /// The authority of an absolute-form target, which replaces `Host`
    /// (RFC 9112 §3.2.2).
    pub authority: Option<&'b str>,
}

/// Splits and checks a request-target.
///
/// - The bytes are visible ASCII (RFC 3986 §2: non-ASCII must be
///   percent-encoded; Node 20 also answers 400), and `#` is refused: a
///   fragment is not part of any request-target form (RFC 9112 §3.2), and a
///   proxy that strips it would route a different path. The other
///   characters RFC 3986 excludes (`"<>\^`{|}`) are let through because
///   browsers send `{|}^` and backtick unencoded in queries (the WHATWG URL
///   query set) and Node accepts them; percent-encoding is not validated
///   here, decoding is the application's business.
/// - origin-form `/path[?query]` for every method (RFC 9112 §3.2.1);
/// - absolute-form `http(s)://authority[/path][?query]` (RFC 9112 §3.2.2),
///   which a server MUST accept; the scheme is case-insensitive (RFC 3986
///   §3.1), the authority must be a non-empty host without userinfo (RFC
///   9110 §4.2.1, §4.2.4); an empty path is `/`;
/// - asterisk-form `*` only with OPTIONS (RFC 9112 §3.2.4);
/// - authority-form belongs to CONNECT, which is refused with 501 before
///   this is called; anything else is 400.
pub(super) fn parse_target(method: Method, target: &str) -> Result<Target<'_>, HttpError> {
    if !target.bytes().all(|b| b.is_ascii_graphic() && b != b'#') {
        return Err(HttpError::BadRequest(
            "invalid character in the request-target",
        ));
    }
    if target == "*" {
        return if method == Method::Options {
            Ok(Target {
                path: "*",
                query: None,
                authority: None,
            })
        } else {
            Err(HttpError::BadRequest(
                "asterisk-form target without OPTIONS",
            ))
        };
    }
    if target.starts_with('/') {
        let (path, query) = split_query(target);
        return Ok(Target {
            path,
            query,
            authority: None,
        });
    }
    let rest = strip_prefix_ignore_case(target, "http://")
        .or_else(|| strip_prefix_ignore_case(target, "https://"))
        .ok_or(HttpError::BadRequest(
            "request-target is not origin-form, absolute-form or *",
        ))?;
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path_and_query) = rest.split_at(authority_end);
    if authority.is_empty() || !is_valid_host(authority.as_bytes()) {
        return Err(HttpError::BadRequest(
            "invalid authority in the request-target",
        ));
    }
    let (path, query) = split_query(path_and_query);
    Ok(Target {
        path: if path.is_empty() { "/" } else { path },
        query,
        authority: Some(authority),
    })
}

fn split_query(s: &str) -> (&str, Option<&str>) {
    match s.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (s, None),
    }
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

/// RFC 3986 §2.3 unreserved and §2.2 sub-delims: the characters of a
/// reg-name besides percent-encodings. A table: every request's `Host` is
/// checked byte by byte, and the chain of comparisons was a visible share
/// of parsing a small request.
fn is_reg_name_char(b: u8) -> bool {
    REG_NAME_CHARS[usize::from(b)]
}

const REG_NAME_CHARS: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'-' | b'.'
                    | b'_'
                    | b'~'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
            );
        b += 1;
    }
    table
};

/// Whether `v` is a valid `Host` value: `uri-host [ ":" port ]` (RFC 9110
/// §7.2), where uri-host is an IP-literal in brackets (checked loosely: the
/// characters of IPv6 and IPvFuture) or a reg-name / IPv4 address (RFC 3986
/// §3.2.2, percent-encodings well-formed), and port is `*DIGIT`. Empty is
/// valid: RFC 9112 §3.2 has clients send an empty Host when the target URI
/// has no authority. Whitespace, `@` (userinfo) and a second `:` are not.
pub(super) fn is_valid_host(v: &[u8]) -> bool {
    let (host_ok, rest) = if let Some(inner) = v.strip_prefix(b"[") {
        match inner.iter().position(|&b| b == b']') {
            Some(end) => {
                let literal = &inner[..end];
                let ok = !literal.is_empty()
                    && literal.iter().all(|&b| is_reg_name_char(b) || b == b':');
                (ok, &inner[end + 1..])
            }
            None => (false, &b""[..]),
        }
    } else {
        let end = v.iter().position(|&b| b == b':').unwrap_or(v.len());
        (is_reg_name(&v[..end]), &v[end..])
    };
    let port_ok = match rest {
        [] => true,
        [b':', port @ ..] => port.iter().all(u8::is_ascii_digit),
        _ => false,
    };
    host_ok && port_ok
}

fn is_reg_name(name: &[u8]) -> bool {
    let mut i = 0;
    while i < name.len() {
        match name[i] {
            b'%' => {
                let hex = name.get(i + 1..i + 3);
                if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                    return false;
                }
                i += 3;
            }
            b if is_reg_name_char(b) => i += 1,
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(method: Method, target: &str) -> (&str, Option<&str>, Option<&str>) {
        let t = parse_target(method, target).unwrap();
        (t.path, t.query, t.authority)
    }

    #[test]
    fn forms() {
        assert_eq!(ok(Method::Get, "/"), ("/", None, None));
        assert_eq!(ok(Method::Get, "/a/b?c=d?e"), ("/a/b", Some("c=d?e"), None));
        assert_eq!(ok(Method::Get, "/a?"), ("/a", Some(""), None));
        assert_eq!(ok(Method::Get, "//x"), ("//x", None, None));
        assert_eq!(ok(Method::Get, "/q?x={|}^`"), ("/q", Some("x={|}^`"), None));
        assert_eq!(ok(Method::Options, "*"), ("*", None, None));
        assert_eq!(
            ok(Method::Get, "http://example.com:8080/p?q"),
            ("/p", Some("q"), Some("example.com:8080"))
        );
        assert_eq!(ok(Method::Get, "HTTPS://a.b"), ("/", None, Some("a.b")));
        assert_eq!(
            ok(Method::Get, "http://a?x=1"),
            ("/", Some("x=1"), Some("a"))
        );
        assert_eq!(
            ok(Method::Get, "http://[::1]:80/"),
            ("/", None, Some("[::1]:80"))
        );
    }

    #[test]
    fn bad_targets() {
        for (method, target) in [
            (Method::Get, "*"),
            (Method::Get, "example.com:443"),
            (Method::Get, "a/b"),
            (Method::Get, "/a#frag"),
            (Method::Get, "/caf\u{e9}"),
            (Method::Get, "ftp://a/b"),
            (Method::Get, "http:///p"),
            (Method::Get, "http://"),
            (Method::Get, "http://user:pw@host/p"),
            (Method::Get, "http://a b/"),
            (Method::Options, "**"),
        ] {
            let err = parse_target(method, target).unwrap_err();
            assert_eq!(err.status(), 400, "{target}");
        }
    }

    #[test]
    fn hosts() {
        for good in [
            "",
            "example.com",
            "a:1",
            "a:",
            "0.0.0.0=5000",
            "[::1]",
            "[::1]:8080",
            "[v1.fe:x]",
            "xn--bcher-kva.example",
            "a%20b",
            "239.255.255.250:1900",
            "_a_",
        ] {
            assert!(is_valid_host(good.as_bytes()), "{good:?}");
        }
        for bad in [
            "a b",
            "a:b",
            "a:1:2",
            "user@host",
            "[::1",
            "[]",
            "[::1]x",
            "a%2",
            "a%zz",
            "a/b",
            "a\tb",
            "h\u{e9}",
            "a?b",
            "a#b",
            "[::1]:x",
        ] {
            assert!(!is_valid_host(bad.as_bytes()), "{bad:?}");
        }
    }
}
