//! Every frame under every transport's framing, byte for byte, and the
//! preludes. Expected bytes are ported from the MIT-licensed sockjs-protocol
//! test suite (`sockjs-protocol.py`: `Protocol`, `XhrPolling`,
//! `XhrStreaming`, `EventSource`, `HtmlFile`, `JsonPolling`,
//! `HandlingClose`) where it has them.

use super::*;

fn cb(name: &str) -> Callback {
    Callback::new(name).unwrap()
}

/// Writes one frame of each kind with `framing`, returning them in order:
/// open, heartbeat, `["x"]`, close 3000 "Go away!".
fn all_frames(framing: Framing) -> [String; 4] {
    let text = |write: &dyn Fn(&mut Vec<u8>)| {
        let mut out = Vec::new();
        write(&mut out);
        String::from_utf8(out).unwrap()
    };
    [
        text(&|out| framing.write_open(out)),
        text(&|out| framing.write_heartbeat(out)),
        text(&|out| framing.write_messages(out, ["x"])),
        text(&|out| framing.write_close(out, GO_AWAY.code, GO_AWAY.reason)),
    ]
}

#[test]
fn websocket_frames_are_bare() {
    // `WebsocketHybi10.test_transport`, `test_close`.
    assert_eq!(
        all_frames(Framing::WebSocket),
        ["o", "h", r#"a["x"]"#, r#"c[3000,"Go away!"]"#]
    );
}

#[test]
fn xhr_frames_end_with_a_newline() {
    // `Protocol.test_simpleSession`, `test_closeSession`: "New line is a
    // frame delimiter specific for xhr-polling".
    let expected = ["o\n", "h\n", "a[\"x\"]\n", "c[3000,\"Go away!\"]\n"];
    assert_eq!(all_frames(Framing::XhrPolling), expected);
    assert_eq!(all_frames(Framing::XhrStreaming), expected);
}

#[test]
fn eventsource_frames_are_data_lines() {
    // `EventSource.test_transport`.
    assert_eq!(
        all_frames(Framing::EventSource),
        [
            "data: o\r\n\r\n",
            "data: h\r\n\r\n",
            "data: a[\"x\"]\r\n\r\n",
            "data: c[3000,\"Go away!\"]\r\n\r\n",
        ]
    );
    let mut out = Vec::new();
    Framing::EventSource.write_messages(&mut out, ["  \u{0}\n\r "]);
    assert_eq!(out, b"data: a[\"  \\u0000\\n\\r \"]\r\n\r\n");
    // `%` is escaped for sockjs-client's `decodeURI`.
    out.clear();
    Framing::EventSource.write_messages(&mut out, ["100%"]);
    assert_eq!(out, b"data: a[\"100%25\"]\r\n\r\n");
}

#[test]
fn htmlfile_frames_are_script_calls() {
    // `HtmlFile.test_transport`.
    assert_eq!(
        all_frames(Framing::HtmlFile(cb("callback"))),
        [
            "<script>\np(\"o\");\n</script>\r\n",
            "<script>\np(\"h\");\n</script>\r\n",
            "<script>\np(\"a[\\\"x\\\"]\");\n</script>\r\n",
            "<script>\np(\"c[3000,\\\"Go away!\\\"]\");\n</script>\r\n",
        ]
    );
    // A message cannot close the page's script element.
    let mut out = Vec::new();
    Framing::HtmlFile(cb("c")).write_messages(&mut out, ["</script><script>alert(1)</script>"]);
    let page = String::from_utf8(out).unwrap();
    assert_eq!(page.matches("</script>").count(), 1, "{page}");
    assert!(page.contains(r#"\u003c/script>\u003cscript>"#), "{page}");
}

#[test]
fn jsonp_frames_are_commented_calls() {
    // `JsonPolling.test_transport`, `test_close` (sockjs-protocol.py; the
    // 0.3.3 suite predates the `/**/`).
    assert_eq!(
        all_frames(Framing::Jsonp(cb("x"))),
        [
            "/**/x(\"o\");\r\n",
            "/**/x(\"h\");\r\n",
            "/**/x(\"a[\\\"x\\\"]\");\r\n",
            "/**/x(\"c[3000,\\\"Go away!\\\"]\");\r\n",
        ]
    );
    let mut out = Vec::new();
    Framing::Jsonp(cb("callback")).write_messages(&mut out, ["abc", "%61bc"]);
    // `JsonPolling.test_content_types`.
    assert_eq!(out, b"/**/callback(\"a[\\\"abc\\\",\\\"%61bc\\\"]\");\r\n");
}

#[test]
fn message_frames() {
    let frame = |messages: &[&str]| {
        let mut out = Vec::new();
        Framing::WebSocket.write_messages(&mut out, messages);
        String::from_utf8(out).unwrap()
    };
    assert_eq!(frame(&[]), "a[]");
    assert_eq!(frame(&[""]), r#"a[""]"#);
    assert_eq!(frame(&["a", "b", "c"]), r#"a["a","b","c"]"#);
    assert_eq!(frame(&["\"", "\\", "\n"]), r#"a["\"","\\","\n"]"#);
    assert_eq!(frame(&["\u{2028}😀"]), r#"a["\u2028\ud83d\ude00"]"#);
    // `XhrStreaming.test_response_limit` sends 128 x.
    let long = "x".repeat(128);
    assert_eq!(frame(&[&long]), format!("a[\"{long}\"]"));
    // Owned strings and iterators work too.
    let mut out = Vec::new();
    Framing::WebSocket.write_messages(&mut out, vec![String::from("a"), String::from("b")]);
    Framing::WebSocket.write_messages(&mut out, ["c"].iter());
    assert_eq!(out, br#"a["a","b"]a["c"]"#);
}

#[test]
fn close_frames() {
    let close = |code, reason: &str| {
        let mut out = Vec::new();
        Framing::WebSocket.write_close(&mut out, code, reason);
        String::from_utf8(out).unwrap()
    };
    for (reason, expected) in [
        (GO_AWAY, r#"c[3000,"Go away!"]"#),
        (
            ANOTHER_CONNECTION_STILL_OPEN,
            r#"c[2010,"Another connection still open"]"#,
        ),
        (
            CONNECTION_INTERRUPTED,
            r#"c[1002,"Connection interrupted"]"#,
        ),
        (NORMAL_CLOSURE, r#"c[1000,"Normal closure"]"#),
    ] {
        assert_eq!(close(reason.code, reason.reason), expected);
    }
    assert_eq!(close(0, ""), r#"c[0,""]"#);
    assert_eq!(close(7, "a\"b"), r#"c[7,"a\"b"]"#);
    assert_eq!(close(65535, "\u{2028}"), r#"c[65535,"\u2028"]"#);
}

#[test]
fn frames_append_to_what_is_there() {
    let mut out = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
    Framing::XhrPolling.write_open(&mut out);
    Framing::XhrPolling.write_heartbeat(&mut out);
    assert_eq!(out, b"HTTP/1.1 200 OK\r\n\r\no\nh\n");
}

#[test]
fn xhr_streaming_prelude_is_2048_h_then_newline() {
    assert_eq!(XHR_STREAMING_PRELUDE.len(), 2049);
    assert!(XHR_STREAMING_PRELUDE[..2048].iter().all(|&b| b == b'h'));
    assert_eq!(XHR_STREAMING_PRELUDE[2048], b'\n');
    let mut out = Vec::new();
    Framing::XhrStreaming.write_prelude(&mut out);
    assert_eq!(out, XHR_STREAMING_PRELUDE);
}

#[test]
fn eventsource_prelude_is_a_blank_line() {
    let mut out = Vec::new();
    Framing::EventSource.write_prelude(&mut out);
    assert_eq!(out, b"\r\n");
}

#[test]
fn polling_and_websocket_have_no_prelude() {
    for framing in [
        Framing::WebSocket,
        Framing::XhrPolling,
        Framing::Jsonp(cb("x")),
    ] {
        let mut out = Vec::new();
        framing.write_prelude(&mut out);
        assert!(out.is_empty(), "{framing:?}");
    }
}

/// `HtmlFile.head` of the test suite, with `%s` the callback.
const SUITE_HTMLFILE_HEAD: &str = r#"<!doctype html>
<html><head>
  <meta http-equiv="X-UA-Compatible" content="IE=edge" />
  <meta http-equiv="Content-Type" content="text/html; charset=UTF-8" />
</head><body><h2>Don't panic!</h2>
  <script>
    document.domain = document.domain;
    var c = parent.%s;
    c.start();
    function p(d) {c.message(d);};
    window.onload = function() {c.stop();};
  </script>"#;

#[test]
fn htmlfile_prelude_matches_the_suite_and_is_padded() {
    for name in ["callback", "x", "_jp.a1b2c3", &"c".repeat(MAX_CALLBACK_LEN)] {
        let mut out = Vec::new();
        Framing::HtmlFile(cb(name)).write_prelude(&mut out);
        let page = String::from_utf8(out).unwrap();
        // `HtmlFile.test_transport`: stripped, it is the suite's head; and
        // more than 1024 bytes arrive before the first frame.
        assert_eq!(page.trim(), SUITE_HTMLFILE_HEAD.replace("%s", name));
        assert!(page.len() > 1024, "{}", page.len());
        // sockjs-node's padding: 1023 bytes plus the name, then CRLF CRLF.
        assert_eq!(page.len(), 1023 + name.len() + 4);
        assert!(page.ends_with(" \r\n\r\n"));
    }
    let mut direct = Vec::new();
    write_htmlfile_prelude(&mut direct, &cb("x"));
    let mut via_framing = Vec::new();
    Framing::HtmlFile(cb("x")).write_prelude(&mut via_framing);
    assert_eq!(direct, via_framing);
}

#[test]
fn framing_for_each_transport() {
    let c = cb("cb");
    let cases = [
        (Transport::WebSocket, Some(Framing::WebSocket)),
        (Transport::XhrPolling, Some(Framing::XhrPolling)),
        (Transport::XhrStreaming, Some(Framing::XhrStreaming)),
        (Transport::EventSource, Some(Framing::EventSource)),
        (Transport::HtmlFile, Some(Framing::HtmlFile(c))),
        (Transport::JsonpPolling, Some(Framing::Jsonp(c))),
        (Transport::XhrSend, None),
        (Transport::JsonpSend, None),
    ];
    for (transport, framing) in cases {
        assert_eq!(
            Framing::for_transport(transport, Some(c)),
            framing,
            "{transport:?}"
        );
    }
    assert_eq!(Framing::for_transport(Transport::HtmlFile, None), None);
    assert_eq!(Framing::for_transport(Transport::JsonpPolling, None), None);
    assert_eq!(
        Framing::for_transport(Transport::XhrPolling, None),
        Some(Framing::XhrPolling)
    );
}

#[test]
fn message_frames_round_trip_through_serde_json() {
    let mut rng = crate::test_util::Rng::new(3);
    for _ in 0..1000 {
        let messages: Vec<String> = (0..rng.below(4))
            .map(|_| super::escape_tests::random_string(&mut rng))
            .collect();
        let mut out = Vec::new();
        Framing::WebSocket.write_messages(&mut out, &messages);
        assert_eq!(out[0], b'a');
        let back: Vec<String> = serde_json::from_slice(&out[1..]).unwrap();
        assert_eq!(back, messages);
        // And through our own parser, as a client echo would come back.
        let parsed: Vec<_> = parse_xhr_send(&out[1..]).unwrap().collect();
        assert_eq!(parsed, messages);
        // Wrapped for jsonp, the frame is one JSON string holding the frame.
        let mut jsonp = Vec::new();
        Framing::Jsonp(cb("f")).write_messages(&mut jsonp, &messages);
        let inner = &jsonp[b"/**/f(".len()..jsonp.len() - b");\r\n".len()];
        let frame: String = serde_json::from_slice(inner).unwrap();
        assert_eq!(frame.as_bytes(), out);
    }
}
