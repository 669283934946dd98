//! Choosing a response's content coding from the request's
//! `Accept-Encoding` (RFC 9110 §12.5.3). Pure: the caller feeds the field's
//! lines ([`AcceptEncoding::add`]) and asks for the coding to apply
//! ([`AcceptEncoding::preferred`]); compressing is the runtime's business.
//!
//! The rules, each from the RFC unless said otherwise:
//! - `Accept-Encoding = #( codings [ weight ] )`, codings = `content-coding`
//!   / `identity` / `*`, compared case-insensitively (§8.4.1); several lines
//!   combine into one list (§5.3).
//! - `weight = OWS ";" OWS "q=" qvalue` with `qvalue = ( "0" [ "." 0*3DIGIT ]
//!   ) / ( "1" [ "." 0*3("0") ] )` (§12.4.2); `q=0` means "not acceptable".
//!   A missing weight is 1.
//! - `*` matches every coding not listed on its own (§12.5.3).
//! - `x-gzip` is `gzip` (§8.4.1.3).
//! - No `Accept-Encoding` at all: the RFC lets the server pick any coding,
//!   but clients that send nothing are mostly tools that would not decode
//!   it (curl without `--compressed`, scripts): like nginx and every Node
//!   middleware, we send the body as it is.
//!
//! Our own choices where the RFC is silent:
//! - An element that breaks the grammar (a bad qvalue, another parameter,
//!   a quoted string, a character outside a token) is ignored, the rest of
//!   the field still counts: one odd element never costs the client its
//!   compression, and never compresses what it did not ask for.
//! - A coding listed twice (`gzip;q=0, gzip`, or `gzip` and `x-gzip`) gets
//!   the lower weight: the contradiction is resolved towards sending what
//!   the client surely decodes.
//! - Between `br` and `gzip` at the same weight, `br` (smaller output for
//!   text at a comparable cost): the server's preference, which §12.5.3
//!   leaves to it.

use super::fields::{token_len, ListElements};

/// A content coding this server can apply to a response body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContentCoding {
    /// Brotli (RFC 7932).
    Br,
    /// gzip (RFC 1952).
    Gzip,
}

impl ContentCoding {
    /// The name for `Content-Encoding`: `"br"` or `"gzip"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ContentCoding::Br => "br",
            ContentCoding::Gzip => "gzip",
        }
    }
}

/// The largest qvalue, in thousandths.
const Q_MAX: u16 = 1000;

/// What a request's `Accept-Encoding` said about the codings we can apply:
/// their weights in thousandths (0 = refused), `None` where not listed.
/// Small and `Copy`: the head parser keeps one per request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AcceptEncoding {
    present: bool,
    br: Option<u16>,
    gzip: Option<u16>,
    any: Option<u16>,
}

impl AcceptEncoding {
    /// The field as one line says it.
    pub fn parse(value: &[u8]) -> Self {
        let mut accept = Self::default();
        accept.add(value);
        accept
    }

    /// Adds one more line of the field (repeated lines form one list).
    pub fn add(&mut self, value: &[u8]) {
        self.present = true;
        for element in ListElements::new(value) {
            let Some((coding, q)) = parse_element(element) else {
                continue;
            };
            let slot = if coding.eq_ignore_ascii_case(b"br") {
                &mut self.br
            } else if coding.eq_ignore_ascii_case(b"gzip") || coding.eq_ignore_ascii_case(b"x-gzip")
            {
                &mut self.gzip
            } else if coding == b"*" {
                &mut self.any
            } else {
                // identity, deflate, zstd...: nothing we would send.
                continue;
            };
            *slot = Some(slot.map_or(q, |previous| previous.min(q)));
        }
    }

    /// Whether the request had the field at all (an empty value counts:
    /// it asks for no coding).
    pub fn is_present(&self) -> bool {
        self.present
    }

    /// The weight of `coding`, in thousandths (0..=1000): as listed, else
    /// as `*` says, else 0.
    pub fn quality(&self, coding: ContentCoding) -> u16 {
        let listed = match coding {
            ContentCoding::Br => self.br,
            ContentCoding::Gzip => self.gzip,
        };
        listed.or(self.any).unwrap_or(0)
    }

