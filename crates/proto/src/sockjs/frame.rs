//! The frames a server sends (sockjs-protocol, "Protocol and framing"),
//! and how each transport wraps them.
//!
//! | frame               | meaning                                          |
//! |---------------------|--------------------------------------------------|
//! | `o`                 | the session is open; first frame of every session |
//! | `h`                 | heartbeat, so proxies keep an idle connection    |
//! | `a["m1","m2"]`      | messages, each a SockJS-quoted JSON string       |
//! | `c[3000,"Go away!"]`| the session is closed, with code and reason      |
//!
//! | transport               | prelude                        | one frame                              |
//! |-------------------------|--------------------------------|----------------------------------------|
//! | websocket               | none                           | the frame, as one text message         |
//! | xhr                     | none                           | `frame\n`                              |
//! | xhr_streaming           | 2048 × `h`, then `\n`          | `frame\n`                              |
//! | eventsource             | `\r\n`                         | `data: frame\r\n\r\n` (`%`, CR, LF, NUL percent-escaped) |
//! | htmlfile                | an HTML page, ≥ 1 KiB          | `<script>\np("frame");\n</script>\r\n` |
//! | jsonp                   | none                           | `/**/callback("frame");\r\n`           |
//!
//! Exact bytes are from the test suite (`XhrStreaming.test_transport`,
//! `EventSource.test_transport`, `HtmlFile.test_transport`,
//! `JsonPolling.test_transport` of `sockjs-protocol.py`) and sockjs-node
//! 0.3.24's `lib/trans-*.js`.
//!
//! Writers append to the caller's buffer and allocate nothing else; a
//! wrapped frame is escaped as it is written (see [`super::escape`]). A
//! streaming transport's caller counts what it appended against the
//! response limit ([`super::DEFAULT_RESPONSE_LIMIT`]).

use super::escape::{quote_into, EventSourceSink, JsStringSink, Sink};
use super::{Callback, Transport};

/// The xhr_streaming prelude: 2048 `h` bytes and a newline. Some browsers
/// hand an XHR's `responseText` to scripts only once 2 KiB have arrived
/// (`XhrStreaming.test_transport`: "The transport must first send 2KiB of
/// `h` bytes as prelude").
pub const XHR_STREAMING_PRELUDE: &[u8; 2049] = &{
    let mut prelude = [b'h'; 2049];
    prelude[2048] = b'\n';
    prelude
};

/// The EventSource prelude, a blank line: Opera dropped the first event
/// otherwise (`EventSource.test_transport`).
pub const EVENTSOURCE_PRELUDE: &[u8] = b"\r\n";

/// The htmlfile page up to the callback name. The suite compares the page
/// with surrounding whitespace stripped (`HtmlFile.head`).
const HTMLFILE_HEAD: &str = "<!doctype html>\n<html><head>\n  \
<meta http-equiv=\"X-UA-Compatible\" content=\"IE=edge\" />\n  \
<meta http-equiv=\"Content-Type\" content=\"text/html; charset=UTF-8\" />\n\
</head><body><h2>Don't panic!</h2>\n  <script>\n    \
document.domain = document.domain;\n    var c = parent.";

/// The htmlfile page after the callback name.
const HTMLFILE_TAIL: &str = ";\n    c.start();\n    function p(d) {c.message(d);};\n    \
window.onload = function() {c.stop();};\n  </script>";

/// The htmlfile page is padded with spaces to 1023 bytes plus the callback
/// name (sockjs-node's padding, computed on its template, comes to exactly
/// this), then ends with `\r\n\r\n`: Internet Explorer renders nothing of
/// a streamed page before its first kilobyte (the suite checks more than
/// 1024 bytes arrive first).
const HTMLFILE_PADDED_LEN: usize = 1023;

/// Spaces after the page; a const, so a template longer than the padded
/// length fails to compile instead of underflowing.
const HTMLFILE_PADDING: usize = HTMLFILE_PADDED_LEN - HTMLFILE_HEAD.len() - HTMLFILE_TAIL.len();

