//! Parsing what clients send: good payloads, every JSON string escape,
//! surrogate pairs and lone surrogates, whitespace, every refused shape,
//! the `d=` form, the WebSocket forms, vectors ported from the test suite,
//! and `serde_json` (a dev-dependency) as an oracle on generated input.

use std::borrow::Cow;

use super::*;
use crate::test_util::Rng;

fn xhr(body: &str) -> Result<Vec<String>, PayloadError> {
    parse_xhr_send(body.as_bytes()).map(|m| m.map(Cow::into_owned).collect())
}

fn ws(text: &str) -> Result<Vec<String>, PayloadError> {
    parse_websocket_message(text).map(|m| m.map(Cow::into_owned).collect())
}

fn jsonp(content_type: Option<&str>, body: &str) -> Result<Vec<String>, PayloadError> {
    let mut scratch = Vec::new();
    parse_jsonp_send(content_type, body.as_bytes(), &mut scratch)
        .map(|m| m.map(Cow::into_owned).collect())
}

const FORM: Option<&str> = Some("application/x-www-form-urlencoded");
const BROKEN: Result<Vec<String>, PayloadError> = Err(PayloadError::BrokenJson);
const EXPECTED: Result<Vec<String>, PayloadError> = Err(PayloadError::PayloadExpected);

fn ok(messages: &[&str]) -> Result<Vec<String>, PayloadError> {
    Ok(messages.iter().map(|s| s.to_string()).collect())
}

#[test]
fn error_texts_and_statuses() {
    // `XhrPolling.test_invalid_json`, `JsonPolling.test_invalid_json`.
    assert_eq!(PayloadError::PayloadExpected.message(), "Payload expected.");
    assert_eq!(PayloadError::BrokenJson.message(), "Broken JSON encoding.");
    assert_eq!(PayloadError::PayloadExpected.status(), 500);
    assert_eq!(PayloadError::BrokenJson.status(), 500);
    assert_eq!(
        PayloadError::BrokenJson.to_string(),
        "Broken JSON encoding."
    );
}

