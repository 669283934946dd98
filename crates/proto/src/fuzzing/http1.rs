//! The HTTP/1.1 request codec's fuzz target: a pipeline of requests
//! served as one connection would, whole and cut into pieces, with the
//! same outcome either way.

use super::check_error_response;
use crate::http1::{
    self, BodyDecoder, BodyKind, BodyLimits, HeadParser, HttpDate, Limits, Method, ResponseBody,
    Version,
};

/// One request as [`http1_pipeline`] saw it, owning its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedRequest {
    /// [`http1::RequestHead::method`]
    pub method: Method,
    /// [`http1::RequestHead::target`]
    pub target: String,
    /// [`http1::RequestHead::version`]
    pub version: Version,
    /// [`http1::RequestHead::headers`]
    pub headers: Vec<(String, Vec<u8>)>,
    /// [`http1::RequestHead::host`]
    pub host: Option<String>,
    /// [`http1::RequestHead::body`]
    pub body_kind: BodyKind,
    /// [`http1::RequestHead::keep_alive`]
    pub keep_alive: bool,
    /// [`http1::RequestHead::upgrade`]
    pub upgrade: bool,
    /// [`http1::RequestHead::expect_continue`]
    pub expect_continue: bool,
    /// The decoded body.
    pub body: Vec<u8>,
}

/// How a pipeline of requests ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PipelineEnd {
    /// The input ended between two requests.
    Clean,
    /// The input ended inside a request (head or body).
    Incomplete,
    /// A request did not keep the connection alive, or upgraded it; the
    /// rest of the input was not parsed (a server stops reading there).
    Closed,
    /// A request failed.
    Error(http1::HttpError),
}

/// Serves `input` as one connection would: the pieces between `cuts`
/// (ascending) arrive one after another into a buffer; heads are parsed
/// with one [`HeadParser`], bodies decoded, and consumed bytes dropped, until
/// the input runs out, a request closes the connection, or an error.
pub fn http1_pipeline(
    input: &[u8],
    cuts: &[usize],
    limits: Limits,
    body_limits: BodyLimits,
) -> (Vec<OwnedRequest>, PipelineEnd) {
    let mut pieces = cuts
        .iter()
        .copied()
        .chain(std::iter::once(input.len()))
        .scan(0, |start, end| {
            let end = end.clamp(*start, input.len());
            let piece = &input[*start..end];
            *start = end;
            Some(piece)
        });
    let mut buf: Vec<u8> = Vec::new();
    let mut parser = HeadParser::new(limits);
    let mut requests = Vec::new();
    loop {
        // The head.
        let request = loop {
            match parser.parse(&buf) {
                Ok(Some(head)) => {
                    let request = OwnedRequest {
                        method: head.method,
                        target: head.target.to_owned(),
                        version: head.version,
                        headers: head
                            .headers()
                            .map(|(n, v)| (n.to_owned(), v.to_vec()))
                            .collect(),
                        host: head.host.map(str::to_owned),
                        body_kind: head.body,
                        keep_alive: head.keep_alive,
                        upgrade: head.upgrade,
                        expect_continue: head.expect_continue,
                        body: Vec::new(),
                    };
                    let head_len = head.head_len;
                    buf.drain(..head_len);
                    break request;
                }
                Ok(None) => match pieces.next() {
                    Some(piece) => buf.extend_from_slice(piece),
                    None if buf.is_empty() => return (requests, PipelineEnd::Clean),
                    None => return (requests, PipelineEnd::Incomplete),
                },
                Err(e) => return (requests, PipelineEnd::Error(e)),
            }
        };
        // The body.
        let mut decoder = match BodyDecoder::new(request.body_kind, body_limits) {
            Ok(decoder) => decoder,
            Err(e) => return (requests, PipelineEnd::Error(e)),
        };
        let mut request = request;
        loop {
            match decoder.decode(&buf) {
                Ok(chunk) => {
                    request.body.extend_from_slice(chunk.data);
                    let (consumed, done) = (chunk.consumed, chunk.done);
                    buf.drain(..consumed);
                    if done {
                        break;
                    }
                    if consumed == 0 {
                        match pieces.next() {
                            Some(piece) => buf.extend_from_slice(piece),
                            None => return (requests, PipelineEnd::Incomplete),
                        }
                    }
                }
                Err(e) => return (requests, PipelineEnd::Error(e)),
            }
        }
        let stop = !request.keep_alive || request.upgrade;
        requests.push(request);
        if stop {
            return (requests, PipelineEnd::Closed);
        }
    }
}

/// Limits for the `http1_request` target, from the selector byte: small
/// values so that every limit is reached.
fn fuzz_http1_limits(selector: u8) -> (Limits, BodyLimits) {
    let limits = Limits {
        max_head_bytes: [64, 256, 4096, 16 * 1024][usize::from(selector & 3)],
        max_headers: [0, 2, 8, 64][usize::from((selector >> 2) & 3)],
        max_url_bytes: [1, 16, 256, 8 * 1024][usize::from((selector >> 4) & 3)],
    };
    let body = BodyLimits {
        max_body_bytes: [0, 8, 1024, 1024 * 1024][usize::from((selector >> 6) & 3)],
        max_chunk_line_bytes: if selector & 0x10 != 0 { 8 } else { 4096 },
        max_trailer_bytes: if selector & 0x20 != 0 { 16 } else { 16 * 1024 },
    };
    (limits, body)
}

