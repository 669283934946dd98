//! SockJS's JSON string quoting, and the two extra escaping layers some
//! transports wrap a frame in.
//!
//! # The quoting (sockjs-protocol, "JSON Unicode Encoding")
//!
//! Every message string in an `a[...]` frame is written as a JSON string
//! (RFC 8259 §7) that additionally escapes, as `\uXXXX` with lowercase hex,
//! the code points some browsers and proxies mangle on the way:
//!
//! | range             | what                                                    |
//! |-------------------|---------------------------------------------------------|
//! | U+0000..=U+001F   | control characters (JSON requires these anyway)         |
//! | U+D800..=U+DFFF   | surrogates                                              |
//! | U+200C..=U+200F   | zero-width (non-)joiners, direction marks               |
//! | U+2028..=U+202F   | line/paragraph separators, embedding controls           |
//! | U+2060..=U+206F   | word joiner, invisible operators, deprecated formatting |
//! | U+FFF0..=U+FFFF   | specials, non-characters                                |
//!
//! This is the server's list: `escapable` in sockjs-node's `lib/utils.js`
//! and `escapable_by_server` in the protocol test suite, whose
//! `test_xhr_server_encodes` compares the escaped output byte for byte
//! (lowercase hex included). The much longer `escapable_by_client` list
//! (combining marks, CJK compatibility ideographs...) is what *clients*
//! escape before sending, because browsers normalise those characters in
//! outgoing XHR bodies; a server only has to decode it, which any JSON
//! decoder does, and sockjs-node does not escape it on the way out, so
//! neither do we.
//!
//! Input is a Rust `&str`, so a lone surrogate cannot occur. A character
//! outside the Basic Multilingual Plane is written as its escaped UTF-16
//! surrogate pair (`😀` becomes `\ud83d\ude00`): sockjs-node's regex runs
//! over UTF-16 code units, so every astral character matches the surrogate
//! range, and writing the same bytes keeps our output identical to the
//! reference server's. Other characters pass through as UTF-8. JSON's own
//! escapes use the short forms `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`,
//! exactly like `JSON.stringify`.
//!
//! # The wrapping layers
//!
//! htmlfile and jsonp deliver a frame as a JavaScript string literal
//! ([`JsStringSink`]); EventSource delivers it as a `data:` line, which must
//! not contain CR, LF or NUL ([`EventSourceSink`]). The frame writer sends
//! every piece of a frame through one of these sinks, so a wrapped frame is
//! written straight into the output without an intermediate buffer.

/// Where the pieces of a frame go. Pieces are `&str`, so an escaping sink
/// never sees half a UTF-8 sequence.
pub(crate) trait Sink {
    /// Appends `s`, escaped as this sink requires.
    fn put(&mut self, s: &str);
}

impl Sink for Vec<u8> {
    fn put(&mut self, s: &str) {
        self.extend_from_slice(s.as_bytes());
    }
}

/// The code point ranges (inclusive) the SockJS quoting writes as `\uXXXX`
/// on top of JSON's own escapes, from sockjs-node's `escapable` regex.
/// Astral characters (U+10000 and up) are written as escaped surrogate
/// pairs, see the module docs.
pub const SOCKJS_ESCAPED_RANGES: [(u32, u32); 6] = [
    (0x0000, 0x001F),
    (0xD800, 0xDFFF),
    (0x200C, 0x200F),
    (0x2028, 0x202F),
    (0x2060, 0x206F),
    (0xFFF0, 0xFFFF),
];

/// Whether the SockJS quoting escapes `c` (as `\uXXXX`, or a short JSON
/// escape for the controls that have one, or a surrogate pair for astral
/// characters). `"` and `\` are escaped too but as `\"` and `\\`; they are
/// not in this set.
pub fn is_sockjs_escaped(c: char) -> bool {
    let cp = c as u32;
    cp >= 0x1_0000
        || SOCKJS_ESCAPED_RANGES
            .iter()
            .any(|&(lo, hi)| (lo..=hi).contains(&cp))
}

/// Appends `s` to `out` as a quoted SockJS JSON string (see the module
/// docs), the form each message takes inside an `a[...]` frame.
///
/// ```
/// use switchboard_proto::sockjs::write_quoted;
///
/// let mut out = Vec::new();
/// write_quoted(&mut out, "a\"b\n\u{2028}😀");
/// assert_eq!(out, br#""a\"b\n\u2028\ud83d\ude00""#);
/// ```
pub fn write_quoted(out: &mut Vec<u8>, s: &str) {
    quote_into(out, s);
}

/// What the quoting does with a byte found at a character boundary.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ByteClass {
    /// ASCII from 0x20 up (DEL included) other than `"` and `\`: copied.
    Plain,
    /// `"`, `\` or a control character: escaped.
    EscapeAscii,
    /// Lead byte of a 2-byte sequence (U+0080..=U+07FF): never escaped.
    Lead2,
    /// Lead byte of a 3-byte sequence that can encode an escaped code
    /// point: 0xE2 (U+2000..=U+2FFF), 0xED (surrogates; cannot occur in a
    /// `str`) and 0xEF (U+F000..=U+FFFF).
    Lead3Check,
    /// Any other 3-byte lead: never escaped.
    Lead3,
    /// Lead byte of a 4-byte sequence (astral): written as a surrogate pair.
    Lead4,
}

/// The class of every byte value. Continuation bytes never start a
/// character, so their entry is unused (marked `Lead2` arbitrarily).
const CLASS: [ByteClass; 256] = {
    let mut t = [ByteClass::Lead2; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = match b {
            0x00..=0x1F | 0x22 | 0x5C => ByteClass::EscapeAscii,
            0x20..=0x7F => ByteClass::Plain,
            0xE2 | 0xED | 0xEF => ByteClass::Lead3Check,
            0xE0..=0xEF => ByteClass::Lead3,
            0xF0..=0xFF => ByteClass::Lead4,
            _ => ByteClass::Lead2,
        };
        b += 1;
    }
    t
};

