//! The URL layout and the per-transport rules. Paths are ported from the
//! MIT-licensed sockjs-protocol test suite (`BaseUrlGreeting`,
//! `IframePage`, `SessionURLs`, `XhrPolling.test_options`, ...), named at
//! each use.

use crate::http1::Method;

use super::*;

fn session(
    server_id: &'static str,
    session_id: &'static str,
    transport: Transport,
) -> Option<Route<'static>> {
    Some(Route::Session {
        server_id,
        session_id,
        transport,
    })
}

#[test]
fn greeting() {
    // `BaseUrlGreeting.test_greeting`: the base URL with and without slash.
    assert_eq!(Route::parse(""), Some(Route::Greeting));
    assert_eq!(Route::parse("/"), Some(Route::Greeting));
}

#[test]
fn not_found() {
    // `BaseUrlGreeting.test_notFound`.
    for path in ["/a", "/a.html", "//", "///", "/a/a", "/a/a/", "/a/"] {
        assert_eq!(Route::parse(path), None, "{path}");
    }
    // Not under the prefix at all, or an unknown transport.
    for path in [
        "a",
        "info",
        "/a/a/xhr_poll",
        "/a/a/XHR",
        "/a/a/",
        "/a/a/xhr/x",
        "/a/a/a/xhr",
    ] {
        assert_eq!(Route::parse(path), None, "{path}");
    }
}

#[test]
fn info_and_raw_websocket() {
    assert_eq!(Route::parse("/info"), Some(Route::Info));
    assert_eq!(Route::parse("/info/"), Some(Route::Info));
    assert_eq!(Route::parse("/websocket"), Some(Route::RawWebSocket));
    assert_eq!(Route::parse("/websocket/"), Some(Route::RawWebSocket));
    for path in ["/info//", "/INFO", "/info.json", "/websockets", "/info/x"] {
        assert_eq!(Route::parse(path), None, "{path}");
    }
}

#[test]
fn iframe() {
    // `IframePage.test_simpleUrl`, `test_versionedUrl`; `test_queriedUrl`
    // once the query is split off.
    for path in [
        "/iframe.html",
        "/iframe-a.html",
        "/iframe-.html",
        "/iframe-0.1.2.html",
        "/iframe-0.1.2abc-dirty.2144.html",
        "/iframe-1.6.1.html",
        "/iframe.html/",
        "/iframe_x.html",
    ] {
        assert_eq!(Route::parse(path), Some(Route::Iframe), "{path}");
    }
    // `IframePage.test_invalidUrl`, and characters outside [0-9a-z_.-].
    for path in [
        "/iframe.htm",
        "/iframe",
        "/IFRAME.HTML",
        "/IFRAME",
        "/iframe.HTML",
        "/iframe.xml",
        "/iframe-/.html",
        "/iframe-A.html",
        "/iframe-a b.html",
        "/iframe-%41.html",
        "/iframe-xhtml",
        "/iframe.html.gz",
        "/xiframe.html",
    ] {
        assert_eq!(Route::parse(path), None, "{path}");
    }
}

#[test]
fn every_transport() {
    for transport in Transport::ALL {
        let path = format!("/000/abc/{}", transport.name());
        assert_eq!(
            Route::parse(&path),
            Some(Route::Session {
                server_id: "000",
                session_id: "abc",
                transport
            }),
            "{path}"
        );
        // A trailing slash is allowed, as sockjs-node's `[/]?$`.
        let slashed = format!("{path}/");
        assert!(Route::parse(&slashed).is_some(), "{slashed}");
        assert_eq!(Transport::from_name(transport.name()), Some(transport));
    }
    let names: Vec<_> = Transport::ALL.iter().map(|t| t.name()).collect();
    assert_eq!(
        names,
        [
            "websocket",
            "xhr",
            "xhr_send",
            "xhr_streaming",
            "eventsource",
            "htmlfile",
            "jsonp",
            "jsonp_send"
        ]
    );
    assert_eq!(Transport::from_name("xhr_polling"), None);
    assert_eq!(Transport::from_name(""), None);
}