#[test]
fn good_arrays() {
    assert_eq!(xhr(r#"["a"]"#), ok(&["a"]));
    assert_eq!(xhr("[]"), ok(&[]));
    assert_eq!(xhr(r#"["", "b", ""]"#), ok(&["", "b", ""]));
    assert_eq!(
        xhr(" \t\r\n[ \t\r\n\"a\" \t\r\n, \"b\"\t\r\n] \t\r\n"),
        ok(&["a", "b"])
    );
    assert_eq!(xhr("[\n]"), ok(&[]));
    // Raw UTF-8 of every length.
    assert_eq!(
        xhr("[\"é中😀\", \"\u{7f}\u{80}\"]"),
        ok(&["é中😀", "\u{7f}\u{80}"])
    );
    // `XhrStreaming.test_response_limit`-sized strings.
    let long = "x".repeat(4096);
    assert_eq!(xhr(&format!("[\"{long}\"]")), Ok(vec![long]));
}

#[test]
fn every_escape() {
    assert_eq!(
        xhr(r#"["\"\\\/\b\f\n\r\t"]"#),
        ok(&["\"\\/\u{8}\u{c}\n\r\t"])
    );
    assert_eq!(
        xhr(r#"["\u0041\u00e9\u00E9\u4e2d\u0000\u001f\uffff"]"#),
        ok(&["Aéé中\u{0}\u{1f}\u{ffff}"])
    );
    assert_eq!(xhr(r#"["a\nb", "c"]"#), ok(&["a\nb", "c"]));
    assert_eq!(xhr(r#"["\\u0041"]"#), ok(&["\\u0041"]));
    assert_eq!(xhr(r#"["\u005c", "\u0022"]"#), ok(&["\\", "\""]));
}

#[test]
fn surrogate_pairs_combine() {
    assert_eq!(xhr(r#"["\ud83d\ude00"]"#), ok(&["😀"]));
    assert_eq!(xhr(r#"["\uD83D\uDE00"]"#), ok(&["😀"]));
    assert_eq!(
        xhr(r#"["\ud800\udc00", "\udbff\udfff"]"#),
        ok(&["\u{10000}", "\u{10ffff}"])
    );
    assert_eq!(xhr(r#"["a\ud834\udd1eb"]"#), ok(&["a𝄞b"]));
}

#[test]
fn lone_surrogates_become_replacement_characters() {
    let r = "\u{fffd}";
    assert_eq!(xhr(r#"["\ud800"]"#), ok(&[r]));
    assert_eq!(xhr(r#"["\udc00"]"#), ok(&[r]));
    assert_eq!(xhr(r#"["\udfff x"]"#), ok(&["\u{fffd} x"]));
    // A high surrogate followed by something other than a low one.
    assert_eq!(xhr(r#"["\ud800\u0041"]"#), ok(&["\u{fffd}A"]));
    assert_eq!(xhr(r#"["\ud800\ud800\udc00"]"#), ok(&["\u{fffd}\u{10000}"]));
    assert_eq!(xhr(r#"["\ud800\n"]"#), ok(&["\u{fffd}\n"]));
    assert_eq!(xhr(r#"["\ud800x"]"#), ok(&["\u{fffd}x"]));
    // Low then high is two lone halves.
    assert_eq!(xhr(r#"["\udc00\ud800"]"#), ok(&["\u{fffd}\u{fffd}"]));
}

#[test]
fn strings_without_escapes_are_borrowed() {
    let body = r#"["plain", "esc\n", "\u00e9", "é"]"#;
    let messages: Vec<_> = parse_xhr_send(body.as_bytes()).unwrap().collect();
    assert!(matches!(messages[0], Cow::Borrowed("plain")));
    assert!(matches!(messages[1], Cow::Owned(_)));
    assert!(matches!(messages[2], Cow::Owned(_)));
    assert!(matches!(messages[3], Cow::Borrowed("é")));
}

#[test]
fn messages_know_their_count() {
    let mut messages = parse_xhr_send(br#"["a","b","c"]"#).unwrap();
    assert_eq!(messages.len(), 3);
    messages.next();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages.by_ref().count(), 2);
    assert_eq!(messages.next(), None);
    assert_eq!(Messages::empty().len(), 0);
    assert_eq!(parse_xhr_send(b"[]").unwrap().len(), 0);
}

#[test]
fn empty_body_is_payload_expected() {
    assert_eq!(xhr(""), EXPECTED);
}

#[test]
fn refused_shapes() {
    for body in [
        // Suite: `XhrPolling.test_invalid_json`.
        r#"["x"#,
        // Not arrays of strings.
        "[",
        "]",
        "[[]]",
        r#"[["a"]]"#,
        r#"["a",["b"]]"#,
        "[1]",
        "[null]",
        "[true]",
        "[{}]",
        r#"["a",1]"#,
        "{}",
        r#"{"a":"b"}"#,
        r#""a""#,
        "null",
        "1",
        "true",
        // Separators.
        r#"["a",]"#,
        r#"[,"a"]"#,
        r#"["a" "b"]"#,
        r#"["a",,"b"]"#,
        r#"["a";"b"]"#,
        "[,]",
        // Trailing or leading garbage.
        r#"["a"]x"#,
        r#"["a"] ]"#,
        r#"["a"],"#,
        r#"["a"]["b"]"#,
        r#"x["a"]"#,
        // Whitespace JSON does not know.
        " ",
        "\u{c}[]",
        "[]\u{c}",
        "\u{a0}[]",
        "\u{feff}[]",
        "[\u{b}]",
        // Strings: unterminated, raw controls, bad escapes.
        r#"["a]"#,
        r#"["a\"]"#,
        "[\"a\nb\"]",
        "[\"a\tb\"]",
        "[\"\u{0}\"]",
        "[\"\u{1f}\"]",
        r#"["\x41"]"#,
        r#"["\'"]"#,
        r#"["\U0041"]"#,
        r#"["\u41"]"#,
        r#"["\u004"]"#,
        r#"["\u00g1"]"#,
        r#"["\u+041"]"#,
        r#"["\u-041"]"#,
        r#"["\"]"#,
        r#"["\"#,
        // Single quotes are not JSON.
        "['a']",
    ] {
        assert_eq!(xhr(body), BROKEN, "{body:?}");
    }
}

#[test]
fn invalid_utf8_is_broken() {
    assert_eq!(
        parse_xhr_send(b"[\"\xff\"]").unwrap_err(),
        PayloadError::BrokenJson
    );
    assert_eq!(
        parse_xhr_send(b"[\"\xc3\"]").unwrap_err(),
        PayloadError::BrokenJson
    );
    assert_eq!(
        parse_xhr_send(b"[\"\xed\xa0\x80\"]").unwrap_err(),
        PayloadError::BrokenJson
    );
}

/// Ported from the MIT-licensed sockjs-protocol test suite
/// (`sockjs-protocol-0.3.3.py` and `sockjs-protocol.py`,
/// `JSONEncoding.test_xhr_server_decodes`): every code point matching the
/// suite's `escapable_by_client`, sent as `\u%04x`, must decode to itself.
const ESCAPABLE_BY_CLIENT: &[(u32, u32)] = &[
    (0x0000, 0x001f),
    (0x007f, 0x009f),
    (0x00ad, 0x00ad),
    (0x0600, 0x0604),
    (0x070f, 0x070f),
    (0x17b4, 0x17b4),
    (0x17b5, 0x17b5),
    (0x2000, 0x20ff),
    (0xfeff, 0xfeff),
    (0xfff0, 0xffff),
    (0x0000, 0x001f),
    (0xfffe, 0xfffe),
    (0xffff, 0xffff),
    (0x0300, 0x0333),
    (0x033d, 0x0346),
    (0x034a, 0x034c),
    (0x0350, 0x0352),
    (0x0357, 0x0358),
    (0x035c, 0x0362),
    (0x0374, 0x0374),
    (0x037e, 0x037e),
    (0x0387, 0x0387),
    (0x0591, 0x05af),
    (0x05c4, 0x05c4),
    (0x0610, 0x0617),
    (0x0653, 0x0654),
    (0x0657, 0x065b),
    (0x065d, 0x065e),
    (0x06df, 0x06e2),
    (0x06eb, 0x06ec),
    (0x0730, 0x0730),
    (0x0732, 0x0733),
    (0x0735, 0x0736),
    (0x073a, 0x073a),
    (0x073d, 0x073d),
    (0x073f, 0x0741),
    (0x0743, 0x0743),
    (0x0745, 0x0745),
    (0x0747, 0x0747),
    (0x07eb, 0x07f1),
    (0x0951, 0x0951),
    (0x0958, 0x095f),
    (0x09dc, 0x09dd),
    (0x09df, 0x09df),
    (0x0a33, 0x0a33),
    (0x0a36, 0x0a36),
    (0x0a59, 0x0a5b),
    (0x0a5e, 0x0a5e),
    (0x0b5c, 0x0b5d),
    (0x0e38, 0x0e39),
    (0x0f43, 0x0f43),
    (0x0f4d, 0x0f4d),
    (0x0f52, 0x0f52),
    (0x0f57, 0x0f57),
    (0x0f5c, 0x0f5c),
    (0x0f69, 0x0f69),
    (0x0f72, 0x0f76),
    (0x0f78, 0x0f78),
    (0x0f80, 0x0f83),
    (0x0f93, 0x0f93),
    (0x0f9d, 0x0f9d),
    (0x0fa2, 0x0fa2),
    (0x0fa7, 0x0fa7),
    (0x0fac, 0x0fac),
    (0x0fb9, 0x0fb9),
    (0x1939, 0x193a),
    (0x1a17, 0x1a17),
    (0x1b6b, 0x1b6b),
    (0x1cda, 0x1cdb),
    (0x1dc0, 0x1dcf),
    (0x1dfc, 0x1dfc),
    (0x1dfe, 0x1dfe),
    (0x1f71, 0x1f71),
    (0x1f73, 0x1f73),
    (0x1f75, 0x1f75),
    (0x1f77, 0x1f77),
    (0x1f79, 0x1f79),
    (0x1f7b, 0x1f7b),
    (0x1f7d, 0x1f7d),
    (0x1fbb, 0x1fbb),
    (0x1fbe, 0x1fbe),
    (0x1fc9, 0x1fc9),
    (0x1fcb, 0x1fcb),
    (0x1fd3, 0x1fd3),
    (0x1fdb, 0x1fdb),
    (0x1fe3, 0x1fe3),
    (0x1feb, 0x1feb),
    (0x1fee, 0x1fef),
    (0x1ff9, 0x1ff9),
    (0x1ffb, 0x1ffb),
    (0x1ffd, 0x1ffd),
    (0x2000, 0x2001),
    (0x20d0, 0x20d1),
    (0x20d4, 0x20d7),
    (0x20e7, 0x20e9),
    (0x2126, 0x2126),
    (0x212a, 0x212b),
    (0x2329, 0x232a),
    (0x2adc, 0x2adc),
    (0x302b, 0x302c),
    (0xaab2, 0xaab3),
    (0xf900, 0xfa0d),
    (0xfa10, 0xfa10),
    (0xfa12, 0xfa12),
    (0xfa15, 0xfa1e),
    (0xfa20, 0xfa20),
    (0xfa22, 0xfa22),
    (0xfa25, 0xfa26),
    (0xfa2a, 0xfa2d),
    (0xfa30, 0xfa6d),
    (0xfa70, 0xfad9),
    (0xfb1d, 0xfb1d),
    (0xfb1f, 0xfb1f),
    (0xfb2a, 0xfb36),
    (0xfb38, 0xfb3c),
    (0xfb3e, 0xfb3e),
    (0xfb40, 0xfb41),
    (0xfb43, 0xfb44),
    (0xfb46, 0xfb4e),
];

#[test]
fn suite_client_killer_string() {
    let mut escaped = String::from("[\"\\u0022\\u005c");
    let mut expected = String::from("\"\\");
    for cp in 0..65536u32 {
        if ESCAPABLE_BY_CLIENT
            .iter()
            .any(|&(lo, hi)| (lo..=hi).contains(&cp))
        {
            escaped.push_str(&format!("\\u{cp:04x}"));
            expected.push(char::from_u32(cp).expect("the list has no surrogates"));
        }
    }
    escaped.push_str("\"]");
    assert_eq!(xhr(&escaped), Ok(vec![expected]));
}

#[test]
fn websocket_messages() {
    // `WebsocketHixie76.test_empty_frame`: ignored, not an error.
    assert_eq!(ws(""), ok(&[]));
    assert_eq!(ws("[]"), ok(&[]));
    assert_eq!(ws(r#"["a"]"#), ok(&["a"]));
    assert_eq!(ws(r#"["a","b"]"#), ok(&["a", "b"]));
    assert_eq!(ws(" [\"a\"] "), ok(&["a"]));
    // One JSON string is one message.
    assert_eq!(ws(r#""a""#), ok(&["a"]));
    assert_eq!(ws(" \"a\\n\\ud83d\\ude00\" "), ok(&["a\n😀"]));
    assert_eq!(ws(r#""""#), ok(&[""]));
    // `WebsocketHixie76.test_broken_json`, and other shapes.
    for text in [
        r#"["a"#,
        " ",
        "a",
        "1",
        "null",
        "{}",
        r#""a" "b""#,
        r#""a","b""#,
        r#""a"]"#,
        r#"["a"]]"#,
        r#""a"#,
        "\"\u{1}\"",
    ] {
        assert_eq!(ws(text), BROKEN, "{text:?}");
    }
}

#[test]
fn jsonp_send_forms() {
    // `JsonPolling.test_transport`, `test_invalid_json`,
    // `test_sending_empty_frame`.
    assert_eq!(jsonp(FORM, "d=%5B%22x%22%5D"), ok(&["x"]));
    assert_eq!(jsonp(FORM, "d=%5B%22b%22%5D"), ok(&["b"]));
    assert_eq!(jsonp(FORM, "d=%5B%22x"), BROKEN);
    assert_eq!(jsonp(FORM, "d=%5B%5D"), ok(&[]));
    for body in ["", "d=", "p=p", "d", "dd=%5B%5D", "&&", "=x"] {
        assert_eq!(jsonp(FORM, body), EXPECTED, "{body:?}");
    }
    // `+` is a space, `%2B` a plus; hex in either case.
    assert_eq!(jsonp(FORM, "d=%5B%22a+b%2Bc%22%5d"), ok(&["a b+c"]));
    // Percent-encoded UTF-8, and JSON escapes inside the field.
    assert_eq!(jsonp(FORM, "d=%5B%22%C3%A9%E4%B8%AD%22%5D"), ok(&["é中"]));
    assert_eq!(jsonp(FORM, "d=%5B%22%5Cu00e9%5Cn%22%5D"), ok(&["é\n"]));
    assert_eq!(jsonp(FORM, "d=%5B%22%FF%22%5D"), BROKEN);
    // Unencoded JSON characters and malformed `%` sequences stay as they are.
    assert_eq!(jsonp(FORM, r#"d=["a"]"#), ok(&["a"]));
    assert_eq!(jsonp(FORM, "d=%5B%22%zz%4%22%5D"), ok(&["%zz%4"]));
    assert_eq!(jsonp(FORM, "d=%5B%22100%%22%5D"), ok(&["100%"]));
    // Field order, repeats and an encoded name.
    assert_eq!(jsonp(FORM, "i=a1&d=%5B%22x%22%5D"), ok(&["x"]));
    assert_eq!(jsonp(FORM, "d=%5B%22x%22%5D&d=junk"), ok(&["x"]));
    assert_eq!(jsonp(FORM, "%64=%5B%22x%22%5D"), ok(&["x"]));
    // Media types are case-insensitive and take parameters.
    for ct in [
        "application/x-www-form-urlencoded; charset=UTF-8",
        "Application/X-WWW-Form-Urlencoded",
        " application/x-www-form-urlencoded ;charset=utf-8",
    ] {
        assert_eq!(jsonp(Some(ct), "d=%5B%22x%22%5D"), ok(&["x"]), "{ct}");
    }
}

#[test]
fn jsonp_send_raw_bodies() {
    // `JsonPolling.test_content_types`: a text/plain body is the JSON itself,
    // not percent-decoded.
    assert_eq!(jsonp(Some("text/plain"), r#"["%61bc"]"#), ok(&["%61bc"]));
    assert_eq!(jsonp(None, r#"["a"]"#), ok(&["a"]));
    assert_eq!(jsonp(Some("application/json"), r#"["a"]"#), ok(&["a"]));
    assert_eq!(jsonp(Some("text/plain"), "d=%5B%22x%22%5D"), BROKEN);
    assert_eq!(jsonp(Some("text/plain"), ""), EXPECTED);
    assert_eq!(jsonp(None, r#"["x"#), BROKEN);
}

#[test]
fn jsonp_send_reuses_the_scratch_buffer() {
    let mut scratch = b"left over".to_vec();
    let first: Vec<_> = parse_jsonp_send(FORM, b"d=%5B%22a%22%5D", &mut scratch)
        .unwrap()
        .map(Cow::into_owned)
        .collect();
    assert_eq!(first, ["a"]);
    assert_eq!(scratch, br#"["a"]"#);
    let second: Vec<_> = parse_jsonp_send(FORM, b"d=%5B%22bc%22%5D", &mut scratch)
        .unwrap()
        .map(Cow::into_owned)
        .collect();
    assert_eq!(second, ["bc"]);
    // Messages without escapes borrow the decoded field.
    let third = parse_jsonp_send(FORM, b"d=%5B%22x%22%5D", &mut scratch)
        .unwrap()
        .next()
        .unwrap();
    assert!(matches!(third, Cow::Borrowed("x")));
}

/// A valid array of strings built from JSON's pieces, then damaged zero to
/// two times by inserting a piece (good or bad) or deleting a character.
/// Surrogate escapes are left out: `serde_json` refuses lone ones, which
/// this parser decodes to U+FFFD on purpose (tested above).
fn random_json_ish(rng: &mut Rng) -> String {
    const IN_STRING: &[&str] = &[
        "a", "Z", " ", "é", "中", "😀", "'", "\u{2028}", "\\n", "\\\"", "\\\\", "\\/", "\\b",
        "\\f", "\\r", "\\t", "\\u00e9", "\\u0041", "\\uFFFF", "\\u0000",
    ];
    const WS: &[&str] = &["", "", " ", "\n", "\t", "\r", "  "];
    const DAMAGE: &[&str] = &[
        "[", "]", ",", "\"", "\\", "\\u", "\\u12", "\\x", "1", "null", "{", "}", ":", "\u{1}",
        "\u{c}", "\n", " ", "\"a\"", "[]",
    ];
    let mut text = String::from(WS[rng.below(WS.len())]);
    text.push('[');
    for i in 0..rng.below(4) {
        if i > 0 {
            text.push(',');
        }
        text.push_str(WS[rng.below(WS.len())]);
        text.push('"');
        for _ in 0..rng.below(4) {
            text.push_str(IN_STRING[rng.below(IN_STRING.len())]);
        }
        text.push('"');
        text.push_str(WS[rng.below(WS.len())]);
    }
    text.push(']');
    text.push_str(WS[rng.below(WS.len())]);
    for _ in 0..rng.below(3) {
        let boundaries: Vec<usize> = (0..=text.len())
            .filter(|&i| text.is_char_boundary(i))
            .collect();
        let at = boundaries[rng.below(boundaries.len())];
        if rng.below(2) == 0 {
            text.insert_str(at, DAMAGE[rng.below(DAMAGE.len())]);
        } else if at < text.len() {
            text.remove(at);
        }
    }
    text
}

#[test]
fn agrees_with_serde_json_on_generated_input() {
    let mut rng = Rng::new(5);
    let (mut accepted, mut refused) = (0, 0);
    for _ in 0..100_000 {
        let text = random_json_ish(&mut rng);
        if text.is_empty() {
            continue;
        }
        let ours = xhr(&text);
        let oracle = serde_json::from_str::<Vec<String>>(&text);
        match (&ours, &oracle) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a, b, "{text:?}");
                accepted += 1;
            }
            (Err(PayloadError::BrokenJson), Err(_)) => refused += 1,
            _ => panic!("{text:?}: ours {ours:?}, serde_json {oracle:?}"),
        }
    }
    // The generator must reach both outcomes often enough to mean something.
    assert!(
        accepted > 20_000 && refused > 20_000,
        "{accepted} accepted, {refused} refused"
    );
}

#[test]
fn random_messages_round_trip() {
    let mut rng = Rng::new(9);
    for _ in 0..2000 {
        let messages: Vec<String> = (0..rng.below(5))
            .map(|_| super::escape_tests::random_string(&mut rng))
            .collect();
        // What a client would send: JSON from an independent encoder.
        let body = serde_json::to_string(&messages).unwrap();
        assert_eq!(xhr(&body), Ok(messages.clone()), "{body:?}");
        assert_eq!(ws(&body), Ok(messages.clone()), "{body:?}");
        let form: String = body.bytes().map(|b| format!("%{b:02X}")).collect();
        assert_eq!(jsonp(FORM, &format!("d={form}")), Ok(messages), "{body:?}");
    }
}
