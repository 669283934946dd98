//! The SockJS quoting and the two wrapping layers: JSON's own escapes,
//! every escaped range's first and last code point and their neighbours,
//! astral characters, an exhaustive sweep of the Basic Multilingual Plane,
//! the test suite's `test_xhr_server_encodes` vector, and round trips
//! through `serde_json` (a dev-dependency) as an independent decoder.

use super::escape::{EventSourceSink, JsStringSink, Sink};
use super::*;
use crate::test_util::Rng;

fn quoted(s: &str) -> String {
    let mut out = Vec::new();
    write_quoted(&mut out, s);
    String::from_utf8(out).expect("quoting writes UTF-8")
}

fn u_escape(cp: u32) -> String {
    format!("\\u{cp:04x}")
}

#[test]
fn plain_text_is_copied() {
    assert_eq!(quoted(""), r#""""#);
    assert_eq!(quoted("hello world"), r#""hello world""#);
    // `JSON.stringify` leaves `/`, DEL and printable ASCII alone.
    assert_eq!(quoted("a/b\u{7f}~"), "\"a/b\u{7f}~\"");
    // Two-byte and unlisted three-byte characters pass through as UTF-8.
    assert_eq!(quoted("é ß Ω ж ב ع 中 €"), "\"é ß Ω ж ב ع 中 €\"");
}

#[test]
fn json_escapes_use_the_short_forms_of_json_stringify() {
    assert_eq!(quoted("\"\\"), r#""\"\\""#);
    assert_eq!(quoted("\u{8}\u{c}\n\r\t"), r#""\b\f\n\r\t""#);
    // Other controls as `\u00XX`, lowercase, as V8 writes them.
    assert_eq!(
        quoted("\u{0}\u{1}\u{b}\u{1a}\u{1f}"),
        r#""\u0000\u0001\u000b\u001a\u001f""#
    );
    assert_eq!(quoted("a\u{0}b"), r#""a\u0000b""#);
}

#[test]
fn every_range_boundary_is_escaped_and_its_neighbours_are_not() {
    for &(lo, hi) in SOCKJS_ESCAPED_RANGES.iter() {
        if (0xD800..=0xDFFF).contains(&lo) {
            continue; // surrogates are not `char`s; see `surrogate_neighbours`
        }
        for cp in [lo, hi] {
            let c = char::from_u32(cp).unwrap();
            assert!(is_sockjs_escaped(c), "U+{cp:04X}");
            if cp >= 0x20 {
                assert_eq!(
                    quoted(&c.to_string()),
                    format!("\"{}\"", u_escape(cp)),
                    "U+{cp:04X}"
                );
            }
        }
        for cp in [lo.wrapping_sub(1), hi + 1] {
            let Some(c) = char::from_u32(cp) else {
                continue;
            };
            if cp > 0xFFFF || cp == 0x22 || cp == 0x5C {
                continue; // astral or JSON's own escapes, tested elsewhere
            }
            assert!(!is_sockjs_escaped(c), "U+{cp:04X}");
            assert_eq!(quoted(&c.to_string()), format!("\"{c}\""), "U+{cp:04X}");
        }
    }
}

#[test]
fn boundaries_spelled_out() {
    // The same as the loop above, written down so a reader sees the list.
    let cases: &[(char, bool)] = &[
        ('\u{1f}', true),
        ('\u{20}', false),
        ('\u{200b}', false),
        ('\u{200c}', true),
        ('\u{200f}', true),
        ('\u{2010}', false),
        ('\u{2027}', false),
        ('\u{2028}', true),
        ('\u{202f}', true),
        ('\u{2030}', false),
        ('\u{205f}', false),
        ('\u{2060}', true),
        ('\u{206f}', true),
        ('\u{2070}', false),
        ('\u{ffef}', false),
        ('\u{fff0}', true),
        ('\u{ffff}', true),
        ('\u{10000}', true),
    ];
    for &(c, escaped) in cases {
        assert_eq!(is_sockjs_escaped(c), escaped, "U+{:04X}", c as u32);
    }
}

#[test]
fn surrogate_neighbours_pass_through() {
    assert_eq!(quoted("\u{d7ff}"), "\"\u{d7ff}\"");
    assert_eq!(quoted("\u{e000}"), "\"\u{e000}\"");
}

#[test]
fn astral_characters_become_escaped_surrogate_pairs() {
    assert_eq!(quoted("\u{10000}"), r#""\ud800\udc00""#);
    assert_eq!(quoted("\u{10ffff}"), r#""\udbff\udfff""#);
    assert_eq!(quoted("a😀b"), r#""a\ud83d\ude00b""#);
    assert_eq!(quoted("𝄞"), r#""\ud834\udd1e""#);
}

#[test]
fn every_bmp_character_is_escaped_exactly_when_listed() {
    for cp in 0..=0xFFFFu32 {
        let Some(c) = char::from_u32(cp) else {
            continue;
        };
        let in_list = SOCKJS_ESCAPED_RANGES
            .iter()
            .any(|&(lo, hi)| (lo..=hi).contains(&cp));
        assert_eq!(is_sockjs_escaped(c), in_list, "U+{cp:04X}");
        let out = quoted(&c.to_string());
        let expected = match c {
            '"' => r#""\"""#.to_owned(),
            '\\' => r#""\\""#.to_owned(),
            '\u{8}' => r#""\b""#.to_owned(),
            '\u{c}' => r#""\f""#.to_owned(),
            '\n' => r#""\n""#.to_owned(),
            '\r' => r#""\r""#.to_owned(),
            '\t' => r#""\t""#.to_owned(),
            _ if in_list => format!("\"{}\"", u_escape(cp)),
            _ => format!("\"{c}\""),
        };
        assert_eq!(out, expected, "U+{cp:04X}");
    }
}

/// Ported from the MIT-licensed sockjs-protocol test suite
/// (`sockjs-protocol-0.3.3.py` and `sockjs-protocol.py`,
/// `JSONEncoding.test_xhr_server_encodes`): every code point from 255 to
/// 65535 matching `escapable_by_server` =
/// `[\x00-\x1f\u200c-\u200f\u2028-\u202f\u2060-\u206f\ufff0-\uffff]`, sent
/// raw, must come back as exactly `\u%04x` each.
#[test]
fn suite_server_killer_string() {
    let escapable_by_server = |cp: u32| matches!(cp, 0x00..=0x1f | 0x200c..=0x200f | 0x2028..=0x202f | 0x2060..=0x206f | 0xfff0..=0xffff);
    let raw: String = (255..65536u32)
        .filter(|&cp| escapable_by_server(cp))
        .filter_map(char::from_u32)
        .collect();
    let expected: String = (255..65536u32)
        .filter(|&cp| escapable_by_server(cp))
        .map(u_escape)
        .collect();
    assert_eq!(quoted(&raw), format!("\"{expected}\""));
    // And the whole frame, as `xhr` delivers it.
    let mut out = Vec::new();
    Framing::XhrPolling.write_messages(&mut out, [raw.as_str()]);
    assert_eq!(out, format!("a[\"{expected}\"]\n").into_bytes());
}

/// Strings mixing every class of character the quoting treats differently.
pub(super) fn random_string(rng: &mut Rng) -> String {
    const POOL: &[char] = &[
        'a',
        'Z',
        '0',
        ' ',
        '/',
        '"',
        '\\',
        '\u{0}',
        '\u{8}',
        '\n',
        '\r',
        '\t',
        '\u{1f}',
        '\u{7f}',
        '\u{80}',
        'é',
        '\u{7ff}',
        '\u{800}',
        '中',
        '\u{200b}',
        '\u{200c}',
        '\u{200f}',
        '\u{2028}',
        '\u{2029}',
        '\u{202f}',
        '\u{2060}',
        '\u{206f}',
        '\u{d7ff}',
        '\u{e000}',
        '\u{ffef}',
        '\u{fff0}',
        '\u{fffd}',
        '\u{ffff}',
        '\u{10000}',
        '😀',
        '\u{10ffff}',
        '<',
        '%',
    ];
    let len = rng.below(12);
    (0..len).map(|_| POOL[rng.below(POOL.len())]).collect()
}

#[test]
fn quoting_round_trips_through_serde_json() {
    let mut rng = Rng::new(7);
    for _ in 0..5000 {
        let s = random_string(&mut rng);
        let q = quoted(&s);
        let back: String = serde_json::from_str(&q).unwrap_or_else(|e| panic!("{q:?}: {e}"));
        assert_eq!(back, s);
        // Nothing listed survives raw, whatever its neighbours.
        assert!(
            !q.chars()
                .any(|c| c != '"' && c != '\\' && is_sockjs_escaped(c)),
            "{q:?}"
        );
    }
}

#[test]
fn long_ascii_is_one_copy() {
    let text = "The quick brown fox jumps over the lazy dog. ".repeat(100);
    assert_eq!(quoted(&text), format!("\"{text}\""));
}

fn js_string(s: &str) -> String {
    let mut out = Vec::new();
    JsStringSink(&mut out).put(s);
    String::from_utf8(out).unwrap()
}

#[test]
fn js_string_layer_matches_json_stringify_plus_three() {
    // What `JSON.stringify(frame)` gives, minus the quotes.
    assert_eq!(js_string(r#"a["x"]"#), r#"a[\"x\"]"#);
    assert_eq!(
        js_string(r#"c[3000,"Go away!"]"#),
        r#"c[3000,\"Go away!\"]"#
    );
    assert_eq!(js_string(r#"a["\u2028"]"#), r#"a[\"\\u2028\"]"#);
    assert_eq!(js_string("\n\u{1}é中😀"), "\\n\\u0001é中😀");
    // The additions: `<` and the two JavaScript line terminators.
    assert_eq!(js_string("</script>"), "\\u003c/script>");
    assert_eq!(js_string("<!--"), "\\u003c!--");
    assert_eq!(js_string("a\u{2028}b\u{2029}c"), "a\\u2028b\\u2029c");
}

#[test]
fn js_string_layer_round_trips() {
    let mut rng = Rng::new(11);
    for _ in 0..2000 {
        let s = random_string(&mut rng);
        let back: String = serde_json::from_str(&format!("\"{}\"", js_string(&s))).unwrap();
        assert_eq!(back, s);
    }
}

fn event_source(s: &str) -> String {
    let mut out = Vec::new();
    EventSourceSink(&mut out).put(s);
    String::from_utf8(out).unwrap()
}

#[test]
fn event_source_layer_escapes_percent_cr_lf_nul() {
    assert_eq!(event_source(r#"a["100%"]"#), r#"a["100%25"]"#);
    assert_eq!(event_source("a\rb\nc\u{0}d"), "a%0Db%0Ac%00d");
    assert_eq!(
        event_source(r#"a["  \u0000\n\r "]"#),
        r#"a["  \u0000\n\r "]"#
    );
    assert_eq!(event_source("é%中"), "é%25中");
}
