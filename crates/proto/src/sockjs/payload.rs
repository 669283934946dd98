//! What clients send: the bodies of `xhr_send` and `jsonp_send` and the
//! messages of the WebSocket transport (sockjs-protocol, "Framing accepted
//! by the server": no framing, only JSON-encoded messages).
//!
//! | transport    | payload                                              | on error                 |
//! |--------------|------------------------------------------------------|--------------------------|
//! | `xhr_send`   | a JSON array of strings                              | 500 with the error text  |
//! | `jsonp_send` | a form with the array in `d`, or the raw array       | 500 with the error text  |
//! | `websocket`  | an array, one JSON string, or nothing (ignored)      | close 3000 "Broken framing." |
//!
//! Two error texts exist and clients and the test suite check them
//! verbatim (`XhrPolling.test_invalid_json`, `JsonPolling.test_invalid_json`):
//! "Payload expected." when there is no payload at all, "Broken JSON
//! encoding." when there is one that does not parse.
//!
//! sockjs-node, being JavaScript, also accepts well-formed JSON that is
//! not an array of strings: a top-level `null`, number or object is
//! answered with "Payload expected." and non-string array elements are
//! passed to the application as they are. This codec delivers strings
//! only, so it refuses all of these with "Broken JSON encoding." (the
//! status, 500, is the same); sockjs-client never sends them.

use std::fmt;

use super::form;
use super::json::{parse_array, parse_single, Messages};

/// Why a client payload was refused. Both are answered with status 500 and
/// [`PayloadError::message`] as a `text/plain` body on the HTTP transports;
/// the WebSocket transport closes with [`super::close::BROKEN_FRAMING`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadError {
    /// The body (or the `d` field of a form) was empty or absent.
    PayloadExpected,
    /// The payload was not a JSON array of strings, or not UTF-8.
    BrokenJson,
}

impl PayloadError {
    /// The HTTP status to answer with: 500, as sockjs-node and the test
    /// suite have it.
    pub fn status(self) -> u16 {
        500
    }

    /// The exact response body the protocol uses.
    pub fn message(self) -> &'static str {
        match self {
            PayloadError::PayloadExpected => "Payload expected.",
            PayloadError::BrokenJson => "Broken JSON encoding.",
        }
    }
}

impl fmt::Display for PayloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for PayloadError {}

/// Parses the body of an `xhr_send` request: a JSON array of strings.
///
/// Every content type is accepted; sockjs-node only refuses types that no
/// client sends, and the test suite (`XhrPolling.test_content_types`)
/// sends the same body under eight different ones. An empty body is
/// [`PayloadError::PayloadExpected`]; `[]` is valid and carries no message
/// (clients may send it as a keep-alive).
///
/// ```
/// use switchboard_proto::sockjs::{parse_xhr_send, PayloadError};
///
/// let messages: Vec<_> = parse_xhr_send(br#"["a", "b\u00e9"]"#).unwrap().collect();
/// assert_eq!(messages, ["a", "bé"]);
/// assert_eq!(parse_xhr_send(b"").unwrap_err(), PayloadError::PayloadExpected);
/// assert_eq!(parse_xhr_send(b"[\"x").unwrap_err().message(), "Broken JSON encoding.");
/// ```
pub fn parse_xhr_send(body: &[u8]) -> Result<Messages<'_>, PayloadError> {
    if body.is_empty() {
        return Err(PayloadError::PayloadExpected);
    }
    array(body)
}

/// Parses one text message received on the SockJS WebSocket transport
/// (`/{server}/{session}/websocket`, not the raw `/websocket` endpoint,
/// whose messages are the application's own).
///
/// An empty message carries nothing and must be ignored
/// (`WebsocketHixie76.test_empty_frame`). A message starting with `[` is an
/// array of strings (what sockjs-client sends); anything else must be one
/// JSON string, as sockjs-node accepts. On error the server closes the
/// connection ([`super::close::BROKEN_FRAMING`]); the suite's
/// `test_broken_json` expects exactly that.
pub fn parse_websocket_message(text: &str) -> Result<Messages<'_>, PayloadError> {
    if text.is_empty() {
        return Ok(Messages::empty());
    }
    let starts_array = text
        .bytes()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        == Some(b'[');
    let parsed = if starts_array {
        parse_array(text)
    } else {
        parse_single(text)
    };
    parsed.ok_or(PayloadError::BrokenJson)
}

/// Parses the body of a `jsonp_send` request.
///
/// With `Content-Type: application/x-www-form-urlencoded` (what
/// sockjs-client's hidden form posts) the array is the form's `d` field,
/// percent-decoded into `scratch` (cleared first; keep one per connection
/// to reuse its capacity). Any other or no content type means the body is
/// the raw array (`JsonPolling.test_content_types` posts it as
/// `text/plain`). An empty body, a form without `d` or with an empty `d`
/// is [`PayloadError::PayloadExpected`] (`JsonPolling.test_invalid_json`
/// sends `""`, `"d="` and `"p=p"`).
///
/// ```
/// use switchboard_proto::sockjs::parse_jsonp_send;
///
/// let mut scratch = Vec::new();
/// let form = Some("application/x-www-form-urlencoded");
/// let messages: Vec<_> = parse_jsonp_send(form, b"d=%5B%22x+y%22%5D", &mut scratch)
///     .unwrap()
///     .collect();
/// assert_eq!(messages, ["x y"]);
/// ```
pub fn parse_jsonp_send<'a>(
    content_type: Option<&str>,
    body: &'a [u8],
    scratch: &'a mut Vec<u8>,
) -> Result<Messages<'a>, PayloadError> {
    if body.is_empty() {
        return Err(PayloadError::PayloadExpected);
    }
    if !content_type.is_some_and(is_form) {
        return array(body);
    }
    scratch.clear();
    let raw = form::field(body, b"d").ok_or(PayloadError::PayloadExpected)?;
    scratch.extend(form::decoded(raw));
    if scratch.is_empty() {
        return Err(PayloadError::PayloadExpected);
    }
    let decoded: &'a Vec<u8> = scratch;
    array(decoded)
}

/// Whether a `Content-Type` value names a urlencoded form. Media types are
/// case-insensitive and may carry parameters (RFC 9110 §8.3.1).
fn is_form(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case("application/x-www-form-urlencoded")
}

/// A JSON array of strings, which must be UTF-8 (RFC 8259 §8.1).
fn array(bytes: &[u8]) -> Result<Messages<'_>, PayloadError> {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(parse_array)
        .ok_or(PayloadError::BrokenJson)
}
