//! The requests of each HTTP scenario (SCENARIOS.md, "HTTP") and the answer
//! each must get: pure, no I/O. Requests are what `wrk` sends, plus what a
//! POST needs: a request line, `Host`, and for the POST a `Content-Type`
//! and `Content-Length`; keep-alive is HTTP/1.1's default, so no
//! `Connection` header.

/// The body of `/hello`.
pub const HELLO: &[u8] = b"Hello, World!";
/// The body of `/json`.
pub const JSON: &[u8] = br#"{"message":"Hello, World!"}"#;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `GET /hello` → `Hello, World!`, text/plain.
    Hello,
    /// `GET /json` → `{"message":"Hello, World!"}`, application/json.
    Json,
    /// `GET /user/<n>` (n counts up over the run) → `<n>`, text/plain.
    Param,
    /// `POST /echo` with a body → the same body, application/octet-stream.
    Post,
    /// `GET <path>` of a file → its bytes, application/octet-stream.
    Static,
}

impl Kind {
    pub fn parse(name: &str) -> Option<Kind> {
        Some(match name {
            "hello" => Kind::Hello,
            "json" => Kind::Json,
            "param" => Kind::Param,
            "post" => Kind::Post,
            "static" => Kind::Static,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Hello => "hello",
            Kind::Json => "json",
            Kind::Param => "param",
            Kind::Post => "post",
            Kind::Static => "static",
        }
    }

    pub fn method(self) -> &'static str {
        if self == Kind::Post {
            "POST"
        } else {
            "GET"
        }
    }

    /// The media type every response must have (parameters such as
    /// `; charset=utf-8` are allowed after it).
    pub fn media_type(self) -> &'static str {
        match self {
            Kind::Hello | Kind::Param => "text/plain",
            Kind::Json => "application/json",
            Kind::Post | Kind::Static => "application/octet-stream",
        }
    }
}

/// `n` in decimal, in `buf`.
pub fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[at..];
        }
    }
}

/// Whether a `Content-Type` value has the media type `want`.
pub fn media_type_is(value: &[u8], want: &str) -> bool {
    let end = value.iter().position(|&b| b == b';').unwrap_or(value.len());
    value[..end]
        .trim_ascii()
        .eq_ignore_ascii_case(want.as_bytes())
}

/// A run's requests and expected answers (the same for every connection).
#[derive(Debug)]
pub struct Workload {
    pub kind: Kind,
    /// The path as reported: `/user/<n>` for param.
    pub path: String,
    /// The request up to the id (param), or the whole request head.
    head: Vec<u8>,
    /// param: the request after the id.
    tail: Vec<u8>,
    /// post: the request body.
    body: Vec<u8>,
    /// The expected response body (param: computed per request).
    expected: Vec<u8>,
}

impl Workload {
    /// `host`: the `Host` header's value. `path`: static's file path.
    /// `post_body`: post's request body. `file`: static's expected bytes.
    pub fn new(
        kind: Kind,
        host: &str,
        path: Option<&str>,
        post_body: Vec<u8>,
        file: Vec<u8>,
    ) -> Workload {
        let line = |path: &str| format!("{} {path} HTTP/1.1\r\nHost: {host}\r\n", kind.method());
        let (path, head, tail, body, expected) = match kind {
            Kind::Hello => (
                "/hello".to_string(),
                line("/hello"),
                "",
                vec![],
                HELLO.to_vec(),
            ),
            Kind::Json => (
                "/json".to_string(),
                line("/json"),
                "",
                vec![],
                JSON.to_vec(),
            ),
            Kind::Param => (
                "/user/<n>".to_string(),
                "GET /user/".to_string(),
                " HTTP/1.1\r\nHost: ",
                vec![],
                vec![],
            ),
            Kind::Post => {
                let head = format!(
                    "{}Content-Type: application/octet-stream\r\nContent-Length: {}\r\n",
                    line("/echo"),
                    post_body.len()
                );
                ("/echo".to_string(), head, "", post_body.clone(), post_body)
            }
            Kind::Static => {
                let path = path.unwrap_or("/").to_string();
                let head = line(&path);
                (path, head, "", vec![], file)
            }
        };
        let mut head = head.into_bytes();
        let mut tail = tail.as_bytes().to_vec();
        if kind == Kind::Param {
            tail.extend_from_slice(host.as_bytes());
            tail.extend_from_slice(b"\r\n\r\n");
        } else {
            head.extend_from_slice(b"\r\n");
        }
        Workload {
            kind,
            path,
            head,
            tail,
            body,
            expected,
        }
    }