/// The quoting of [`write_quoted`], into any sink. Copies runs of bytes
/// that need nothing in one `put`, so ASCII text without quotes costs one
/// table lookup per byte and a single copy.
pub(crate) fn quote_into<S: Sink + ?Sized>(sink: &mut S, s: &str) {
    sink.put("\"");
    let bytes = s.as_bytes();
    let mut run = 0; // start of the pending verbatim run
    let mut i = 0;
    while i < bytes.len() {
        let (len, escape) = match CLASS[usize::from(bytes[i])] {
            ByteClass::Plain => (1, false),
            ByteClass::EscapeAscii => (1, true),
            ByteClass::Lead2 => (2, false),
            ByteClass::Lead3 => (3, false),
            ByteClass::Lead3Check => (3, true),
            ByteClass::Lead4 => (4, true),
        };
        // `i` is always at a character boundary and `len` is that
        // character's length, so slicing at `i..i + len` cannot fail.
        let c = if escape { s[i..].chars().next() } else { None };
        if let Some(c) = c.filter(|&c| len == 1 || is_sockjs_escaped(c)) {
            sink.put(&s[run..i]);
            put_char_escape(sink, c);
            run = i + len;
        }
        i += len;
    }
    sink.put(&s[run..]);
    sink.put("\"");
}

/// Writes the JSON escape for `c`: a short form where JSON has one,
/// otherwise `\uXXXX` (a surrogate pair for astral characters).
fn put_char_escape<S: Sink + ?Sized>(sink: &mut S, c: char) {
    let short = match c {
        '"' => "\\\"",
        '\\' => "\\\\",
        '\u{8}' => "\\b",
        '\u{c}' => "\\f",
        '\n' => "\\n",
        '\r' => "\\r",
        '\t' => "\\t",
        _ => {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                put_u_escape(sink, *unit);
            }
            return;
        }
    };
    sink.put(short);
}

/// Writes `\u` and four lowercase hex digits, as sockjs-node and
/// `JSON.stringify` do.
fn put_u_escape<S: Sink + ?Sized>(sink: &mut S, unit: u16) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digits = [
        b'\\',
        b'u',
        HEX[usize::from(unit >> 12)],
        HEX[usize::from((unit >> 8) & 0xF)],
        HEX[usize::from((unit >> 4) & 0xF)],
        HEX[usize::from(unit & 0xF)],
    ];
    // Six ASCII bytes: always valid UTF-8.
    if let Ok(text) = std::str::from_utf8(&digits) {
        sink.put(text);
    }
}

/// Escapes what it receives as the body of a JavaScript string literal in
/// double quotes, for the htmlfile (`p("...")`) and jsonp (`cb("...")`)
/// wrappers.
///
/// sockjs-node uses `JSON.stringify(frame)`; this writes the same bytes for
/// every frame except that it also escapes `<` (as `\u003c`) and U+2028,
/// U+2029. `<` keeps a message containing `</script>` or `<!--` from ending
/// or confusing the htmlfile page's `<script>` element (an injection hole
/// otherwise); the two separators end a string literal in JavaScript before
/// ES2019. All three decode to the same string in the browser.
pub(crate) struct JsStringSink<'a>(pub(crate) &'a mut Vec<u8>);

impl Sink for JsStringSink<'_> {
    fn put(&mut self, s: &str) {
        let mut run = 0;
        for (i, c) in s.char_indices() {
            let escaped = match c {
                '"' | '\\' | '\u{0}'..='\u{1f}' => {
                    self.0.extend_from_slice(&s.as_bytes()[run..i]);
                    put_char_escape(self.0, c);
                    run = i + 1;
                    continue;
                }
                '<' => "\\u003c",
                '\u{2028}' => "\\u2028",
                '\u{2029}' => "\\u2029",
                _ => continue,
            };
            self.0.extend_from_slice(&s.as_bytes()[run..i]);
            self.0.extend_from_slice(escaped.as_bytes());
            run = i + c.len_utf8();
        }
        self.0.extend_from_slice(&s.as_bytes()[run..]);
    }
}

/// Escapes what it receives for an EventSource `data:` line: `%`, CR, LF
/// and NUL become `%25`, `%0D`, `%0A`, `%00`.
///
/// A `data:` field ends at CR or LF (HTML Living Standard, "Parsing an
/// event stream"), so those cannot pass raw. sockjs-node percent-escapes
/// them with JavaScript's `escape()` (uppercase hex), and sockjs-client runs
/// `decodeURI` over each event, which is why `%` must be escaped too: a
/// message containing `100%` would otherwise make `decodeURI` throw. SockJS
/// quoting already escapes CR, LF and NUL inside messages, so in practice
/// only `%` is ever rewritten.
pub(crate) struct EventSourceSink<'a>(pub(crate) &'a mut Vec<u8>);

impl Sink for EventSourceSink<'_> {
    fn put(&mut self, s: &str) {
        let bytes = s.as_bytes();
        let mut run = 0;
        for (i, &b) in bytes.iter().enumerate() {
            let escaped: &[u8] = match b {
                b'%' => b"%25",
                b'\r' => b"%0D",
                b'\n' => b"%0A",
                0 => b"%00",
                _ => continue,
            };
            self.0.extend_from_slice(&bytes[run..i]);
            self.0.extend_from_slice(escaped);
            run = i + 1;
        }
        self.0.extend_from_slice(&bytes[run..]);
    }
}