/// How one receiving transport frames what it sends. Build it once per
/// receiving request and write every frame of that response through it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Framing {
    /// The bare frame, sent as one WebSocket text message.
    WebSocket,
    /// xhr polling: `frame\n`, no prelude.
    XhrPolling,
    /// xhr_streaming: `frame\n` after [`XHR_STREAMING_PRELUDE`].
    XhrStreaming,
    /// `data: frame\r\n\r\n` after [`EVENTSOURCE_PRELUDE`].
    EventSource,
    /// A `<script>` calling `p("frame")` after the page naming the callback.
    HtmlFile(Callback),
    /// `/**/callback("frame");\r\n`. The empty comment comes first so that
    /// no attacker-chosen byte starts the response (the Rosetta Flash
    /// defence; sockjs-node and the current test suite both have it, the
    /// 0.3.3 suite predates it).
    Jsonp(Callback),
}

impl Framing {
    /// The framing of a receiving transport. `callback` is needed by (and
    /// only used for) htmlfile and jsonp; `None` for the send transports,
    /// or when htmlfile or jsonp has no callback.
    pub fn for_transport(transport: Transport, callback: Option<Callback>) -> Option<Framing> {
        match transport {
            Transport::WebSocket => Some(Framing::WebSocket),
            Transport::XhrPolling => Some(Framing::XhrPolling),
            Transport::XhrStreaming => Some(Framing::XhrStreaming),
            Transport::EventSource => Some(Framing::EventSource),
            Transport::HtmlFile => callback.map(Framing::HtmlFile),
            Transport::JsonpPolling => callback.map(Framing::Jsonp),
            Transport::XhrSend | Transport::JsonpSend => None,
        }
    }