    /// Appends request number `id`.
    #[inline]
    pub fn write(&self, id: u64, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.head);
        if self.kind == Kind::Param {
            out.extend_from_slice(decimal(id, &mut [0; 20]));
            out.extend_from_slice(&self.tail);
        }
        out.extend_from_slice(&self.body);
    }

    /// The body the answer to request `id` must have.
    #[inline]
    pub fn expected<'a>(&'a self, id: u64, buf: &'a mut [u8; 20]) -> &'a [u8] {
        if self.kind == Kind::Param {
            decimal(id, buf)
        } else {
            &self.expected
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(w: &Workload, id: u64) -> String {
        let mut out = Vec::new();
        w.write(id, &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    #[test]
    fn requests() {
        let host = "127.0.0.1:8080";
        let w = Workload::new(Kind::Hello, host, None, vec![], vec![]);
        assert_eq!(
            request(&w, 7),
            "GET /hello HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"
        );
        assert_eq!(w.expected(7, &mut [0; 20]), b"Hello, World!");
        let w = Workload::new(Kind::Json, host, None, vec![], vec![]);
        assert_eq!(
            request(&w, 1),
            "GET /json HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"
        );
        assert_eq!(
            w.expected(1, &mut [0; 20]),
            br#"{"message":"Hello, World!"}"#
        );
        let w = Workload::new(Kind::Param, host, None, vec![], vec![]);
        assert_eq!(
            request(&w, 0),
            "GET /user/0 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"
        );
        assert_eq!(
            request(&w, 123456),
            "GET /user/123456 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"
        );
        assert_eq!(w.expected(123456, &mut [0; 20]), b"123456");
        assert_eq!(w.path, "/user/<n>");
        let w = Workload::new(Kind::Post, host, None, b"abc".to_vec(), vec![]);
        assert_eq!(
            request(&w, 1),
            "POST /echo HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: application/octet-stream\r\nContent-Length: 3\r\n\r\nabc"
        );
        assert_eq!(w.expected(1, &mut [0; 20]), b"abc");
        let w = Workload::new(
            Kind::Static,
            host,
            Some("/static/64k.bin"),
            vec![],
            vec![1, 2],
        );
        assert_eq!(
            request(&w, 1),
            "GET /static/64k.bin HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"
        );
        assert_eq!(w.expected(1, &mut [0; 20]), [1, 2]);
    }

    #[test]
    fn decimals_and_media_types() {
        let mut b = [0; 20];
        assert_eq!(decimal(0, &mut b), b"0");
        assert_eq!(decimal(u64::MAX, &mut b), b"18446744073709551615");
        assert!(media_type_is(b"text/plain", "text/plain"));
        assert!(media_type_is(b"Text/Plain; charset=utf-8", "text/plain"));
        assert!(media_type_is(
            b"application/json; charset=utf-8",
            "application/json"
        ));
        assert!(!media_type_is(b"text/html", "text/plain"));
        assert!(!media_type_is(b"text/plainx", "text/plain"));
        for name in ["hello", "json", "param", "post", "static"] {
            assert_eq!(Kind::parse(name).map(Kind::name), Some(name));
        }
        assert_eq!(Kind::parse("echo"), None);
    }
}
