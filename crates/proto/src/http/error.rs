//! The one error type of the handshake layer. Every variant carries a stable
//! code, the HTTP status to answer with and the response headers that status
//! requires.

use std::fmt;

use crate::ws::extensions::MalformedExtensions;

/// Why a request could not be upgraded. Answer with
/// [`HandshakeError::response`] and close the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandshakeError {
    /// The request head is not valid HTTP/1.x, or a header required by HTTP
    /// itself is missing or malformed; carries a short detail.
    BadRequest(&'static str),
    /// The head is larger than `max_head_bytes` or has more than
    /// `max_headers` headers.
    HeadersTooLarge,
    /// The request is HTTP/1.0; WebSocket needs HTTP/1.1 or later.
    HttpVersion,
    /// The method is not GET.
    BadMethod,
    /// The request does not ask to upgrade to websocket (`Upgrade:
    /// websocket` plus `Connection: upgrade`).
    BadUpgrade,
    /// `Sec-WebSocket-Key` is missing, repeated, or not 16 bytes in base64.
    BadKey,
    /// `Sec-WebSocket-Version` is missing or not 13.
    BadVersion,
    /// `Sec-WebSocket-Protocol` is not a list of unique tokens.
    BadProtocol,
    /// `Sec-WebSocket-Extensions` does not follow RFC 6455 §9.1.
    BadExtensions,
}

/// Every handshake error code: `(code, HTTP status, description)`. Kept in
/// sync with `docs/errors.md` by a workspace test and with the enum below.
pub const ALL_ERROR_CODES: &[(&str, u16, &str)] = &[
    (
        "ERR_HTTP_BAD_REQUEST",
        400,
        "The request head was not valid HTTP/1.1.",
    ),
    (
        "ERR_HTTP_HEADERS_TOO_LARGE",
        431,
        "The request head exceeded the size or header-count limit.",
    ),
    (
        "ERR_HTTP_VERSION_NOT_SUPPORTED",
        505,
        "The request used HTTP/1.0; WebSocket requires HTTP/1.1.",
    ),
    (
        "ERR_WS_BAD_METHOD",
        405,
        "The upgrade request did not use GET.",
    ),
    (
        "ERR_WS_BAD_UPGRADE",
        426,
        "The request did not ask to upgrade to websocket.",
    ),
    (
        "ERR_WS_BAD_KEY",
        400,
        "Sec-WebSocket-Key was missing, repeated or not 16 bytes of base64.",
    ),
    (
        "ERR_WS_BAD_VERSION",
        426,
        "Sec-WebSocket-Version was missing or not 13.",
    ),
    (
        "ERR_WS_BAD_PROTOCOL",
        400,
        "Sec-WebSocket-Protocol was not a list of unique tokens.",
    ),
    (
        "ERR_WS_BAD_EXTENSIONS",
        400,
        "Sec-WebSocket-Extensions was malformed.",
    ),
];

impl HandshakeError {
    /// Position of this variant's row in [`ALL_ERROR_CODES`].
    fn index(&self) -> usize {
        match self {
            HandshakeError::BadRequest(_) => 0,
            HandshakeError::HeadersTooLarge => 1,
            HandshakeError::HttpVersion => 2,
            HandshakeError::BadMethod => 3,
            HandshakeError::BadUpgrade => 4,
            HandshakeError::BadKey => 5,
            HandshakeError::BadVersion => 6,
            HandshakeError::BadProtocol => 7,
            HandshakeError::BadExtensions => 8,
        }
    }

    /// The stable string code, e.g. `ERR_WS_BAD_KEY`.
    pub fn code(&self) -> &'static str {
        ALL_ERROR_CODES[self.index()].0
    }

    /// The HTTP status to answer with.
    pub fn status(&self) -> u16 {
        ALL_ERROR_CODES[self.index()].1
    }

    /// Headers the status requires (RFC 7231 §6.5.5, §6.5.15; RFC 6455
    /// §4.2.2): `Allow` for 405, `Upgrade` for 426, and the supported
    /// version for a version mismatch.
    pub fn extra_headers(&self) -> &'static [(&'static str, &'static str)] {
        match self {
            HandshakeError::BadMethod => &[("Allow", "GET")],
            // A 426 must name the protocol to upgrade to, and `Upgrade` is
            // only meaningful when listed in `Connection` (RFC 7230 §6.7).
            HandshakeError::BadUpgrade => &[("Upgrade", "websocket"), ("Connection", "Upgrade")],
            HandshakeError::BadVersion => &[
                ("Sec-WebSocket-Version", "13"),
                ("Upgrade", "websocket"),
                ("Connection", "Upgrade"),
            ],
            _ => &[],
        }
    }

    /// The complete HTTP response for this error (see
    /// [`crate::http::error_response`]); the body is the human reason.
    pub fn response(&self) -> Vec<u8> {
        super::error_response(self.status(), &self.to_string(), self.extra_headers())
    }
}

impl fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandshakeError::BadRequest(detail) => write!(f, "Bad request: {detail}"),
            other => f.write_str(ALL_ERROR_CODES[other.index()].2.trim_end_matches('.')),
        }
    }
}

impl std::error::Error for HandshakeError {}

impl From<MalformedExtensions> for HandshakeError {
    fn from(_: MalformedExtensions) -> Self {
        HandshakeError::BadExtensions
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn table_and_enum_agree() {
        let all = [
            HandshakeError::BadRequest("x"),
            HandshakeError::HeadersTooLarge,
            HandshakeError::HttpVersion,
            HandshakeError::BadMethod,
            HandshakeError::BadUpgrade,
            HandshakeError::BadKey,
            HandshakeError::BadVersion,
            HandshakeError::BadProtocol,
            HandshakeError::BadExtensions,
        ];
        assert_eq!(all.len(), ALL_ERROR_CODES.len());
        let codes: HashSet<_> = all.iter().map(|e| e.code()).collect();
        assert_eq!(codes.len(), all.len());
        for e in all {
            assert!((400..600).contains(&e.status()), "{e:?}");
            assert!(e.code().starts_with("ERR_"), "{e:?}");
        }
        // No code is shared with the WebSocket layer.
        for (code, _, _) in crate::ws::ALL_ERROR_CODES {
            assert!(!codes.contains(code), "{code}");
        }
        assert_eq!(
            crate::all_error_codes().count(),
            crate::ws::ALL_ERROR_CODES.len()
                + all.len()
                + crate::rpc::ALL_ERROR_CODES.len()
                + crate::http1::ALL_ERROR_CODES.len()
        );
    }

    #[test]
    fn response_carries_required_headers() {
        let r = String::from_utf8(HandshakeError::BadMethod.response()).unwrap();
        assert!(r.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"), "{r}");
        assert!(r.contains("\r\nAllow: GET\r\n"), "{r}");
        let r = String::from_utf8(HandshakeError::BadVersion.response()).unwrap();
        assert!(r.starts_with("HTTP/1.1 426 Upgrade Required\r\n"), "{r}");
        assert!(r.contains("\r\nSec-WebSocket-Version: 13\r\n"), "{r}");
        assert!(r.contains("\r\nConnection: Upgrade, close\r\n"), "{r}");
        let r = String::from_utf8(HandshakeError::BadRequest("missing Host").response()).unwrap();
        assert!(r.ends_with("\r\n\r\nBad request: missing Host"), "{r}");
    }
}
