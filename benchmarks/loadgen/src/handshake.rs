//! The HTTP/1.1 upgrade that opens a WebSocket (RFC 6455 §4.1).

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use sha1::{Digest, Sha1};

use crate::frame::XorShift;

const GUID: &[u8] = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
/// A response head larger than this is not a WebSocket server's.
const MAX_HEAD: usize = 16 * 1024;

/// The request to send and the `Sec-WebSocket-Accept` the server must answer.
pub struct Upgrade {
    pub request: Vec<u8>,
    pub expected_accept: [u8; 28],
}

pub fn accept_for(key: &str) -> [u8; 28] {
    let mut sha = Sha1::new();
    sha.update(key.as_bytes());
    sha.update(GUID);
    let mut out = [0u8; 28];
    // 20 bytes of SHA-1 are always 28 characters of padded base64.
    let written = B64.encode_slice(sha.finalize(), &mut out).unwrap_or(0);
    debug_assert_eq!(written, 28);
    out
}

pub fn request(host: &str, port: u16, path: &str, rng: &mut XorShift) -> Upgrade {
    let mut nonce = [0u8; 16];
    nonce[..8].copy_from_slice(&rng.next_u64().to_ne_bytes());
    nonce[8..].copy_from_slice(&rng.next_u64().to_ne_bytes());
    let key = B64.encode(nonce);
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    .into_bytes();
    Upgrade {
        request,
        expected_accept: accept_for(&key),
    }
}

/// Parses the server's answer at the start of `buf`: Ok(None) while the head
/// is incomplete, Ok(Some(head length)) for a valid 101; the bytes after the
/// head are already WebSocket frames.
pub fn parse_response(buf: &[u8], expected_accept: &[u8; 28]) -> Result<Option<usize>, String> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut resp = httparse::Response::new(&mut headers);
    let head_len = match resp.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD => {
            return Err("HTTP response head too large".to_string());
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(format!("bad HTTP response: {e}")),
    };
    let code = resp.code.unwrap_or(0);
    if code != 101 {
        let reason = resp.reason.unwrap_or("");
        return Err(format!("upgrade refused: HTTP {code} {reason}"));
    }
    let header = |name: &str| {
        resp.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    };
    if !header("upgrade").is_some_and(|v| v.eq_ignore_ascii_case(b"websocket")) {
        return Err("101 without Upgrade: websocket".to_string());
    }
    let has_upgrade_token = header("connection").is_some_and(|v| {
        v.split(|&b| b == b',')
            .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"upgrade"))
    });
    if !has_upgrade_token {
        return Err("101 without Connection: upgrade".to_string());
    }
    if header("sec-websocket-accept").map(|v| v.trim_ascii()) != Some(&expected_accept[..]) {
        return Err("wrong or missing Sec-WebSocket-Accept".to_string());
    }
    // None were offered, so the server may not pick one (RFC 6455 §4.1).
    if header("sec-websocket-extensions").is_some_and(|v| !v.trim_ascii().is_empty()) {
        return Err("server chose an extension that was not offered".to_string());
    }
    Ok(Some(head_len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_example_accept() {
        // RFC 6455 §1.3's worked example.
        assert_eq!(
            &accept_for("dGhlIHNhbXBsZSBub25jZQ=="),
            b"s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    #[test]
    fn request_shape() {
        let up = request("127.0.0.1", 9000, "/echo", &mut XorShift::new(5));
        let text = String::from_utf8(up.request).unwrap();
        assert!(text.starts_with("GET /echo HTTP/1.1\r\nHost: 127.0.0.1:9000\r\n"));
        assert!(text.ends_with("\r\n\r\n"));
        let key = text
            .lines()
            .find_map(|l| l.strip_prefix("Sec-WebSocket-Key: "))
            .unwrap();
        assert_eq!(B64.decode(key).unwrap().len(), 16);
        assert_eq!(up.expected_accept, accept_for(key));
    }

    fn response(accept: &str, extra: &str) -> Vec<u8> {
        format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\n\
             Sec-WebSocket-Accept: {accept}\r\n{extra}\r\n"
        )
        .into_bytes()
    }

    #[test]
    fn validates_101() {
        let accept = accept_for("dGhlIHNhbXBsZSBub25jZQ==");
        let good = response("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", "");
        let mut with_frame = good.clone();
        with_frame.extend_from_slice(&[0x81, 0x01, b'o']);
        assert_eq!(parse_response(&with_frame, &accept), Ok(Some(good.len())));
        assert_eq!(parse_response(&good[..good.len() - 1], &accept), Ok(None));
        assert!(parse_response(&response("AAAAAAAAAAAAAAAAAAAAAAAAAAA=", ""), &accept).is_err());
        let deflate = response(
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
            "Sec-WebSocket-Extensions: permessage-deflate\r\n",
        );
        assert!(parse_response(&deflate, &accept).is_err());
        let refused = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(
            parse_response(refused, &accept),
            Err("upgrade refused: HTTP 404 Not Found".to_string())
        );
        assert!(parse_response(&vec![b'a'; MAX_HEAD + 1], &accept).is_err());
    }
}
