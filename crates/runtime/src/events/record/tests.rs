//! The records against the language-neutral vectors of `spec/events/`
//! (the TypeScript decoder reads the same file).

use std::path::PathBuf;

use serde_json::Value;

use super::*;

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn vectors() -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../spec/events/records.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let Value::Array(entries) = serde_json::from_str(&text).unwrap() else {
        panic!("records.json is not an array");
    };
    entries
}

/// The bytes a vector's hex fields name, kept alive while a record borrows
/// them.
struct Bytes {
    data: Vec<u8>,
    certificate: Vec<u8>,
    hello: Vec<u8>,
    welcome: Vec<u8>,
    headers: Vec<u8>,
}

fn bytes_of(v: &Value) -> Bytes {
    let hex = |key: &str| v[key].as_str().map(unhex).unwrap_or_default();
    Bytes {
        data: hex("data"),
        certificate: v["tls"]["peerCertificate"]
            .as_str()
            .map(unhex)
            .unwrap_or_default(),
        hello: hex("hello"),
        welcome: hex("welcome"),
        headers: hex("headers"),
    }
}

/// The record a vector describes.
fn record_of<'a>(v: &'a Value, bytes: &'a Bytes) -> Record<'a> {
    let id = v["id"].as_u64().unwrap();
    let s = |key: &str| v[key].as_str().unwrap_or_else(|| panic!("{key} in {v}"));
    let n = |key: &str| v[key].as_u64().unwrap_or_else(|| panic!("{key} in {v}"));
    let tls = (!v["tls"].is_null()).then(|| TlsRecord {
        server_name: v["tls"]["serverName"].as_str().unwrap(),
        protocol: v["tls"]["protocol"].as_str().unwrap(),
        cipher: v["tls"]["cipher"].as_str().unwrap(),
        peer_certificate: &bytes.certificate,
    });
    match s("kind") {
        "upgrade" => Record::Upgrade {
            id,
            route: n("route") as u16,
            remote: s("remoteAddress"),
            path: s("path"),
            query: s("query"),
            tls,
            headers: v["headers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|pair| (pair[0].as_str().unwrap(), pair[1].as_str().unwrap()))
                .collect(),
        },
        "open" => Record::Open {
            id,
            route: n("route") as u16,
            remote: s("remoteAddress"),
            protocol: s("protocol"),
            extensions: s("extensions"),
            tls,
        },
        "message" => Record::Message {
            id,
            binary: v["isBinary"].as_bool().unwrap(),
            payload: &bytes.data,
        },
        "messageOwned" => Record::MessageOwned {
            id,
            binary: v["isBinary"].as_bool().unwrap(),
            index: n("index") as u32,
        },
        "close" => Record::Close {
            id,
            code: n("code") as u16,
            reason: s("reason"),
        },
        "drain" => Record::Drain { id },
        "sockjsSent" => Record::SockJsSent {
            id,
            http: n("http"),
        },
        "rpcOpen" => Record::RpcOpen {
            id,
            route: n("route") as u16,
            transport: Transport::from_byte(n("transport") as u8).unwrap(),
            remote: s("remoteAddress"),
            tls,
            hello: &bytes.hello,
            welcome: &bytes.welcome,
        },
        "httpOpen" => Record::HttpOpen {
            id,
            remote: s("remoteAddress"),
            tls,
        },
        "httpRequest" => Record::HttpRequest {
            id,
            route: n("route") as u16,
            method: n("method") as u8,
            flags: n("flags") as u8,
            started: n("started"),
            path: s("path"),
            query: s("query"),
            params: v["params"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.as_str().unwrap())
                .collect(),
            headers: &bytes.headers,
        },
        "httpBody" => Record::HttpBody {
            id,
            last: v["last"].as_bool().unwrap(),
            data: &bytes.data,
        },
        "httpBodyOwned" => Record::HttpBodyOwned {
            id,
            last: v["last"].as_bool().unwrap(),
            index: n("index") as u32,
        },
        "httpBodyError" => Record::HttpBodyError {
            id,
            status: n("status") as u16,
            reason: s("reason"),
        },
        "httpFileDone" => Record::HttpFileDone {
            id,
            status: n("status") as u16,
            sent: v["sent"].as_bool().unwrap(),
        },
        other => panic!("unknown kind {other}"),
    }
}

#[test]
fn every_vector_is_written_and_read_back_exactly() {
    let vectors = vectors();
    assert!(vectors.len() >= 14);
    let all_bytes: Vec<Bytes> = vectors.iter().map(|v| bytes_of(&v["record"])).collect();
    let mut batch = Vec::new();
    let mut expected = Vec::new();
    for (vector, bytes) in vectors.iter().zip(&all_bytes) {
        let name = vector["name"].as_str().unwrap();
        let hex = unhex(vector["hex"].as_str().unwrap());
        let record = record_of(&vector["record"], bytes);
        let mut written = Vec::new();
        record.write(&mut written);
        assert_eq!(written, hex, "{name}: written");
        let (read, used) = Record::read(&written).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert_eq!(used, hex.len(), "{name}: length");
        assert_eq!(read, record, "{name}: read");
        batch.extend_from_slice(&hex);
        expected.push(record);
    }
    // A batch is the records back to back.
    let mut at = 0;
    let mut seen = Vec::new();
    while at < batch.len() {
        let (record, used) = Record::read(&batch[at..]).unwrap();
        seen.push(record);
        at += used;
    }
    assert_eq!(seen, expected);
}

#[test]
fn every_kind_has_a_vector() {
    let kinds: Vec<String> = vectors()
        .iter()
        .map(|v| v["record"]["kind"].as_str().unwrap().to_owned())
        .collect();
    for kind in [
        "upgrade",
        "open",
        "message",
        "messageOwned",
        "close",
        "drain",
        "sockjsSent",
        "rpcOpen",
        "httpOpen",
        "httpRequest",
        "httpBody",
        "httpBodyOwned",
        "httpBodyError",
        "httpFileDone",
    ] {
        assert!(kinds.iter().any(|k| k == kind), "no vector of kind {kind}");
    }
}

#[test]
fn malformed_records_are_refused() {
    // Cut inside the id.
    assert_eq!(
        Record::read(&[KIND_DRAIN, 4, 0, 0, 0, 1, 2, 3, 4]),
        Err(Malformed("the record ends inside a field"))
    );
    // The body announces more than there is.
    assert!(Record::read(&[KIND_DRAIN, 9, 0, 0, 0, 1]).is_err());
    // An unknown kind.
    assert_eq!(
        Record::read(&[99, 0, 0, 0, 0]),
        Err(Malformed("unknown kind"))
    );
    // Bytes left over after a drain's id.
    let mut bytes = vec![KIND_DRAIN, 9, 0, 0, 0];
    bytes.extend_from_slice(&[0; 9]);
    assert_eq!(
        Record::read(&bytes),
        Err(Malformed("bytes after the record's fields"))
    );
}

#[test]
fn strings_are_cut_on_char_boundaries() {
    let long = "é".repeat(40_000);
    let record = Record::Close {
        id: 1,
        code: 1000,
        reason: "",
    };
    let mut out = Vec::new();
    record.write(&mut out);
    let mut body = Vec::new();
    put_str(&mut body, &long);
    let len = u16::from_le_bytes([body[0], body[1]]) as usize;
    assert!(len <= u16::MAX as usize);
    assert!(std::str::from_utf8(&body[2..2 + len]).is_ok());
}