    /// The `Content-Type` of a receiving response of this transport
    /// (`verify_content_type` of each transport's `test_transport`).
    pub fn content_type(&self) -> &'static str {
        match self {
            Framing::WebSocket
            | Framing::XhrPolling
            | Framing::XhrStreaming
            | Framing::Jsonp(_) => super::rules::CONTENT_TYPE_JAVASCRIPT,
            Framing::EventSource => super::rules::CONTENT_TYPE_EVENT_STREAM,
            Framing::HtmlFile(_) => super::rules::CONTENT_TYPE_HTML,
        }
    }

    /// Whether a response of this transport carries one frame (a poll) or
    /// many, up to the response limit.
    pub fn is_polling(&self) -> bool {
        matches!(self, Framing::XhrPolling | Framing::Jsonp(_))
    }

    /// Appends what the response starts with before any frame (nothing for
    /// websocket, xhr and jsonp).
    pub fn write_prelude(&self, out: &mut Vec<u8>) {
        match self {
            Framing::WebSocket | Framing::XhrPolling | Framing::Jsonp(_) => {}
            Framing::XhrStreaming => out.extend_from_slice(XHR_STREAMING_PRELUDE),
            Framing::EventSource => out.extend_from_slice(EVENTSOURCE_PRELUDE),
            Framing::HtmlFile(callback) => write_htmlfile_prelude(out, callback),
        }
    }

    /// Appends the open frame `o`.
    pub fn write_open(&self, out: &mut Vec<u8>) {
        self.write_frame(out, &mut |sink| sink.put("o"));
    }

    /// Appends the heartbeat frame `h`.
    pub fn write_heartbeat(&self, out: &mut Vec<u8>) {
        self.write_frame(out, &mut |sink| sink.put("h"));
    }

    /// Appends one message frame `a[...]` carrying `messages` in order,
    /// each SockJS-quoted ([`super::write_quoted`]). Batching the messages
    /// queued for a session into one frame is what sockjs-node does.
    ///
    /// ```
    /// use switchboard_proto::sockjs::Framing;
    ///
    /// let mut out = Vec::new();
    /// Framing::XhrPolling.write_messages(&mut out, ["a", "b\"c"]);
    /// assert_eq!(out, b"a[\"a\",\"b\\\"c\"]\n");
    /// ```
    pub fn write_messages<I>(&self, out: &mut Vec<u8>, messages: I)
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let mut messages = messages.into_iter();
        self.write_frame(out, &mut |sink| {
            sink.put("a[");
            for (i, message) in messages.by_ref().enumerate() {
                if i > 0 {
                    sink.put(",");
                }
                quote_into(sink, message.as_ref());
            }
            sink.put("]");
        });
    }

    /// Appends the close frame `c[code,"reason"]`.
    ///
    /// The reason gets the same quoting as messages. sockjs-node uses plain
    /// `JSON.stringify` here; the two differ only for the characters of
    /// [`super::SOCKJS_ESCAPED_RANGES`], and every JSON parser reads both
    /// the same way.
    pub fn write_close(&self, out: &mut Vec<u8>, code: u16, reason: &str) {
        self.write_frame(out, &mut |sink| {
            sink.put("c[");
            let mut digits = [0u8; 5];
            sink.put(format_u16(code, &mut digits));
            sink.put(",");
            quote_into(sink, reason);
            sink.put("]");
        });
    }

    /// Appends a frame that is already encoded (`o`, `h`, `a[...]`,
    /// `c[...]`, as the WebSocket transport sends it) in this transport's
    /// wrapping, escaped as the wrapping requires. A publish is encoded
    /// once and every HTTP receiver wraps the same bytes.
    ///
    /// ```
    /// use switchboard_proto::sockjs::Framing;
    ///
    /// let mut out = Vec::new();
    /// Framing::EventSource.write_encoded(&mut out, "a[\"100%\"]");
    /// assert_eq!(out, b"data: a[\"100%25\"]\r\n\r\n");
    /// ```
    pub fn write_encoded(&self, out: &mut Vec<u8>, frame: &str) {
        self.write_frame(out, &mut |sink| sink.put(frame));
    }

    /// Writes the transport's wrapping around the frame `body` writes.
    fn write_frame(&self, out: &mut Vec<u8>, body: &mut dyn FnMut(&mut dyn Sink)) {
        match self {
            Framing::WebSocket => body(out),
            Framing::XhrPolling | Framing::XhrStreaming => {
                body(out);
                out.push(b'\n');
            }
            Framing::EventSource => {
                out.extend_from_slice(b"data: ");
                body(&mut EventSourceSink(out));
                out.extend_from_slice(b"\r\n\r\n");
            }
            Framing::HtmlFile(_) => {
                out.extend_from_slice(b"<script>\np(\"");
                body(&mut JsStringSink(out));
                out.extend_from_slice(b"\");\n</script>\r\n");
            }
            Framing::Jsonp(callback) => {
                out.extend_from_slice(b"/**/");
                out.extend_from_slice(callback.as_str().as_bytes());
                out.extend_from_slice(b"(\"");
                body(&mut JsStringSink(out));
                out.extend_from_slice(b"\");\r\n");
            }
        }
    }
}

/// Appends the htmlfile page for `callback`: the page (sockjs-protocol,
/// "HtmlFile") naming the parent window's callback object, padded with
/// spaces to 1023 bytes plus the name, then `\r\n\r\n`.
pub fn write_htmlfile_prelude(out: &mut Vec<u8>, callback: &Callback) {
    out.extend_from_slice(HTMLFILE_HEAD.as_bytes());
    out.extend_from_slice(callback.as_str().as_bytes());
    out.extend_from_slice(HTMLFILE_TAIL.as_bytes());
    out.resize(out.len() + HTMLFILE_PADDING, b' ');
    out.extend_from_slice(b"\r\n\r\n");
}

/// Formats `n` in decimal into `buf`, returning the digits.
fn format_u16(mut n: u16, buf: &mut [u8; 5]) -> &str {
    let mut start = buf.len();
    loop {
        start -= 1;
        // `n % 10` is a single digit.
        buf[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // ASCII digits only.
    std::str::from_utf8(&buf[start..]).unwrap_or("0")
}
