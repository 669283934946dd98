//! A strict parser for the only JSON SockJS clients send: an array of
//! strings (or, on the WebSocket transport, one string).
//!
//! The grammar is RFC 8259's, restricted: insignificant whitespace (space,
//! tab, LF, CR; §2) around the array and its elements, strings with every
//! escape of §7 (`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\uXXXX`
//! in either case, surrogate pairs combined into one character). Refused:
//! any other value (numbers, objects, literals, nested arrays), raw control
//! characters inside a string, unknown escapes, short `\u` escapes, a
//! trailing comma, anything after the closing bracket.
//!
//! A `\u` escape of a lone surrogate is valid JSON (§8.2 leaves its meaning
//! to the receiver) and is what sockjs-client sends when a JavaScript
//! string holds half a pair, typically one cut in the middle of an emoji.
//! A Rust string cannot hold it, and refusing it would fail the whole send
//! and end the session, so it decodes to U+FFFD, as `TextDecoder` and
//! `String.prototype.toWellFormed` do in the browser.
//!
//! Parsing is all-or-nothing, like sockjs-node's `JSON.parse`: the whole
//! text is validated first, with no allocation, and only then are messages
//! handed out, by [`Messages`], which borrows every string that has no
//! escapes and allocates only for the ones that do.

use std::borrow::Cow;
use std::iter::FusedIterator;

/// The messages of one validated client payload, in order.
///
/// Each item borrows from the payload when the JSON string had no escape,
/// and is decoded into a new `String` otherwise.
#[derive(Debug, Clone)]
pub struct Messages<'a> {
    /// The validated JSON text.
    src: &'a str,
    /// Offset of the next string's opening quote.
    pos: usize,
    /// Strings not yet returned.
    remaining: usize,
}

impl<'a> Messages<'a> {
    /// No messages: an empty WebSocket message or an empty array.
    pub fn empty() -> Self {
        Messages {
            src: "",
            pos: 0,
            remaining: 0,
        }
    }
}

impl<'a> Iterator for Messages<'a> {
    type Item = Cow<'a, str>;

    fn next(&mut self) -> Option<Cow<'a, str>> {
        if self.remaining == 0 {
            return None;
        }
        let bytes = self.src.as_bytes();
        // The text was validated when `self` was built, so the scan cannot
        // fail; if it somehow did, ending the iteration is the safe answer.
        let Some(span) = scan_string(bytes, self.pos) else {
            debug_assert!(false, "validated JSON failed to rescan");
            self.remaining = 0;
            return None;
        };
        let inner = &self.src[self.pos + 1..span.end - 1];
        let value = if span.escaped {
            Cow::Owned(decode_escaped(inner))
        } else {
            Cow::Borrowed(inner)
        };
        self.remaining -= 1;
        // Step over the separator to the next opening quote (or the end).
        let mut i = skip_ws(bytes, span.end);
        if bytes.get(i) == Some(&b',') {
            i = skip_ws(bytes, i + 1);
        }
        self.pos = i;
        Some(value)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for Messages<'_> {}
impl FusedIterator for Messages<'_> {}

/// Validates `src` as a JSON array of strings.
pub(crate) fn parse_array(src: &str) -> Option<Messages<'_>> {
    let bytes = src.as_bytes();
    let mut i = skip_ws(bytes, 0);
    if bytes.get(i) != Some(&b'[') {
        return None;
    }
    i = skip_ws(bytes, i + 1);
    let first = i;
    let mut count = 0;
    if bytes.get(i) == Some(&b']') {
        i += 1;
    } else {
        loop {
            i = skip_ws(bytes, scan_string(bytes, i)?.end);
            count += 1;
            match bytes.get(i) {
                Some(b',') => i = skip_ws(bytes, i + 1),
                Some(b']') => {
                    i += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    (skip_ws(bytes, i) == bytes.len()).then_some(Messages {
        src,
        pos: first,
        remaining: count,
    })
}

/// Validates `src` as one JSON string.
pub(crate) fn parse_single(src: &str) -> Option<Messages<'_>> {
    let bytes = src.as_bytes();
    let open = skip_ws(bytes, 0);
    let end = scan_string(bytes, open)?.end;
    (skip_ws(bytes, end) == bytes.len()).then_some(Messages {
        src,
        pos: open,
        remaining: 1,
    })
}

/// The first offset at or after `i` that is not JSON whitespace.
fn skip_ws(bytes: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(i) {
        i += 1;
    }
    i
}

/// Where a valid JSON string ends.
struct StringSpan {
    /// Offset just past the closing quote.
    end: usize,
    /// Whether the string contains a backslash escape.
    escaped: bool,
}

/// Validates the JSON string whose opening quote should be at `open`.
/// `bytes` comes from a `str`, so multi-byte characters are already valid
/// UTF-8 and are skipped like any byte at or above 0x20.
fn scan_string(bytes: &[u8], open: usize) -> Option<StringSpan> {
    if bytes.get(open) != Some(&b'"') {
        return None;
    }
    let mut escaped = false;
    let mut i = open + 1;
    loop {
        match *bytes.get(i)? {
            b'"' => {
                return Some(StringSpan {
                    end: i + 1,
                    escaped,
                })
            }
            b'\\' => {
                escaped = true;
                i += match *bytes.get(i + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => 2,
                    b'u' if bytes.get(i + 2..i + 6)?.iter().all(u8::is_ascii_hexdigit) => 6,
                    _ => return None,
                };
            }
            // RFC 8259 §7: control characters must be escaped.
            0x00..=0x1F => return None,
            _ => i += 1,
        }
    }
}

/// Decodes the inside of a validated JSON string that has escapes.
fn decode_escaped(inner: &str) -> String {
    let mut out = String::with_capacity(inner.len());
    let mut rest = inner;
    while let Some(backslash) = rest.find('\\') {
        out.push_str(&rest[..backslash]);
        let escape = &rest[backslash + 1..];
        let (c, used) = match escape.as_bytes().first() {
            Some(b'b') => ('\u{8}', 1),
            Some(b'f') => ('\u{c}', 1),
            Some(b'n') => ('\n', 1),
            Some(b'r') => ('\r', 1),
            Some(b't') => ('\t', 1),
            Some(b'u') => decode_u_escape(escape),
            // `"`, `\` and `/` stand for themselves.
            Some(&b) => (char::from(b), 1),
            None => ('\u{FFFD}', 0),
        };
        out.push(c);
        rest = &escape[used..];
    }
    out.push_str(rest);
    out
}

/// Decodes `uXXXX` (and a following `\uXXXX` low surrogate when `XXXX` is a
/// high one) at the start of `escape`, returning the character and how many
/// bytes of `escape` it used. Lone surrogates become U+FFFD.
fn decode_u_escape(escape: &str) -> (char, usize) {
    let unit = |at: usize| {
        escape
            .get(at..at + 4)
            .and_then(|hex| u16::from_str_radix(hex, 16).ok())
    };
    let Some(first) = unit(1) else {
        return ('\u{FFFD}', 1);
    };
    if (0xD800..0xDC00).contains(&first) && escape.get(5..7) == Some("\\u") {
        if let Some(second) = unit(7).filter(|u| (0xDC00..0xE000).contains(u)) {
            let cp = 0x1_0000 + ((u32::from(first) - 0xD800) << 10) + (u32::from(second) - 0xDC00);
            return (char::from_u32(cp).unwrap_or('\u{FFFD}'), 11);
        }
    }
    (char::from_u32(u32::from(first)).unwrap_or('\u{FFFD}'), 5)
}
