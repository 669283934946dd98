//! Runs the language-neutral test vectors of `spec/wire/` (the normative
//! byte-level examples of `docs/protocol.md`) against the Rust codec. The
//! TypeScript codec runs the same files; see `spec/wire/README.md` for the
//! formats.

use std::collections::HashSet;
use std::path::PathBuf;

use serde_json::{json, Value};
use switchboard_proto::rpc::{
    decode, decode_preface, encode, encoded_len, peek_header, uuid, Abort, ErrorFrame, FileInfo,
    Frame, Hello, Message, Response, SequenceCheck, Settings, Welcome, ALL_ERROR_CODES,
    ALL_FEATURES,
};

/// Default `maxFrameSize` of the vectors that do not give one: 16 MiB.
const DEFAULT_MAX: usize = 16 * 1024 * 1024;

fn load(file: &str) -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../spec/wire")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let value: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
    let Value::Array(entries) = value else {
        panic!("{file}: not an array")
    };
    entries
}

fn unhex(s: &str) -> Vec<u8> {
    assert!(
        s.len().is_multiple_of(2) && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
        "bad hex {s:?}"
    );
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn tohex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} is not a string in {v}"))
}

fn u64_of(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} is not an integer in {v}"))
}

fn u32_of(v: &Value, key: &str) -> u32 {
    u32::try_from(u64_of(v, key)).unwrap()
}

fn bool_of(v: &Value, key: &str) -> bool {
    v[key]
        .as_bool()
        .unwrap_or_else(|| panic!("{key} is not a bool in {v}"))
}

fn array16(hex: &str) -> [u8; 16] {
    unhex(hex).try_into().expect("16 bytes")
}

/// The byte fields of a frame object, decoded from hex and kept alive while
/// a [`Frame`] borrows them (at most one of data / payload / details).
struct Bytes {
    body: Vec<u8>,
}

impl Bytes {
    fn of(v: &Value) -> Bytes {
        let field = ["data", "payload", "details"]
            .into_iter()
            .find_map(|k| v[k].as_str());
        Bytes {
            body: field.map(unhex).unwrap_or_default(),
        }
    }
}

fn settings(v: &Value) -> Settings {
    Settings {
        seed: array16(str_of(v, "seed")),
        max_frame_size: u32_of(v, "maxFrameSize"),
        initial_window: u32_of(v, "initialWindow"),
        max_concurrent_calls: u32_of(v, "maxConcurrentCalls"),
        heartbeat_ms: u32_of(v, "heartbeatMs"),
        features: u32_of(v, "features"),
    }
}

