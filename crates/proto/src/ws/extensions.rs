//! Parsing of `Sec-WebSocket-Extensions` values (RFC 6455 §9.1):
//!
//! ```text
//! extension-list = 1#extension
//! extension      = extension-token *( ";" extension-param )
//! extension-param = token [ "=" (token | quoted-string) ]
//! ```
//!
//! with optional whitespace around separators. Empty list elements are
//! skipped, as RFC 7230 §7 asks of recipients. Anything else that does not fit
//! the grammar makes the whole header malformed.

use std::fmt;

/// One extension offer: its name and parameters in order. A quoted value is
/// returned unescaped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtensionOffer {
    /// The extension token, e.g. `permessage-deflate`.
    pub name: String,
    /// `(name, value)` pairs; `None` for a parameter without `=`.
    pub params: Vec<(String, Option<String>)>,
}

/// A `Sec-WebSocket-Extensions` value that does not follow RFC 6455 §9.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MalformedExtensions;

impl fmt::Display for MalformedExtensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("malformed Sec-WebSocket-Extensions header")
    }
}

impl std::error::Error for MalformedExtensions {}

/// `tchar` from RFC 7230 §3.2.6.
pub(crate) fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// True when `s` is a non-empty RFC 7230 token.
pub(crate) fn is_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(is_tchar)
}

/// Parses one header value into its offers.
pub fn parse_extensions(value: &str) -> Result<Vec<ExtensionOffer>, MalformedExtensions> {
    let mut p = Parser {
        s: value.as_bytes(),
        at: 0,
    };
    let mut offers = Vec::new();
    loop {
        p.skip_ows();
        match p.peek() {
            None => return Ok(offers),
            Some(b',') => {
                p.at += 1;
                continue;
            }
            Some(_) => {}
        }
        let name = p.token()?;
        let mut params = Vec::new();
        loop {
            p.skip_ows();
            match p.peek() {
                Some(b';') => {
                    p.at += 1;
                    p.skip_ows();
                    let key = p.token()?;
                    p.skip_ows();
                    let value = if p.peek() == Some(b'=') {
                        p.at += 1;
                        p.skip_ows();
                        Some(if p.peek() == Some(b'"') {
                            p.quoted()?
                        } else {
                            p.token()?
                        })
                    } else {
                        None
                    };
                    params.push((key, value));
                }
                Some(b',') | None => break,
                Some(_) => return Err(MalformedExtensions),
            }
        }
        offers.push(ExtensionOffer { name, params });
    }
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn skip_ows(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.at += 1;
        }
    }

    fn token(&mut self) -> Result<String, MalformedExtensions> {
        let start = self.at;
        while self.peek().is_some_and(is_tchar) {
            self.at += 1;
        }
        if self.at == start {
            return Err(MalformedExtensions);
        }
        // tchar is ASCII, so this slice is valid UTF-8.
        Ok(String::from_utf8_lossy(&self.s[start..self.at]).into_owned())
    }

    /// RFC 7230 §3.2.6 quoted-string with `\` escapes; the opening quote is
    /// at `self.at`.
    fn quoted(&mut self) -> Result<String, MalformedExtensions> {
        self.at += 1;
        let mut value = Vec::new();
        loop {
            match self.peek() {
                None => return Err(MalformedExtensions),
                Some(b'"') => {
                    self.at += 1;
                    return String::from_utf8(value).map_err(|_| MalformedExtensions);
                }
                Some(b'\\') => {
                    let escaped = *self.s.get(self.at + 1).ok_or(MalformedExtensions)?;
                    value.push(escaped);
                    self.at += 2;
                }
                Some(b) if b == b'\t' || b >= 0x20 && b != 0x7F => {
                    value.push(b);
                    self.at += 1;
                }
                Some(_) => return Err(MalformedExtensions),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer(name: &str, params: &[(&str, Option<&str>)]) -> ExtensionOffer {
        ExtensionOffer {
            name: name.into(),
            params: params
                .iter()
                .map(|(k, v)| (k.to_string(), v.map(str::to_string)))
                .collect(),
        }
    }

    #[test]
    fn browser_offer() {
        let got = parse_extensions("permessage-deflate; client_max_window_bits").unwrap();
        assert_eq!(
            got,
            vec![offer(
                "permessage-deflate",
                &[("client_max_window_bits", None)]
            )]
        );
    }

    #[test]
    fn several_offers_params_and_quotes() {
        let got = parse_extensions(
            " foo ,permessage-deflate;server_max_window_bits=10 ; client_max_window_bits=\"1\\2\", ,x-bar;a",
        )
        .unwrap();
        assert_eq!(
            got,
            vec![
                offer("foo", &[]),
                offer(
                    "permessage-deflate",
                    &[
                        ("server_max_window_bits", Some("10")),
                        ("client_max_window_bits", Some("12"))
                    ]
                ),
                offer("x-bar", &[("a", None)]),
            ]
        );
        assert_eq!(parse_extensions("").unwrap(), vec![]);
    }

    #[test]
    fn malformed_values() {
        for bad in [
            "permessage-deflate;",
            "permessage-deflate; =1",
            "permessage-deflate; a=",
            "permessage-deflate; a=\"unterminated",
            "permessage-deflate a",
            "perm@ssage",
            ";a",
            "x; a=\"\u{1}\"",
            "x; a=b c",
        ] {
            assert_eq!(parse_extensions(bad), Err(MalformedExtensions), "{bad:?}");
        }
    }
}