    /// The coding to apply: the one of highest weight above 0, `br` on a
    /// tie; `None` when neither is acceptable (send the body as it is).
    pub fn preferred(&self) -> Option<ContentCoding> {
        let (br, gzip) = (
            self.quality(ContentCoding::Br),
            self.quality(ContentCoding::Gzip),
        );
        if br == 0 && gzip == 0 {
            None
        } else if br >= gzip {
            Some(ContentCoding::Br)
        } else {
            Some(ContentCoding::Gzip)
        }
    }
}

/// One list element: `codings [ OWS ";" OWS "q=" qvalue ]`, or `None` when
/// it breaks that grammar.
fn parse_element(element: &[u8]) -> Option<(&[u8], u16)> {
    let name = token_len(element);
    if name == 0 {
        return None;
    }
    let (coding, rest) = element.split_at(name);
    let rest = trim_ows(rest);
    if rest.is_empty() {
        return Some((coding, Q_MAX));
    }
    let rest = trim_ows(rest.strip_prefix(b";")?);
    // The parameter name is case-insensitive (§5.6.6); no whitespace
    // around `=` (§12.4.2 spells `"q="`).
    let value = match rest {
        [b'q' | b'Q', b'=', value @ ..] => value,
        _ => return None,
    };
    Some((coding, parse_qvalue(value)?))
}

/// `qvalue` in thousandths (§12.4.2), `None` if malformed.
fn parse_qvalue(value: &[u8]) -> Option<u16> {
    let (whole, fraction) = match value {
        [digit, b'.', fraction @ ..] => (*digit, fraction),
        [digit] => (*digit, &[][..]),
        _ => return None,
    };
    if fraction.len() > 3 || !fraction.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let thousandths = fraction
        .iter()
        .chain(std::iter::repeat(&b'0'))
        .take(3)
        .fold(0u16, |n, d| n * 10 + u16::from(d - b'0'));
    match whole {
        b'0' => Some(thousandths),
        b'1' if thousandths == 0 => Some(Q_MAX),
        _ => None,
    }
}

