//! What an xhr-streaming client sends, pure: its session's URL, the
//! `xhr_streaming` request that opens (and reopens) the stream, and the
//! `xhr_send` requests that carry its messages, batched.
//!
//! Batching follows sockjs-client's `BufferedSender`: one `xhr_send` in
//! flight per session; messages sent meanwhile wait and go together, as one
//! JSON array, in the next. (sockjs-client also waits 25 ms after each
//! answer before the next send, to batch more; the load generator does not:
//! it would cap a session at 40 sends a second and measure that timer, not
//! the server.)

use crate::frame::XorShift;
use crate::protocols;

/// `/<endpoint>/<server>/<session>` for client `idx`: SockJS's random ids,
/// with the client's index at the end of the session id so that no two
/// clients of a run share a session (a second stream on a session is
/// answered `c[2010,"Another connection still open"]`).
pub fn session_base(endpoint: &str, idx: usize, rng: &mut XorShift) -> String {
    format!("{}-{idx}", protocols::sockjs_session(endpoint, rng))
}

/// Appends the request that opens (or reopens) the session's stream. An
/// empty POST, as XMLHttpRequest sends it.
pub fn write_streaming(out: &mut Vec<u8>, base: &str, host: &str) {
    out.extend_from_slice(b"POST ");
    out.extend_from_slice(base.as_bytes());
    out.extend_from_slice(b"/xhr_streaming HTTP/1.1\r\nHost: ");
    out.extend_from_slice(host.as_bytes());
    out.extend_from_slice(b"\r\nContent-Length: 0\r\n\r\n");
}

/// Messages waiting for the session's next `xhr_send`: the body of a JSON
/// array of strings, without its brackets. Payloads are ASCII that needs no
/// escaping (SCENARIOS.md), so a message is its payload in quotes.
#[derive(Debug, Default)]
pub struct Batch {
    body: Vec<u8>,
    messages: u32,
}

impl Batch {
    pub fn is_empty(&self) -> bool {
        self.messages == 0
    }

    /// Bytes waiting, for the open loop's backlog cap.
    pub fn len_bytes(&self) -> usize {
        self.body.len()
    }

    /// Adds a message whose payload of exactly `len` bytes `fill` appends.
    #[inline]
    pub fn push(&mut self, len: usize, fill: impl FnOnce(&mut Vec<u8>)) {
        self.body.reserve(len + 3);
        if self.messages > 0 {
            self.body.push(b',');
        }
        self.body.push(b'"');
        let start = self.body.len();
        fill(&mut self.body);
        debug_assert_eq!(self.body.len() - start, len);
        self.body.push(b'"');
        self.messages += 1;
    }

    /// Appends the `xhr_send` request carrying every waiting message and
    /// empties the batch; returns how many messages it carries.
    pub fn write_send(&mut self, out: &mut Vec<u8>, base: &str, host: &str) -> u32 {
        // The brackets around the body count too.
        let length = (self.body.len() + 2).to_string();
        out.extend_from_slice(b"POST ");
        out.extend_from_slice(base.as_bytes());
        out.extend_from_slice(b"/xhr_send HTTP/1.1\r\nHost: ");
        out.extend_from_slice(host.as_bytes());
        // What XMLHttpRequest sends with a string body; sockjs-node reads
        // text/plain (and a few others) as the JSON it is.
        out.extend_from_slice(b"\r\nContent-Type: text/plain;charset=UTF-8\r\nContent-Length: ");
        out.extend_from_slice(length.as_bytes());
        out.extend_from_slice(b"\r\n\r\n[");
        out.extend_from_slice(&self.body);
        out.push(b']');
        self.body.clear();
        std::mem::take(&mut self.messages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_urls_differ_per_client() {
        let mut rng = XorShift::new(7);
        let a = session_base("room", 3, &mut rng);
        let b = session_base("room", 3, &mut rng);
        assert_ne!(a, b);
        let parts: Vec<&str> = a.split('/').collect();
        assert_eq!((parts.len(), parts[1]), (4, "room"));
        assert!(parts[3].ends_with("-3") && !parts[3].contains('.'));
    }

    #[test]
    fn streaming_request() {
        let mut out = Vec::new();
        write_streaming(&mut out, "/echo/000/abc-1", "127.0.0.1:9");
        assert_eq!(
            out,
            b"POST /echo/000/abc-1/xhr_streaming HTTP/1.1\r\nHost: 127.0.0.1:9\r\nContent-Length: 0\r\n\r\n"
        );
    }

    #[test]
    fn batches_go_as_one_array() {
        let mut b = Batch::default();
        assert!(b.is_empty());
        b.push(3, |o| o.extend_from_slice(b"abc"));
        b.push(7, |o| o.extend_from_slice(b"join:c1"));
        assert_eq!(b.len_bytes(), 15);
        let mut out = b"previous".to_vec();
        assert_eq!(b.write_send(&mut out, "/room/1/x-0", "h:1"), 2);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "previousPOST /room/1/x-0/xhr_send HTTP/1.1\r\nHost: h:1\r\n\
             Content-Type: text/plain;charset=UTF-8\r\nContent-Length: 17\r\n\r\n[\"abc\",\"join:c1\"]"
        );
        assert!(b.is_empty() && b.len_bytes() == 0);
        b.push(1, |o| o.push(b'z'));
        let mut out = Vec::new();
        assert_eq!(b.write_send(&mut out, "/e/1/s-0", "h"), 1);
        assert!(out.ends_with(b"Content-Length: 5\r\n\r\n[\"z\"]"));
    }
}