#[test]
fn session_ids() {
    // `SessionURLs.test_anyValue`: ids are taken raw, `%20` included.
    assert_eq!(
        Route::parse("/a/a/xhr"),
        session("a", "a", Transport::XhrPolling)
    );
    assert_eq!(
        Route::parse("/_/_/xhr"),
        session("_", "_", Transport::XhrPolling)
    );
    assert_eq!(
        Route::parse("/1/1/xhr"),
        session("1", "1", Transport::XhrPolling)
    );
    assert_eq!(
        Route::parse("/abcdefgh_i-j%20/abcdefg_i-j%20/xhr"),
        session("abcdefgh_i-j%20", "abcdefg_i-j%20", Transport::XhrPolling)
    );
    // `SessionURLs.test_ignoringServerId` uses a UUID session id.
    assert_eq!(
        Route::parse("/999/0f8fad5b-d9cb-469f-a165-70867728950e/xhr_send"),
        session(
            "999",
            "0f8fad5b-d9cb-469f-a165-70867728950e",
            Transport::XhrSend
        )
    );
    // `SessionURLs.test_invalidPaths`: empty ids, dots, too few or many parts.
    for suffix in ["//", "/a./a", "/a/a.", "/./.", "/", "///"] {
        let path = format!("{suffix}/xhr");
        assert_eq!(Route::parse(&path), None, "{path}");
    }
    for path in [
        "/a/.b/xhr",
        "/a/b%2E./xhr",
        "//a/xhr",
        "/a//xhr",
        "/a/b/c/xhr",
    ] {
        assert_eq!(Route::parse(path), None, "{path}");
    }
}

#[test]
fn prefix() {
    assert_eq!(strip_prefix("/echo", "/echo"), Some(""));
    assert_eq!(strip_prefix("/echo/", "/echo"), Some("/"));
    assert_eq!(strip_prefix("/echo/info", "/echo"), Some("/info"));
    assert_eq!(
        strip_prefix("/a/b/c/d/echo/000/x/xhr", "/a/b/c/d/echo"),
        Some("/000/x/xhr")
    );
    assert_eq!(strip_prefix("/echoes", "/echo"), None);
    assert_eq!(strip_prefix("/ech", "/echo"), None);
    assert_eq!(strip_prefix("/other/info", "/echo"), None);
    // The root prefix takes every path.
    assert_eq!(strip_prefix("/", ""), Some("/"));
    assert_eq!(strip_prefix("/info", ""), Some("/info"));
}

#[test]
fn methods_and_allow_headers() {
    let post = |name: &str| Route::Session {
        server_id: "a",
        session_id: "b",
        transport: Transport::from_name(name).unwrap(),
    };
    // `InfoTest.test_options`, `XhrPolling.test_options`,
    // `XhrStreaming.test_options`: the values are compared verbatim.
    assert_eq!(Route::Info.allow_header(), "OPTIONS, GET");
    for name in ["xhr", "xhr_send", "xhr_streaming"] {
        let route = post(name);
        assert_eq!(route.allow_header(), "OPTIONS, POST", "{name}");
        assert!(
            route.allows(Method::Post) && route.allows(Method::Options),
            "{name}"
        );
        assert!(!route.allows(Method::Get), "{name}");
    }
    // `WebsocketHttpErrors.test_invalidMethod`: POST to websocket is a 405.
    let websocket = post("websocket");
    assert!(!websocket.allows(Method::Post));
    assert!(websocket.allows(Method::Get));
    assert_eq!(websocket.allow_header(), "GET");
    for name in ["eventsource", "htmlfile", "jsonp"] {
        assert!(
            post(name).allows(Method::Get) && !post(name).allows(Method::Post),
            "{name}"
        );
        assert!(!post(name).allows(Method::Options), "{name}");
        assert_eq!(post(name).allow_header(), "GET");
    }
    assert!(post("jsonp_send").allows(Method::Post) && !post("jsonp_send").allows(Method::Get));
    assert_eq!(post("jsonp_send").allow_header(), "POST");
    for route in [Route::Greeting, Route::Iframe, Route::RawWebSocket] {
        assert!(
            route.allows(Method::Get) && !route.allows(Method::Post),
            "{route:?}"
        );
        assert!(
            !route.allows(Method::Head) && !route.allows(Method::Options),
            "{route:?}"
        );
        assert_eq!(route.allow_header(), "GET");
    }
    assert!(Route::Info.allows(Method::Get) && Route::Info.allows(Method::Options));
    assert!(!Route::Info.allows(Method::Post));
}

