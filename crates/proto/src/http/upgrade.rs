//! Validating a WebSocket opening handshake (RFC 6455 §4.2.1) and computing
//! `Sec-WebSocket-Accept` (§4.2.2).

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use sha1::{Digest, Sha1};

use super::error::HandshakeError;
use super::request::RequestHead;
use crate::ws::extensions::is_token;

/// The GUID RFC 6455 §1.3 appends to the key before hashing.
const WEBSOCKET_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// What a valid upgrade request asks for. Choosing a subprotocol and
/// negotiating extensions is left to the caller (see
/// [`crate::ws::deflate::negotiate`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpgradeRequest {
    /// `Sec-WebSocket-Key`, validated; pass it to [`accept_key`].
    pub key: String,
    /// Subprotocols offered in `Sec-WebSocket-Protocol`, in preference order.
    pub protocols: Vec<String>,
    /// Raw `Sec-WebSocket-Extensions` values, one per header line.
    pub extensions: Vec<String>,
    /// `Origin`, if sent (browsers always send it; check it against an
    /// allow-list to stop cross-site WebSocket hijacking).
    pub origin: Option<String>,
    /// `Host`.
    pub host: String,
}

/// `Sec-WebSocket-Accept` for a key: base64(SHA-1(key + GUID)).
pub fn accept_key(key: &str) -> String {
    let mut sha = Sha1::new();
    sha.update(key.as_bytes());
    sha.update(WEBSOCKET_GUID.as_bytes());
    BASE64.encode(sha.finalize())
}

/// Checks that `head` is a WebSocket upgrade request we can accept.
///
/// Checks run in the order that gives the most useful answer: first what
/// makes the request not an upgrade at all (method, version, `Upgrade` and
/// `Connection`), then the WebSocket-specific headers.
pub fn validate_upgrade(head: &RequestHead) -> Result<UpgradeRequest, HandshakeError> {
    if head.method != "GET" {
        return Err(HandshakeError::BadMethod);
    }
    if head.version < 1 {
        return Err(HandshakeError::HttpVersion);
    }
    // RFC 7230 §5.4: exactly one Host header in HTTP/1.1.
    let mut hosts = head.headers_all("host");
    let host = match (hosts.next(), hosts.next()) {
        (Some(host), None) => host.to_owned(),
        _ => {
            return Err(HandshakeError::BadRequest(
                "missing or repeated Host header",
            ))
        }
    };
    if !list_contains(head.headers_all("upgrade"), "websocket")
        || !list_contains(head.headers_all("connection"), "upgrade")
    {
        return Err(HandshakeError::BadUpgrade);
    }
    let mut versions = head.headers_all("sec-websocket-version");
    if (versions.next(), versions.next()) != (Some("13"), None) {
        return Err(HandshakeError::BadVersion);
    }
    let mut keys = head.headers_all("sec-websocket-key");
    let key = match (keys.next(), keys.next()) {
        (Some(key), None) if is_valid_key(key) => key.to_owned(),
        _ => return Err(HandshakeError::BadKey),
    };
    let mut protocols: Vec<String> = Vec::new();
    for item in head
        .headers_all("sec-websocket-protocol")
        .flat_map(list_items)
    {
        // RFC 6455 §4.1: tokens, and all unique.
        if !is_token(item) || protocols.iter().any(|p| p == item) {
            return Err(HandshakeError::BadProtocol);
        }
        protocols.push(item.to_owned());
    }
    Ok(UpgradeRequest {
        key,
        protocols,
        extensions: head
            .headers_all("sec-websocket-extensions")
            .map(str::to_owned)
            .collect(),
        origin: head.header("origin").map(str::to_owned),
        host,
    })
}

/// A key is the base64 encoding of 16 bytes (RFC 6455 §4.1), which is always
/// 24 characters ending in `==`.
fn is_valid_key(key: &str) -> bool {
    key.len() == 24 && BASE64.decode(key).is_ok_and(|raw| raw.len() == 16)
}

/// Elements of a comma-separated header list, trimmed, empty ones skipped
/// (RFC 7230 §7).
fn list_items(value: &str) -> impl Iterator<Item = &str> {
    value
        .split(',')
        .map(|item| item.trim_matches([' ', '\t']))
        .filter(|item| !item.is_empty())
}

