//! The two responses a handshake can end with.

/// `101 Switching Protocols` completing the handshake (RFC 6455 §4.2.2).
///
/// `accept` comes from [`crate::http::accept_key`]; `protocol` must be one of
/// the client's offers and `extensions` the value returned by
/// [`crate::ws::deflate::negotiate`]. CR, LF and other control characters in
/// the values are replaced by spaces so no value can inject headers.
pub fn switching_protocols_response(
    accept: &str,
    protocol: Option<&str>,
    extensions: Option<&str>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(160);
    out.extend_from_slice(
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n",
    );
    push_header(&mut out, "Sec-WebSocket-Accept", accept);
    if let Some(protocol) = protocol {
        push_header(&mut out, "Sec-WebSocket-Protocol", protocol);
    }
    if let Some(extensions) = extensions {
        push_header(&mut out, "Sec-WebSocket-Extensions", extensions);
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// A complete error response whose body is `reason` as plain text, closing
/// the connection.
///
/// A `Connection` entry in `extra_headers` is merged into the response's own
/// `Connection: close` (a 426 needs `Connection: Upgrade` next to its
/// `Upgrade` header, RFC 7230 §6.7) instead of being sent twice. Control
/// characters in names and values are replaced by spaces.
pub fn error_response(status: u16, reason: &str, extra_headers: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(160 + reason.len());
    out.extend_from_slice(format!("HTTP/1.1 {status} {}\r\n", reason_phrase(status)).as_bytes());
    let mut connection = String::new();
    for (name, value) in extra_headers {
        if name.eq_ignore_ascii_case("connection") {
            connection.push_str(value);
            connection.push_str(", ");
        } else {
            push_header(&mut out, name, value);
        }
    }
    connection.push_str("close");
    push_header(&mut out, "Connection", &connection);
    push_header(&mut out, "Content-Type", "text/plain; charset=utf-8");
    push_header(&mut out, "Content-Length", &reason.len().to_string());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(reason.as_bytes());
    out
}

fn push_header(out: &mut Vec<u8>, name: &str, value: &str) {
    push_sanitized(out, name);
    out.extend_from_slice(b": ");
    push_sanitized(out, value);
    out.extend_from_slice(b"\r\n");
}

/// Writes `s` with ASCII control characters (CR and LF above all) replaced by
/// spaces: response splitting is impossible whatever the caller passes.
fn push_sanitized(out: &mut Vec<u8>, s: &str) {
    out.extend(
        s.bytes()
            .map(|b| if b.is_ascii_control() { b' ' } else { b }),
    );
}

/// The standard reason phrase for the statuses a handshake uses; any other
/// status gets a generic phrase of its class (clients ignore the phrase).
fn reason_phrase(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        426 => "Upgrade Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ if (400..500).contains(&status) => "Client Error",
        _ if (500..600).contains(&status) => "Server Error",
        _ => "Unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switching_protocols_bytes() {
        let r = switching_protocols_response(
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
            Some("chat"),
            Some("permessage-deflate"),
        );
        assert_eq!(
            String::from_utf8(r).unwrap(),
            "HTTP/1.1 101 Switching Protocols\r\n\
             Upgrade: websocket\r\n\
             Connection: Upgrade\r\n\
             Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\
             Sec-WebSocket-Protocol: chat\r\n\
             Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n"
        );
        let r = switching_protocols_response("x", None, None);
        assert!(r.ends_with(b"Sec-WebSocket-Accept: x\r\n\r\n"));
    }

    #[test]
    fn error_response_bytes() {
        let r = error_response(
            426,
            "Upgrade required",
            &[("Upgrade", "websocket"), ("Connection", "Upgrade")],
        );
        assert_eq!(
            String::from_utf8(r).unwrap(),
            "HTTP/1.1 426 Upgrade Required\r\n\
             Upgrade: websocket\r\n\
             Connection: Upgrade, close\r\n\
             Content-Type: text/plain; charset=utf-8\r\n\
             Content-Length: 16\r\n\r\n\
             Upgrade required"
        );
        let r = String::from_utf8(error_response(431, "", &[])).unwrap();
        assert!(r.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"));
        assert!(r.ends_with("Content-Length: 0\r\n\r\n"));
    }

    #[test]
    fn content_length_counts_bytes_not_chars() {
        let r = String::from_utf8(error_response(400, "é", &[])).unwrap();
        assert!(r.ends_with("Content-Length: 2\r\n\r\né"), "{r}");
    }

    #[test]
    fn no_header_injection() {
        let r = error_response(403, "no", &[("X-A", "1\r\nSet-Cookie: evil")]);
        let text = String::from_utf8(r).unwrap();
        assert!(text.contains("X-A: 1  Set-Cookie: evil\r\n"), "{text}");
        let r = switching_protocols_response("k", Some("a\nb"), None);
        assert!(String::from_utf8(r)
            .unwrap()
            .contains("Sec-WebSocket-Protocol: a b\r\n"));
    }
}