#[test]
fn transport_rules() {
    use Transport::*;
    // Content types from `XhrPolling.test_transport` (xhr and xhr_send),
    // `XhrStreaming`, `EventSource`, `HtmlFile` and `JsonPolling`
    // `.test_transport`, which compare them with spaces removed.
    let expected = [
        (WebSocket, None, 101, TransportRole::WebSocket),
        (
            XhrPolling,
            Some("application/javascript;charset=UTF-8"),
            200,
            TransportRole::Polling,
        ),
        (
            XhrSend,
            Some("text/plain;charset=UTF-8"),
            204,
            TransportRole::Send,
        ),
        (
            XhrStreaming,
            Some("application/javascript;charset=UTF-8"),
            200,
            TransportRole::Streaming,
        ),
        (
            EventSource,
            Some("text/event-stream;charset=UTF-8"),
            200,
            TransportRole::Streaming,
        ),
        (
            HtmlFile,
            Some("text/html;charset=UTF-8"),
            200,
            TransportRole::Streaming,
        ),
        (
            JsonpPolling,
            Some("application/javascript;charset=UTF-8"),
            200,
            TransportRole::Polling,
        ),
        (
            JsonpSend,
            Some("text/plain;charset=UTF-8"),
            200,
            TransportRole::Send,
        ),
    ];
    for (transport, content_type, status, role) in expected {
        let compact = transport.content_type().map(|t| t.replace(' ', ""));
        assert_eq!(compact.as_deref(), content_type, "{transport:?}");
        assert_eq!(transport.success_status(), status, "{transport:?}");
        assert_eq!(transport.role(), role, "{transport:?}");
        assert_eq!(
            transport.never_cached(),
            transport != WebSocket,
            "{transport:?}"
        );
        assert_eq!(
            transport.needs_callback(),
            matches!(transport, HtmlFile | JsonpPolling)
        );
    }
}

#[test]
fn header_values() {
    assert_eq!(
        NO_CACHE,
        "no-store, no-cache, no-transform, must-revalidate, max-age=0"
    );
    assert_eq!(ONE_YEAR_SECS, 31_536_000);
    assert_eq!(CACHE_ONE_YEAR, format!("public, max-age={ONE_YEAR_SECS}"));
    assert_eq!(ACCESS_CONTROL_MAX_AGE, ONE_YEAR_SECS.to_string());
    assert_eq!(
        CONTENT_TYPE_PLAIN.replace(' ', ""),
        "text/plain;charset=UTF-8"
    );
    assert_eq!(
        CONTENT_TYPE_JSON.replace(' ', ""),
        "application/json;charset=UTF-8"
    );
    assert_eq!(
        CONTENT_TYPE_HTML.replace(' ', ""),
        "text/html;charset=UTF-8"
    );
    assert_eq!(JSONP_SEND_OK, "ok");
    assert_eq!(
        WEBSOCKET_UPGRADE_REQUIRED,
        r#"Can "Upgrade" only to "WebSocket"."#
    );
    assert_eq!(DEFAULT_HEARTBEAT_DELAY.as_secs(), 25);
    assert_eq!(DEFAULT_DISCONNECT_DELAY.as_secs(), 5);
    assert_eq!(DEFAULT_RESPONSE_LIMIT, 131_072);
}

#[test]
fn close_reasons() {
    let all = [
        (NORMAL_CLOSURE, 1000, "Normal closure"),
        (CONNECTION_INTERRUPTED, 1002, "Connection interrupted"),
        (
            ANOTHER_CONNECTION_STILL_OPEN,
            2010,
            "Another connection still open",
        ),
        (GO_AWAY, 3000, "Go away!"),
        (BROKEN_FRAMING, 3000, "Broken framing."),
        (
            NO_RESPONSE_FROM_HEARTBEAT,
            3000,
            "No response from heartbeat",
        ),
    ];
    for (reason, code, text) in all {
        assert_eq!((reason.code, reason.reason), (code, text));
    }
}