/// `http1_request` target: serves arbitrary bytes as pipelined HTTP/1.1
/// requests, whole, cut once at a data-dependent point, and cut into seeded
/// random pieces; all three runs must give the same requests and the same
/// end. Every request must respect the limits, and every outcome must be
/// answerable with a response that parses.
///
/// Input layout: `[selector, seed, stream...]`; see `fuzz_http1_limits`
/// for the selector bits.
pub fn http1_request(data: &[u8]) {
    let [selector, seed, stream @ ..] = data else {
        return;
    };
    let (limits, body_limits) = fuzz_http1_limits(*selector);
    let whole = http1_pipeline(stream, &[], limits, body_limits);
    let cut = if stream.is_empty() {
        0
    } else {
        usize::from(*seed) * 7919 % stream.len()
    };
    let once = http1_pipeline(stream, &[cut], limits, body_limits);
    assert_eq!(whole, once, "cut at {cut} changed the outcome");
    let mut cuts = Vec::new();
    let mut state = u32::from(*seed) | 1;
    let mut at = 0;
    while at < stream.len() {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        at += 1 + (state >> 16) as usize % 16;
        cuts.push(at);
    }
    let split = http1_pipeline(stream, &cuts, limits, body_limits);
    assert_eq!(whole, split, "random pieces changed the outcome");

    let (requests, end) = whole;
    let date = HttpDate::from_unix_seconds(u64::from(*seed) << 24);
    for request in &requests {
        assert!(request.target.len() <= limits.max_url_bytes);
        assert!(request.headers.len() <= limits.max_headers);
        assert!(request.body.len() as u64 <= body_limits.max_body_bytes);
        assert_ne!(request.method, Method::Connect);
        for (name, value) in &request.headers {
            assert!(!name.is_empty() && name.bytes().all(|b| b.is_ascii_graphic() && b != b':'));
            assert!(!value.iter().any(|&b| b == b'\r' || b == b'\n' || b == 0));
            assert!(value.first() != Some(&b' ') && value.last() != Some(&b' '));
        }
        match request.body_kind {
            BodyKind::Empty => assert!(request.body.is_empty()),
            BodyKind::Length(n) => assert_eq!(request.body.len() as u64, n),
            BodyKind::Chunked => assert_eq!(request.version, Version::Http11),
        }
        let mut response = Vec::new();
        let body = if request.version == Version::Http11 {
            ResponseBody::Chunked
        } else {
            ResponseBody::Length(request.body.len() as u64)
        };
        http1::write_response_head(
            &mut response,
            200,
            None,
            &date,
            b"X-Echo: 1\r\n",
            body,
            request.keep_alive,
            request.version,
        );
        check_error_response(200, &response);
    }
    if let PipelineEnd::Error(e) = end {
        assert!(
            matches!(e.status(), 400 | 413 | 414 | 417 | 431 | 501 | 505),
            "{e:?}"
        );
        assert!(e.code().starts_with("ERR_HTTP_"));
        let mut response = Vec::new();
        http1::write_response_head(
            &mut response,
            e.status(),
            None,
            &date,
            b"",
            ResponseBody::Length(0),
            false,
            Version::Http11,
        );
        check_error_response(e.status(), &response);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http1_request_target_sees_valid_pipelines() {
        let stream: &[u8] = b"\r\nPOST /a?b HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc\
            PUT /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n\
            3;x=\"y\"\r\ndef\r\n0\r\nT: v\r\n\r\n\
            GET http://h/ HTTP/1.0\r\nConnection: keep-alive\r\n\r\n\
            GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\nignored";
        let (requests, end) = http1_pipeline(stream, &[], Limits::default(), BodyLimits::default());
        assert_eq!(end, PipelineEnd::Closed);
        let bodies: Vec<&[u8]> = requests.iter().map(|r| r.body.as_slice()).collect();
        assert_eq!(bodies, [&b"abc"[..], b"def", b"", b""]);
        assert_eq!(requests[2].host.as_deref(), Some("h"));
        for selector in 0..=255u8 {
            for seed in [0, 1, 200] {
                let mut data = vec![selector, seed];
                data.extend_from_slice(stream);
                http1_request(&data);
                // Every cut of the stream, too.
                if selector == 0xff {
                    for cut in 0..data.len() {
                        http1_request(&data[..cut]);
                    }
                }
            }
        }
        // Invalid and limit-breaking inputs of every kind.
        for bad in [
            &b"GET / HTTP/1.1\nHost: a\n\n"[..],
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"GET / HTTP/2.0\r\n\r\n",
            b"BREW / HTTP/1.1\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nExpect: tea\r\n\r\n",
        ] {
            for selector in [0xff, 0x0f, 0x00] {
                let mut data = vec![selector, 3];
                data.extend_from_slice(bad);
                http1_request(&data);
            }
        }
    }
}
