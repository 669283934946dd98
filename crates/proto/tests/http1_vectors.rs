//! Runs the HTTP/1.1 request vectors of `spec/http/requests.json` (llhttp's
//! request corpus ported as data, plus our own RFC 9112 cases; see the
//! file's `source`) through `HeadParser` and `BodyDecoder`, as a connection
//! would: pipelined requests are parsed in sequence from one buffer. Every
//! input is also fed cut at every byte position (inputs up to 2 KiB) and one
//! byte at a time; each feeding must give the same outcome.

use std::path::PathBuf;

use serde_json::Value;
use switchboard_proto::http1::{
    BodyDecoder, BodyLimits, HeadParser, HttpError, Limits, Method, Version,
};

/// A request as the vectors describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Request {
    method: String,
    target: String,
    version: String,
    headers: Vec<(Vec<u8>, Vec<u8>)>,
    body: Vec<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// Input ended between requests.
    Clean,
    /// Input ended inside a request.
    Incomplete,
    /// A request closed the connection (no keep-alive, or an upgrade).
    Closed,
    Error(HttpError),
}

/// Feeds `input` in the pieces between `cuts` into a connection buffer and
/// parses requests until the input runs out, a request closes, or an error.
fn serve(input: &[u8], cuts: &[usize]) -> (Vec<Request>, End) {
    let mut pieces = cuts
        .iter()
        .copied()
        .chain(std::iter::once(input.len()))
        .scan(0, |start, end| {
            let end: usize = end.clamp(*start, input.len());
            let piece = &input[*start..end];
            *start = end;
            Some(piece)
        });
    let mut buf = Vec::new();
    let mut parser = HeadParser::new(Limits::default());
    let mut requests = Vec::new();
    loop {
        let (mut request, kind, stop) = loop {
            match parser.parse(&buf) {
                Ok(Some(head)) => {
                    assert!(head.headers_raw.is_empty() || head.headers_raw.ends_with(b"\r\n"));
                    assert_ne!(head.method, Method::Connect);
                    let request = Request {
                        method: head.method.as_str().to_owned(),
                        target: head.target.to_owned(),
                        version: match head.version {
                            Version::Http10 => "HTTP/1.0",
                            Version::Http11 => "HTTP/1.1",
                        }
                        .to_owned(),
                        headers: head
                            .headers()
                            .map(|(n, v)| (n.as_bytes().to_vec(), v.to_vec()))
                            .collect(),
                        body: Vec::new(),
                    };
                    let (kind, stop, len) =
                        (head.body, !head.keep_alive || head.upgrade, head.head_len);
                    buf.drain(..len);
                    break (request, kind, stop);
                }
                Ok(None) => match pieces.next() {
                    Some(piece) => buf.extend_from_slice(piece),
                    None if buf.is_empty() => return (requests, End::Clean),
                    None => return (requests, End::Incomplete),
                },
                Err(e) => return (requests, End::Error(e)),
            }
        };
        let mut decoder = match BodyDecoder::new(kind, BodyLimits::default()) {
            Ok(d) => d,
            Err(e) => return (requests, End::Error(e)),
        };
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
                            None => return (requests, End::Incomplete),
                        }
                    }
                }
                Err(e) => return (requests, End::Error(e)),
            }
        }
        requests.push(request);
        if stop {
            return (requests, End::Closed);
        }
    }
}

/// A vector string: one byte per character (U+0000-U+00FF).
fn bytes(v: &Value) -> Vec<u8> {
    let s = v.as_str().expect("string");
    s.chars()
        .map(|c| u8::try_from(u32::from(c)).unwrap_or_else(|_| panic!("{c:?} is not a byte")))
        .collect()
}

fn expected_requests(case: &Value) -> Vec<Request> {
    let Some(list) = case.get("requests") else {
        return Vec::new();
    };
    list.as_array()
        .expect("requests")
        .iter()
        .map(|r| Request {
            method: r["method"].as_str().unwrap().to_owned(),
            target: String::from_utf8(bytes(&r["target"])).unwrap(),
            version: r["version"].as_str().unwrap().to_owned(),
            headers: r["headers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|pair| (bytes(&pair[0]), bytes(&pair[1])))
                .collect(),
            body: bytes(&r["body"]),
        })
        .collect()
}

fn load() -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../spec/http/requests.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let value: Value = serde_json::from_str(&text).expect("valid JSON");
    let source = &value["source"];
    assert!(source["license"].as_str().unwrap().contains("MIT"));
    assert!(source["repository"].as_str().unwrap().contains("llhttp"));
    value["cases"].as_array().expect("cases").clone()
}

#[test]
fn vectors() {
    let cases = load();
    assert!(cases.len() >= 100, "{} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let input = bytes(&case["input"]);
        let (requests, end) = serve(&input, &[]);
        let expected = expected_requests(case);
        let incomplete = case.get("incomplete").and_then(Value::as_bool) == Some(true);
        let verdict_ok = match case["verdict"].as_str().unwrap() {
            "ok" if incomplete => end == End::Incomplete,
            "ok" => matches!(end, End::Clean | End::Closed),
            "error" => {
                let status = case["status"].as_u64().expect("status") as u16;
                matches!(end, End::Error(e) if e.status() == status)
            }
            other => panic!("{name}: verdict {other}"),
        };
        if !verdict_ok || requests != expected {
            failures.push(format!(
                "{name}: got {end:?} with {} requests {requests:?}, expected {} {:?} with {expected:?}",
                requests.len(),
                case["verdict"],
                case.get("status"),
            ));
            continue;
        }
        // The same outcome however the bytes arrive.
        let whole = (requests, end);
        if input.len() <= 2048 {
            for cut in 0..=input.len() {
                if serve(&input, &[cut]) != whole {
                    failures.push(format!("{name}: cut at {cut} differs"));
                    break;
                }
            }
        }
        let every: Vec<usize> = (1..input.len()).collect();
        if serve(&input, &every) != whole {
            failures.push(format!("{name}: byte-by-byte differs"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_case_names_its_file_and_errors_name_a_status() {
    for case in load() {
        let name = case["name"].as_str().unwrap();
        let file = case["file"].as_str().unwrap();
        assert!(file == "switchboard" || file.ends_with(".md"), "{name}");
        if case["verdict"] == "error" {
            let status = case["status"].as_u64().unwrap();
            assert!(
                [400, 413, 414, 417, 431, 501, 505].contains(&status),
                "{name}: {status}"
            );
        }
    }
}