/// Whether any of the header values lists `token` (ASCII case-insensitive).
fn list_contains<'a>(values: impl Iterator<Item = &'a str>, token: &str) -> bool {
    values
        .flat_map(list_items)
        .any(|item| item.eq_ignore_ascii_case(token))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::{parse_request_head, HeadLimits};

    const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

    fn head(lines: &[&str]) -> RequestHead {
        let mut raw = String::new();
        for line in lines {
            raw.push_str(line);
            raw.push_str("\r\n");
        }
        raw.push_str("\r\n");
        parse_request_head(raw.as_bytes(), &HeadLimits::default())
            .unwrap()
            .unwrap()
            .0
    }

    fn valid_lines() -> Vec<&'static str> {
        vec![
            "GET /chat HTTP/1.1",
            "Host: server.example.com",
            "Upgrade: websocket",
            "Connection: Upgrade",
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
            "Origin: http://example.com",
            "Sec-WebSocket-Protocol: chat, superchat",
            "Sec-WebSocket-Version: 13",
        ]
    }

    /// The valid request with the line starting with `prefix` replaced (or
    /// removed when `replacement` is empty).
    fn with(prefix: &str, replacement: &[&'static str]) -> RequestHead {
        let mut lines = valid_lines();
        let at = lines.iter().position(|l| l.starts_with(prefix)).unwrap();
        lines.splice(at..=at, replacement.iter().copied());
        head(&lines)
    }

    #[test]
    fn rfc6455_accept_key() {
        // RFC 6455 §1.3 and §4.2.2 (checked independently with Python hashlib).
        assert_eq!(accept_key(KEY), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    }

    #[test]
    fn accepts_the_rfc_example() {
        let up = validate_upgrade(&head(&valid_lines())).unwrap();
        assert_eq!(up.key, KEY);
        assert_eq!(up.protocols, ["chat", "superchat"]);
        assert_eq!(up.origin.as_deref(), Some("http://example.com"));
        assert_eq!(up.host, "server.example.com");
        assert!(up.extensions.is_empty());
    }

    #[test]
    fn tolerant_where_the_rfcs_say_so() {
        let up = validate_upgrade(&with(
            "Connection",
            &[
                "Connection: keep-alive, UPGRADE",
                "Sec-WebSocket-Extensions: permessage-deflate",
            ],
        ))
        .unwrap();
        assert_eq!(up.extensions, ["permessage-deflate"]);
        validate_upgrade(&with("Upgrade", &["Upgrade: WebSocket"])).unwrap();
        validate_upgrade(&with(
            "Connection",
            &["Connection: keep-alive", "Connection: Upgrade"],
        ))
        .unwrap();
        let up = validate_upgrade(&with(
            "Sec-WebSocket-Protocol",
            &["Sec-WebSocket-Protocol: a,, b", "Sec-WebSocket-Protocol: c"],
        ))
        .unwrap();
        assert_eq!(up.protocols, ["a", "b", "c"]);
        let up = validate_upgrade(&with("Sec-WebSocket-Protocol", &[])).unwrap();
        assert!(up.protocols.is_empty());
        let up = validate_upgrade(&with("Origin", &[])).unwrap();
        assert_eq!(up.origin, None);
    }

    #[test]
    fn every_rejection_with_its_status() {
        let cases: Vec<(RequestHead, HandshakeError, u16)> = vec![
            (
                with("GET", &["POST /chat HTTP/1.1"]),
                HandshakeError::BadMethod,
                405,
            ),
            (
                with("GET", &["get /chat HTTP/1.1"]),
                HandshakeError::BadMethod,
                405,
            ),
            (
                with("GET", &["GET /chat HTTP/1.0"]),
                HandshakeError::HttpVersion,
                505,
            ),
            (
                with("Host", &[]),
                HandshakeError::BadRequest("missing or repeated Host header"),
                400,
            ),
            (
                with("Host", &["Host: a", "Host: b"]),
                HandshakeError::BadRequest("missing or repeated Host header"),
                400,
            ),
            (with("Upgrade", &[]), HandshakeError::BadUpgrade, 426),
            (
                with("Upgrade", &["Upgrade: h2c"]),
                HandshakeError::BadUpgrade,
                426,
            ),
            (
                with("Upgrade", &["Upgrade: websocketx"]),
                HandshakeError::BadUpgrade,
                426,
            ),
            (with("Connection", &[]), HandshakeError::BadUpgrade, 426),
            (
                with("Connection", &["Connection: keep-alive"]),
                HandshakeError::BadUpgrade,
                426,
            ),
            (
                with("Connection", &["Connection: upgraded"]),
                HandshakeError::BadUpgrade,
                426,
            ),
            (
                with("Sec-WebSocket-Version", &[]),
                HandshakeError::BadVersion,
                426,
            ),
            (
                with("Sec-WebSocket-Version", &["Sec-WebSocket-Version: 8"]),
                HandshakeError::BadVersion,
                426,
            ),
            (
                with(
                    "Sec-WebSocket-Version",
                    &["Sec-WebSocket-Version: 13", "Sec-WebSocket-Version: 13"],
                ),
                HandshakeError::BadVersion,
                426,
            ),
            (with("Sec-WebSocket-Key", &[]), HandshakeError::BadKey, 400),
            (
                with(
                    "Sec-WebSocket-Key",
                    &["Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ"],
                ),
                HandshakeError::BadKey,
                400,
            ),
            (
                with(
                    "Sec-WebSocket-Key",
                    &["Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZSE="],
                ),
                HandshakeError::BadKey,
                400,
            ),
            (
                with(
                    "Sec-WebSocket-Key",
                    &["Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZ@=="],
                ),
                HandshakeError::BadKey,
                400,
            ),
            (
                with(
                    "Sec-WebSocket-Key",
                    &["Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZR=="],
                ),
                HandshakeError::BadKey,
                400,
            ),
            (
                with(
                    "Sec-WebSocket-Key",
                    &[
                        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
                        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
                    ],
                ),
                HandshakeError::BadKey,
                400,
            ),
            (
                with("Sec-WebSocket-Protocol", &["Sec-WebSocket-Protocol: a, a"]),
                HandshakeError::BadProtocol,
                400,
            ),
            (
                with("Sec-WebSocket-Protocol", &["Sec-WebSocket-Protocol: a b"]),
                HandshakeError::BadProtocol,
                400,
            ),
            (
                with("Sec-WebSocket-Protocol", &["Sec-WebSocket-Protocol: a/b"]),
                HandshakeError::BadProtocol,
                400,
            ),
        ];
        for (head, expected, status) in cases {
            let err = validate_upgrade(&head).unwrap_err();
            assert_eq!(err, expected, "{head:?}");
            assert_eq!(err.status(), status, "{head:?}");
        }
    }
}