/// A [`Frame`] from a vector's frame object.
fn frame_of<'a>(v: &'a Value, bytes: &'a Bytes) -> Frame<'a> {
    let b = &bytes.body[..];
    match str_of(v, "type") {
        "hello" => Frame::Hello(Hello {
            settings: settings(v),
            codecs: v["codecs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap())
                .collect(),
            data: b,
        }),
        "welcome" => Frame::Welcome(Welcome {
            settings: settings(v),
            codec: str_of(v, "codec"),
            data: b,
        }),
        "message" => Frame::Message(Message {
            call_id: u64_of(v, "callId"),
            expects_reply: bool_of(v, "expectsReply"),
            uuid: v["uuid"].as_str().map(array16),
            attachments: u8::try_from(u64_of(v, "attachments")).unwrap(),
            action: str_of(v, "action"),
            payload: b,
        }),
        "response" => Frame::Response(Response {
            call_id: u64_of(v, "callId"),
            last: bool_of(v, "last"),
            attachments: u8::try_from(u64_of(v, "attachments")).unwrap(),
            payload: b,
        }),
        "end" => Frame::End {
            call_id: u64_of(v, "callId"),
        },
        "fastReply" => Frame::FastReply {
            call_id: u64_of(v, "callId"),
            code: u64_of(v, "code"),
        },
        "error" => Frame::Error(ErrorFrame {
            call_id: u64_of(v, "callId"),
            code: str_of(v, "code"),
            message: str_of(v, "message"),
            details: b,
        }),
        "streamOpen" => Frame::StreamOpen {
            stream_id: u64_of(v, "streamId"),
            file: (!v["file"].is_null()).then(|| FileInfo {
                size: u64_of(&v["file"], "size"),
                name: str_of(&v["file"], "name"),
            }),
        },
        "streamData" => Frame::StreamData {
            stream_id: u64_of(v, "streamId"),
            data: b,
        },
        "streamEnd" => Frame::StreamEnd {
            stream_id: u64_of(v, "streamId"),
            abort: (!v["abort"].is_null()).then(|| Abort {
                code: str_of(&v["abort"], "code"),
                message: str_of(&v["abort"], "message"),
            }),
        },
        "credit" => Frame::Credit {
            stream_id: u64_of(v, "streamId"),
            increment: u64_of(v, "increment"),
        },
        "stop" => Frame::Stop {
            stream_id: u64_of(v, "streamId"),
            code: str_of(v, "code"),
        },
        "cancel" => Frame::Cancel {
            call_id: u64_of(v, "callId"),
        },
        "heartbeat" => Frame::Heartbeat {
            pong: bool_of(v, "pong"),
        },
        "goAway" => Frame::GoAway {
            last_call_id: u64_of(v, "lastCallId"),
            code: str_of(v, "code"),
            message: str_of(v, "message"),
        },
        other => panic!("unknown frame type {other:?}"),
    }
}

fn settings_json(s: &Settings, mut object: Value) -> Value {
    object["seed"] = json!(tohex(&s.seed));
    object["maxFrameSize"] = json!(s.max_frame_size);
    object["initialWindow"] = json!(s.initial_window);
    object["maxConcurrentCalls"] = json!(s.max_concurrent_calls);
    object["heartbeatMs"] = json!(s.heartbeat_ms);
    object["features"] = json!(s.features);
    object
}

/// A decoded [`Frame`] as a vector's frame object.
fn json_of(frame: &Frame<'_>) -> Value {
    match frame {
        Frame::Hello(h) => settings_json(
            &h.settings,
            json!({"type": "hello", "codecs": h.codecs, "data": tohex(h.data)}),
        ),
        Frame::Welcome(w) => settings_json(
            &w.settings,
            json!({"type": "welcome", "codec": w.codec, "data": tohex(w.data)}),
        ),
        Frame::Message(m) => json!({"type": "message", "callId": m.call_id,
            "expectsReply": m.expects_reply, "uuid": m.uuid.map(|u| tohex(&u)),
            "attachments": m.attachments, "action": m.action, "payload": tohex(m.payload)}),
        Frame::Response(r) => json!({"type": "response", "callId": r.call_id, "last": r.last,
            "attachments": r.attachments, "payload": tohex(r.payload)}),
        Frame::End { call_id } => json!({"type": "end", "callId": call_id}),
        Frame::FastReply { call_id, code } => {
            json!({"type": "fastReply", "callId": call_id, "code": code})
        }
        Frame::Error(e) => json!({"type": "error", "callId": e.call_id, "code": e.code,
            "message": e.message, "details": tohex(e.details)}),
        Frame::StreamOpen { stream_id, file } => json!({"type": "streamOpen",
            "streamId": stream_id, "file": file.map(|f| json!({"size": f.size, "name": f.name}))}),
        Frame::StreamData { stream_id, data } => {
            json!({"type": "streamData", "streamId": stream_id, "data": tohex(data)})
        }
        Frame::StreamEnd { stream_id, abort } => json!({"type": "streamEnd",
            "streamId": stream_id,
            "abort": abort.map(|a| json!({"code": a.code, "message": a.message}))}),
        Frame::Credit {
            stream_id,
            increment,
        } => json!({"type": "credit", "streamId": stream_id, "increment": increment}),
        Frame::Stop { stream_id, code } => {
            json!({"type": "stop", "streamId": stream_id, "code": code})
        }
        Frame::Cancel { call_id } => json!({"type": "cancel", "callId": call_id}),
        Frame::Heartbeat { pong } => json!({"type": "heartbeat", "pong": pong}),
        Frame::GoAway {
            last_call_id,
            code,
            message,
        } => json!({"type": "goAway", "lastCallId": last_call_id, "code": code,
            "message": message}),
    }
}

/// Decodes `bytes` as exactly one frame and checks it against `expected`.
fn check_decodes(name: &str, bytes: &[u8], expected: &Value) {
    let (frame, used) = decode(bytes, DEFAULT_MAX)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .unwrap_or_else(|| panic!("{name}: incomplete"));
    assert_eq!(used, bytes.len(), "{name}: bytes used");
    assert_eq!(&json_of(&frame), expected, "{name}: decoded frame");
    assert_eq!(frame.validate(), Ok(()), "{name}");
    let header = peek_header(bytes, DEFAULT_MAX).unwrap().unwrap();
    assert_eq!(header.frame_len(), bytes.len(), "{name}");
    // Streaming: every proper prefix needs more bytes (checked near both
    // ends; the 64 KiB vector would make every prefix slow).
    for n in (0..bytes.len()).filter(|&n| n < 64 || n + 2 > bytes.len()) {
        assert_eq!(
            decode(&bytes[..n], DEFAULT_MAX),
            Ok(None),
            "{name}: prefix {n}"
        );
    }
}

fn check_encodes(name: &str, object: &Value, expected: &str) {
    let bytes = Bytes::of(object);
    let frame = frame_of(object, &bytes);
    let mut out = Vec::new();
    encode(&frame, &mut out);
    assert_eq!(tohex(&out), expected, "{name}: encoding");
    assert_eq!(encoded_len(&frame), out.len(), "{name}: encoded_len");
}

fn unique_names(file: &str, entries: &[Value]) {
    let names: HashSet<_> = entries.iter().map(|e| str_of(e, "name")).collect();
    assert_eq!(names.len(), entries.len(), "{file}: names must be unique");
}

#[test]
fn frames_decode_and_encode() {
    let entries = load("frames.json");
    unique_names("frames.json", &entries);
    let mut types = HashSet::new();
    let mut stream = Vec::new();
    for e in &entries {
        let name = str_of(e, "name");
        let bytes = unhex(str_of(e, "hex"));
        check_decodes(name, &bytes, &e["frame"]);
        check_encodes(name, &e["frame"], str_of(e, "hex"));
        types.insert(bytes[0]);
        stream.extend_from_slice(&bytes);
    }
    assert_eq!(types.len(), 15, "every frame type is covered");
    // The same frames back to back decode one after another.
    let mut rest = &stream[..];
    for e in &entries {
        let (frame, used) = decode(rest, DEFAULT_MAX).unwrap().unwrap();
        assert_eq!(json_of(&frame), e["frame"]);
        rest = &rest[used..];
    }
    assert!(rest.is_empty());
    // The worked examples of docs/protocol.md §9, verbatim.
    let hexes: HashSet<_> = entries.iter().map(|e| str_of(e, "hex")).collect();
    for example in [
        "03100705036164640102",
        "0410020503",
        "061003052c01",
        "0e0000",
        "0e1000",
    ] {
        assert!(hexes.contains(example), "§9 example {example} is missing");
    }
}

#[test]
fn decode_only_vectors_reencode_minimally() {
    let entries = load("decode-only.json");
    unique_names("decode-only.json", &entries);
    for e in &entries {
        let name = str_of(e, "name");
        check_decodes(name, &unhex(str_of(e, "hex")), &e["frame"]);
        let canonical = str_of(e, "canonicalHex");
        assert_ne!(
            canonical,
            str_of(e, "hex"),
            "{name}: not a non-minimal form"
        );
        check_encodes(name, &e["frame"], canonical);
        check_decodes(name, &unhex(canonical), &e["frame"]);
    }
}

#[test]
fn invalid_frames_are_rejected() {
    let entries = load("invalid.json");
    unique_names("invalid.json", &entries);
    let mut codes = HashSet::new();
    for e in &entries {
        let name = str_of(e, "name");
        let max = e
            .get("maxFrameSize")
            .map_or(DEFAULT_MAX, |m| m.as_u64().unwrap() as usize);
        let bytes = unhex(str_of(e, "hex"));
        let err = match decode(&bytes, max) {
            Err(err) => err,
            Ok(other) => panic!("{name}: expected {}, got {other:?}", e["error"]),
        };
        assert_eq!(err.code(), str_of(e, "error"), "{name}: {err}");
        codes.insert(err.code());
    }
    for code in ["FRAME_TYPE", "FRAME_TOO_LARGE", "MALFORMED", "HANDSHAKE"] {
        assert!(
            codes.contains(format!("ERR_PROTOCOL_{code}").as_str()),
            "{code} not covered"
        );
    }
}

#[test]
fn prefaces() {
    let entries = load("preface.json");
    unique_names("preface.json", &entries);
    for e in &entries {
        let name = str_of(e, "name");
        let got = match decode_preface(&unhex(str_of(e, "hex"))) {
            Ok(Some(4)) => "ok".to_owned(),
            Ok(None) => "need-more".to_owned(),
            Ok(Some(n)) => panic!("{name}: used {n} bytes"),
            Err(err) => err.code().to_owned(),
        };
        assert_eq!(got, str_of(e, "result"), "{name}");
    }
}

#[test]
fn sequences() {
    let entries = load("sequence.json");
    unique_names("sequence.json", &entries);
    for e in &entries {
        let name = str_of(e, "name");
        let features = e.get("features").map_or(ALL_FEATURES, |f| {
            u32::try_from(f.as_u64().expect("features is a number")).expect("features fits u32")
        });
        let mut check = SequenceCheck::with_features(features);
        let mut outcome = json!("ok");
        for (i, hex) in e["frames"].as_array().unwrap().iter().enumerate() {
            let bytes = unhex(hex.as_str().unwrap());
            let (frame, used) = decode(&bytes, DEFAULT_MAX)
                .unwrap_or_else(|err| panic!("{name}: frame {i}: {err}"))
                .unwrap_or_else(|| panic!("{name}: frame {i} incomplete"));
            assert_eq!(used, bytes.len(), "{name}: frame {i} is one whole frame");
            if let Err(err) = check.check(&frame) {
                outcome = json!({"error": err.code(), "at": i});
                break;
            }
        }
        assert_eq!(outcome, e["result"], "{name}");
        if let Some(last) = e.get("lastCallId") {
            assert_eq!(Some(check.last_call_id()), last.as_u64(), "{name}");
        }
    }
}

#[test]
fn uuids() {
    let entries = load("uuid.json");
    for e in &entries {
        let seed = array16(str_of(e, "seed"));
        let n = u64_of(e, "n");
        let derived = match str_of(e, "kind") {
            "message" => uuid::message_uuid(&seed, n),
            "response" => uuid::response_uuid(&seed, n),
            "unnumbered" => uuid::unnumbered_uuid(&seed, n),
            other => panic!("unknown kind {other}"),
        };
        assert_eq!(uuid::format(&derived), str_of(e, "uuid"), "{e}");
        assert!(uuid::is_v4(&derived), "{e}");
    }
}

#[test]
fn every_decoder_error_code_has_a_vector() {
    let mut seen = HashSet::new();
    for e in load("invalid.json") {
        seen.insert(str_of(&e, "error").to_owned());
    }
    for e in load("preface.json") {
        seen.insert(str_of(&e, "result").to_owned());
    }
    for e in load("sequence.json") {
        if let Some(code) = e["result"]["error"].as_str() {
            seen.insert(code.to_owned());
        }
    }
    for (code, _, _) in ALL_ERROR_CODES {
        // No codec in common is found by the handshake, not by a decoder.
        if *code != "ERR_PROTOCOL_CODEC" {
            assert!(seen.contains(*code), "{code} has no vector");
        }
    }
}