fn trim_ows(s: &[u8]) -> &[u8] {
    let start = s.iter().take_while(|&&b| b == b' ' || b == b'\t').count();
    let end = s.len()
        - s[start..]
            .iter()
            .rev()
            .take_while(|&&b| b == b' ' || b == b'\t')
            .count();
    &s[start..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use ContentCoding::{Br, Gzip};

    fn preferred(lines: &[&str]) -> Option<ContentCoding> {
        let mut accept = AcceptEncoding::default();
        for line in lines {
            accept.add(line.as_bytes());
        }
        accept.preferred()
    }

    #[test]
    fn header_forms() {
        for (value, expected) in [
            // What browsers and common clients send.
            ("gzip, deflate, br, zstd", Some(Br)),
            ("gzip, deflate, br", Some(Br)),
            ("gzip, deflate", Some(Gzip)),
            ("br;q=1.0, gzip;q=0.8, *;q=0.1", Some(Br)),
            ("gzip,deflate", Some(Gzip)),
            ("deflate, gzip;q=1.0, *;q=0.5", Some(Gzip)),
            // Spaces and tabs around elements and before the weight.
            ("  gzip  ", Some(Gzip)),
            ("\tbr\t,\tgzip", Some(Br)),
            ("gzip ; q=0.5 , br ;q=0.4", Some(Gzip)),
            ("gzip;\tq=1", Some(Gzip)),
            (" , ,gzip,, ", Some(Gzip)),
            // Case: codings and the parameter name are case-insensitive.
            ("GZIP", Some(Gzip)),
            ("Br;Q=0.9, GZip;q=0.8", Some(Br)),
            ("X-GZIP", Some(Gzip)),
            ("x-gzip", Some(Gzip)),
            // Weights decide; br wins ties.
            ("gzip;q=1, br;q=0.999", Some(Gzip)),
            ("gzip;q=0.5, br;q=0.5", Some(Br)),
            ("gzip, br", Some(Br)),
            ("br, gzip", Some(Br)),
            ("gzip;q=0.001", Some(Gzip)),
            ("gzip;q=1.000", Some(Gzip)),
            ("gzip;q=0.", None),
            ("gzip;q=1.", Some(Gzip)),
            // Exclusions.
            ("gzip;q=0", None),
            ("gzip;q=0.000, br;q=0", None),
            ("br;q=0, gzip", Some(Gzip)),
            ("gzip;q=0, br", Some(Br)),
            // `*` covers the codings not listed.
            ("*", Some(Br)),
            ("*;q=0", None),
            ("*;q=0.5, gzip", Some(Gzip)),
            ("*, br;q=0", Some(Gzip)),
            ("*, gzip;q=0", Some(Br)),
            ("*;q=0, gzip", Some(Gzip)),
            ("*;q=0, identity", None),
            // Nothing acceptable that we can send.
            ("", None),
            ("identity", None),
            ("identity;q=0", None),
            ("deflate, zstd, compress", None),
            ("identity;q=1, *;q=0", None),
            // Invalid elements are ignored, the rest counts.
            ("gzip;q=2", None),
            ("gzip;q=1.5, br", Some(Br)),
            ("gzip;q=1.001", None),
            ("gzip;q=0.0001", None),
            ("gzip;q=.5", None),
            ("gzip;q=-1", None),
            ("gzip;q=", None),
            ("gzip;q", None),
            ("gzip;", None),
            ("gzip;q=0.5;q=1", None),
            ("gzip;level=9", None),
            ("gzip; q = 0.5", None),
            ("gzip;q=\"1\"", None),
            ("gz ip", None),
            ("\"gzip\", br", Some(Br)),
            ("gzip;q=0x1, br;q=0.1", Some(Br)),
            ("br;q=0.5 garbage, gzip;q=0.1", Some(Gzip)),
            (";q=1, gzip", Some(Gzip)),
            // Duplicates: the lower weight.
            ("gzip, gzip;q=0", None),
            ("gzip;q=0, gzip", None),
            ("gzip;q=0.3, gzip;q=0.9, br;q=0.2", Some(Gzip)),
            ("gzip;q=0.3, gzip;q=0.9, br;q=0.4", Some(Br)),
            ("x-gzip;q=0, gzip", None),
            ("*, *;q=0", None),
        ] {
            assert_eq!(preferred(&[value]), expected, "{value:?}");
        }
    }

    #[test]
    fn lines_combine() {
        assert_eq!(preferred(&["gzip", "br"]), Some(Br));
        assert_eq!(preferred(&["br;q=0", "gzip"]), Some(Gzip));
        assert_eq!(preferred(&["gzip", "gzip;q=0"]), None);
        assert_eq!(preferred(&["", "gzip"]), Some(Gzip));
        assert_eq!(preferred(&[]), None);
    }

    #[test]
    fn presence_and_weights() {
        assert!(!AcceptEncoding::default().is_present());
        let empty = AcceptEncoding::parse(b"");
        assert!(empty.is_present());
        assert_eq!(empty.preferred(), None);
        let accept = AcceptEncoding::parse(b"gzip;q=0.25, *;q=0.5");
        assert_eq!(accept.quality(Gzip), 250);
        assert_eq!(accept.quality(Br), 500);
        assert_eq!(AcceptEncoding::parse(b"br").quality(Gzip), 0);
        assert_eq!(Br.as_str(), "br");
        assert_eq!(Gzip.as_str(), "gzip");
    }

    #[test]
    fn qvalues() {
        for (value, expected) in [
            ("0", Some(0)),
            ("0.", Some(0)),
            ("0.5", Some(500)),
            ("0.05", Some(50)),
            ("0.123", Some(123)),
            ("1", Some(1000)),
            ("1.0", Some(1000)),
            ("1.000", Some(1000)),
            ("1.01", None),
            ("0.1234", None),
            ("2", None),
            ("00", None),
            ("", None),
            (".1", None),
            ("0,5", None),
        ] {
            assert_eq!(parse_qvalue(value.as_bytes()), expected, "{value:?}");
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        // A small deterministic generator: every byte value in every
        // position, weights with odd digits.
        let alphabet: &[u8] = b"gzipbrxq=;,. \t\"*01-\x80\xff";
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = (seed % 24) as usize;
            let value: Vec<u8> = (0..len)
                .map(|i| alphabet[((seed >> (i % 8 * 8)) as usize + i) % alphabet.len()])
                .collect();
            let accept = AcceptEncoding::parse(&value);
            if let Some(coding) = accept.preferred() {
                assert!(accept.quality(coding) > 0, "{value:?}");
            }
        }
    }
}
