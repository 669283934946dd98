//! The greeting, `/info` and the iframe page with its `ETag`. The iframe
//! template is checked against the MIT-licensed sockjs-protocol test
//! suite's `IframePage.iframe_body` pattern, written out here with its one
//! variable part.

use super::*;

#[test]
fn greeting() {
    // `BaseUrlGreeting.test_greeting`; `Http10.test_synchronous` wants a
    // Content-Length of 19.
    assert_eq!(GREETING, "Welcome to SockJS!\n");
    assert_eq!(GREETING.len(), 19);
}

fn info_json(info: Info) -> String {
    let mut out = Vec::new();
    info.write_json(&mut out);
    String::from_utf8(out).unwrap()
}

#[test]
fn info() {
    assert_eq!(
        info_json(Info {
            websocket: true,
            cookie_needed: false,
            entropy: 0
        }),
        r#"{"websocket":true,"origins":["*:*"],"cookie_needed":false,"entropy":0}"#
    );
    assert_eq!(
        info_json(Info {
            websocket: false,
            cookie_needed: true,
            entropy: u32::MAX
        }),
        r#"{"websocket":false,"origins":["*:*"],"cookie_needed":true,"entropy":4294967295}"#
    );
    // `InfoTest.test_basic`: parsed as JSON, the members have these types.
    let value: serde_json::Value = serde_json::from_str(&info_json(Info {
        websocket: true,
        cookie_needed: true,
        entropy: 12345,
    }))
    .unwrap();
    assert_eq!(value["websocket"], true);
    assert_eq!(value["cookie_needed"], true);
    assert_eq!(value["origins"], serde_json::json!(["*:*"]));
    assert_eq!(value["entropy"], 12345);
}

/// `IframePage.iframe_body` with the `(?P<sockjs_url>[^"]*)` group replaced
/// by `{url}` and the regex escapes removed.
const SUITE_IFRAME: &str = r#"<!DOCTYPE html>
<html>
<head>
  <meta http-equiv="X-UA-Compatible" content="IE=edge" />
  <meta http-equiv="Content-Type" content="text/html; charset=UTF-8" />
  <script>
    document.domain = document.domain;
    _sockjs_onload = function(){SockJS.bootstrap_iframe();};
  </script>
  <script src="{url}"></script>
</head>
<body>
  <h2>Don't panic!</h2>
  <p>This is a SockJS hidden iframe. It's used for cross domain magic.</p>
</body>
</html>"#;

#[test]
fn iframe_page_is_the_suites() {
    for url in [
        DEFAULT_SOCKJS_URL,
        "/static/sockjs.min.js",
        "http://localhost:8081/sockjs.js",
    ] {
        let page = IframePage::new(url);
        assert_eq!(page.html(), SUITE_IFRAME.replace("{url}", url));
        // The suite matches `r.body.strip()`: nothing to strip here.
        assert_eq!(page.html().trim(), page.html());
    }
}

#[test]
fn iframe_url_is_html_escaped() {
    let page = IframePage::new("/s.js?a=1&b=\"2\"<x>");
    assert!(
        page.html()
            .contains(r#"<script src="/s.js?a=1&amp;b=&quot;2&quot;&lt;x&gt;"></script>"#),
        "{}",
        page.html()
    );
    // The attribute stays `[^"]*`, as the suite's pattern needs.
    let src = page.html().split("src=\"").nth(1).unwrap();
    assert!(src.starts_with("/s.js?a=1&amp;b=&quot;2&quot;&lt;x&gt;\""));
}

#[test]
fn etag_is_a_stable_fnv1a() {
    // FNV-1a 64-bit reference vectors (draft-eastlake-fnv).
    assert_eq!(etag_for(b""), "\"cbf29ce484222325\"");
    assert_eq!(etag_for(b"a"), "\"af63dc4c8601ec8c\"");
    assert_eq!(etag_for(b"foobar"), "\"85944171f73967e8\"");
    // `IframePage.test_cacheability`: the same page, the same tag.
    let a = IframePage::new(DEFAULT_SOCKJS_URL);
    let b = IframePage::new(DEFAULT_SOCKJS_URL);
    assert_eq!(a.etag(), b.etag());
    assert_eq!(a.etag(), etag_for(a.html().as_bytes()));
    assert_eq!(a.etag().len(), 18);
    assert_ne!(a.etag(), IframePage::new("/other.js").etag());
}

#[test]
fn if_none_match() {
    let page = IframePage::new(DEFAULT_SOCKJS_URL);
    let tag = page.etag().to_owned();
    assert!(page.is_fresh(&tag));
    assert!(page.is_fresh(&format!(" {tag} ")));
    assert!(page.is_fresh("*"));
    assert!(page.is_fresh(&format!("W/{tag}")));
    assert!(page.is_fresh(&format!("\"other\", {tag}")));
    assert!(page.is_fresh(&format!("\"other\",W/{tag} ,\"more\"")));
    assert!(!page.is_fresh("\"other\""));
    assert!(!page.is_fresh(""));
    assert!(!page.is_fresh(tag.trim_matches('"')));
    assert!(!page.is_fresh(&format!("{tag}x")));
}
