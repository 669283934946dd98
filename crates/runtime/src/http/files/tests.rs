use std::path::Path;

use super::*;

fn safe(raw: &str) -> Result<(String, bool), PathError> {
    safe_path(raw, DotFiles::Ignore)
        .map(|p| (p.relative.to_string_lossy().into_owned(), p.directory))
}

#[test]
fn plain_paths_are_decoded_and_kept() {
    assert_eq!(safe("css/site.css"), Ok(("css/site.css".into(), false)));
    assert_eq!(safe("caf%C3%A9.txt"), Ok(("café.txt".into(), false)));
    assert_eq!(safe("a%20b"), Ok(("a b".into(), false)));
    assert_eq!(safe("docs/"), Ok(("docs".into(), true)));
    assert_eq!(safe(""), Ok(("".into(), true)), "the directory itself");
    assert_eq!(
        safe("a%2Fb"),
        Ok(("a/b".into(), false)),
        "an encoded slash separates"
    );
    assert_eq!(
        safe("a..b"),
        Ok(("a..b".into(), false)),
        "dots inside a name are a name"
    );
    assert_eq!(safe("v1.2/x"), Ok(("v1.2/x".into(), false)));
}

#[test]
fn traversal_is_refused_plain_or_encoded() {
    for raw in [
        "..",
        "../package.json",
        "a/../../etc/passwd",
        "a/..",
        "%2e%2e/package.json",
        "%2E%2E/package.json",
        ".%2e/x",
        "..%2fpackage.json",
        "..%2Fpackage.json",
        "a/%2e%2e%2f%2e%2e%2fetc",
        ".",
        "./x",
        "a/./b",
        "%2e/x",
        "a//b",
        "/etc/passwd",
        "%2Fetc%2Fpasswd",
        "a/b//",
        "..\\x",
        "a\\b",
        "a%5cb",
        "%5C..%5Cx",
    ] {
        assert_eq!(safe(raw), Err(PathError::Refused), "{raw:?}");
    }
}

#[test]
fn malformed_escapes_and_nul_are_bad_requests() {
    for raw in ["a%", "a%2", "a%zz", "%g0", "a%2g/b"] {
        assert!(matches!(safe(raw), Err(PathError::Malformed(_))), "{raw:?}");
    }
    for raw in ["a%00b", "%00", "a.txt%00.png", "x/%00/y"] {
        assert_eq!(
            safe(raw),
            Err(PathError::Malformed("a NUL in the path")),
            "{raw:?}"
        );
    }
}

#[test]
fn dotfiles_are_refused_unless_allowed() {
    for raw in [".env", ".git/config", "a/.hidden", "%2egit/HEAD"] {
        assert_eq!(safe(raw), Err(PathError::Refused), "{raw:?}");
        let allowed = safe_path(raw, DotFiles::Allow).expect(raw);
        assert!(allowed.relative.to_string_lossy().contains('.'));
    }
    assert_eq!(
        safe_path("..", DotFiles::Allow),
        Err(PathError::Refused),
        "allowing dotfiles never allows `..`"
    );
    assert_eq!(
        safe_path(".well-known/x", DotFiles::Allow).map(|p| p.relative),
        Ok(PathBuf::from(".well-known/x"))
    );
}

#[test]
fn content_types_by_extension() {
    for (name, expected) in [
        ("index.html", "text/html; charset=utf-8"),
        ("INDEX.HTM", "text/html; charset=utf-8"),
        ("site.css", "text/css; charset=utf-8"),
        ("app.js", "text/javascript; charset=utf-8"),
        ("app.mjs", "text/javascript; charset=utf-8"),
        ("data.json", "application/json; charset=utf-8"),
        ("app.js.map", "application/json; charset=utf-8"),
        ("logo.svg", "image/svg+xml"),
        ("a.png", "image/png"),
        ("a.jpg", "image/jpeg"),
        ("a.jpeg", "image/jpeg"),
        ("a.gif", "image/gif"),
        ("a.webp", "image/webp"),
        ("a.avif", "image/avif"),
        ("favicon.ico", "image/x-icon"),
        ("a.txt", "text/plain; charset=utf-8"),
        ("a.xml", "text/xml; charset=utf-8"),
        ("a.pdf", "application/pdf"),
        ("a.wasm", "application/wasm"),
        ("a.woff", "font/woff"),
        ("a.woff2", "font/woff2"),
        ("a.mp4", "video/mp4"),
        ("a.webm", "video/webm"),
        ("a.mp3", "audio/mpeg"),
        ("a.csv", "text/csv; charset=utf-8"),
        ("README.md", "text/markdown; charset=utf-8"),
        ("Makefile", "application/octet-stream"),
        ("a.exe", "application/octet-stream"),
        ("app.js.br", "application/octet-stream"),
    ] {
        assert_eq!(content_type(Path::new(name)), expected, "{name}");
    }
}

#[test]
fn etags_and_cache_control() {
    assert_eq!(etag(0x1a2b, 0x17f0, None), "\"1a2b-17f0\"");
    assert_eq!(etag(10, 255, Some(ContentCoding::Br)), "\"a-ff-br\"");
    assert_eq!(etag(10, 255, Some(ContentCoding::Gzip)), "\"a-ff-gzip\"");
    assert_eq!(cache_control(0, false), "no-cache");
    assert_eq!(cache_control(0, true), "no-cache");
    assert_eq!(cache_control(60, false), "public, max-age=60");
    assert_eq!(
        cache_control(31_536_000, true),
        "public, max-age=31536000, immutable"
    );
}

const TAG: &str = "\"a-ff\"";
/// Sun, 06 Nov 1994 08:49:37 GMT
const MODIFIED: u64 = 784_111_777;
const DATE: &[u8] = b"Sun, 06 Nov 1994 08:49:37 GMT";
const EARLIER: &[u8] = b"Sun, 06 Nov 1994 08:49:36 GMT";
const LATER: &[u8] = b"Sunday, 06-Nov-94 08:49:38 GMT";

fn file() -> Validators<'static> {
    Validators {
        etag: Some(TAG),
        modified: Some(MODIFIED),
        size: 1000,
    }
}

fn plan_of(conditions: Conditions<'_>) -> Plan {
    plan(&conditions, &file(), true)
}

#[test]
fn if_none_match_compares_weakly_and_takes_lists_and_star() {
    for value in [
        &b"\"a-ff\""[..],
        b"W/\"a-ff\"",
        b"*",
        b" \"x\", \"a-ff\" ",
        b"\"x\",W/\"a-ff\"",
        b"\"with,comma\", \"a-ff\"",
        b",,\"a-ff\"",
    ] {
        let conditions = Conditions {
            if_none_match: Some(value),
            ..Conditions::default()
        };
        assert_eq!(
            plan_of(conditions),
            Plan::NotModified,
            "{:?}",
            String::from_utf8_lossy(value)
        );
    }
    for value in [
        &b"\"a-fe\""[..],
        b"a-ff",
        b"\"x\" \"a-ff\"",
        b"\"x\"; \"a-ff\"",
        b"",
        b"\"a-ff",
        b"w/\"a-ff\"",
    ] {
        let conditions = Conditions {
            if_none_match: Some(value),
            ..Conditions::default()
        };
        assert_eq!(
            plan_of(conditions),
            Plan::Whole,
            "{:?}",
            String::from_utf8_lossy(value)
        );
    }
}

#[test]
fn if_modified_since_counts_only_without_if_none_match() {
    let since = |date: &'static [u8]| Conditions {
        if_modified_since: Some(date),
        ..Conditions::default()
    };
    assert_eq!(plan_of(since(DATE)), Plan::NotModified);
    assert_eq!(plan_of(since(LATER)), Plan::NotModified);
    assert_eq!(plan_of(since(EARLIER)), Plan::Whole);
    assert_eq!(plan_of(since(b"not a date")), Plan::Whole, "ignored");
    let both = Conditions {
        if_none_match: Some(b"\"other\""),
        if_modified_since: Some(DATE),
        ..Conditions::default()
    };
    assert_eq!(plan_of(both), Plan::Whole, "If-None-Match decides alone");
}

#[test]
fn if_match_and_if_unmodified_since_fail_with_412() {
    let if_match = |value: &'static [u8]| Conditions {
        if_match: Some(value),
        ..Conditions::default()
    };
    assert_eq!(plan_of(if_match(b"\"a-ff\"")), Plan::Whole);
    assert_eq!(plan_of(if_match(b"*")), Plan::Whole);
    assert_eq!(
        plan_of(if_match(b"W/\"a-ff\"")),
        Plan::PreconditionFailed,
        "strong comparison"
    );
    assert_eq!(plan_of(if_match(b"\"b\"")), Plan::PreconditionFailed);
    let unmodified = |date: &'static [u8]| Conditions {
        if_unmodified_since: Some(date),
        ..Conditions::default()
    };
    assert_eq!(plan_of(unmodified(DATE)), Plan::Whole);
    assert_eq!(plan_of(unmodified(EARLIER)), Plan::PreconditionFailed);
    assert_eq!(plan_of(unmodified(b"garbage")), Plan::Whole);
    let both = Conditions {
        if_match: Some(b"\"a-ff\""),
        if_unmodified_since: Some(EARLIER),
        ..Conditions::default()
    };
    assert_eq!(plan_of(both), Plan::Whole, "If-Match decides alone");
}

#[test]
fn ranges_single_open_and_suffix() {
    let size = 1000;
    for (value, expected) in [
        (&b"bytes=0-99"[..], RangeSpec::Single { start: 0, end: 99 }),
        (
            b"bytes=100-",
            RangeSpec::Single {
                start: 100,
                end: 999,
            },
        ),
        (
            b"bytes=-100",
            RangeSpec::Single {
                start: 900,
                end: 999,
            },
        ),
        (b"bytes=-5000", RangeSpec::Single { start: 0, end: 999 }),
        (
            b"bytes=990-5000",
            RangeSpec::Single {
                start: 990,
                end: 999,
            },
        ),
        (
            b"bytes=999-999",
            RangeSpec::Single {
                start: 999,
                end: 999,
            },
        ),
        (b"Bytes = 1-2", RangeSpec::Single { start: 1, end: 2 }),
        (b"bytes=1000-", RangeSpec::Unsatisfiable),
        (b"bytes=1000-2000", RangeSpec::Unsatisfiable),
        (b"bytes=-0", RangeSpec::Unsatisfiable),
        (b"bytes=0-1,5-6", RangeSpec::Ignored),
        (b"bytes=5-4", RangeSpec::Ignored),
        (b"bytes=-", RangeSpec::Ignored),
        (b"bytes=a-b", RangeSpec::Ignored),
        (b"bytes=1-2x", RangeSpec::Ignored),
        (b"bytes=+1-2", RangeSpec::Ignored),
        (b"bytes 0-1", RangeSpec::Ignored),
        (b"items=0-1", RangeSpec::Ignored),
        (b"bytes=99999999999999999999-", RangeSpec::Ignored),
        (b"", RangeSpec::Ignored),
    ] {
        assert_eq!(
            parse_range(value, size),
            expected,
            "{:?}",
            String::from_utf8_lossy(value)
        );
    }
    assert_eq!(
        parse_range(b"bytes=0-", 0),
        RangeSpec::Unsatisfiable,
        "an empty file has no byte"
    );
    assert_eq!(parse_range(b"bytes=-1", 0), RangeSpec::Unsatisfiable);
}

#[test]
fn a_range_is_served_to_get_only_and_gated_by_if_range() {
    let range = Conditions {
        range: Some(b"bytes=10-19"),
        ..Conditions::default()
    };
    assert_eq!(plan_of(range), Plan::Part { start: 10, end: 19 });
    assert_eq!(
        plan(&range, &file(), false),
        Plan::Whole,
        "HEAD ignores Range"
    );
    let unsatisfiable = Conditions {
        range: Some(b"bytes=5000-"),
        ..Conditions::default()
    };
    assert_eq!(plan_of(unsatisfiable), Plan::Unsatisfiable);
    for (if_range, holds) in [
        (&b"\"a-ff\""[..], true),
        (b"W/\"a-ff\"", false),
        (b"\"other\"", false),
        (DATE, true),
        (EARLIER, false),
        (LATER, false),
        (b"garbage", false),
    ] {
        let conditions = Conditions {
            if_range: Some(if_range),
            ..range
        };
        let expected = if holds {
            Plan::Part { start: 10, end: 19 }
        } else {
            Plan::Whole
        };
        assert_eq!(
            plan_of(conditions),
            expected,
            "{:?}",
            String::from_utf8_lossy(if_range)
        );
    }
    let current = Conditions {
        if_none_match: Some(TAG.as_bytes()),
        ..range
    };
    assert_eq!(plan_of(current), Plan::NotModified, "304 before the range");
}

#[test]
fn a_sibling_by_the_clients_q_values() {
    use ContentCoding::{Br, Gzip};
    let choose = |value: Option<&str>, br: bool, gz: bool| {
        let accept = value.map_or_else(AcceptEncoding::default, |v| {
            AcceptEncoding::parse(v.as_bytes())
        });
        choose_coding(&accept, br, gz)
    };
    assert_eq!(
        choose(None, true, true),
        None,
        "no header: the file as it is"
    );
    assert_eq!(
        choose(Some(""), true, true),
        None,
        "empty: no coding wanted"
    );
    assert_eq!(
        choose(Some("gzip, deflate, br"), true, true),
        Some(Br),
        "br first on a tie"
    );
    assert_eq!(
        choose(Some("gzip, deflate, br"), false, true),
        Some(Gzip),
        "only .gz exists"
    );
    assert_eq!(
        choose(Some("gzip, deflate, br"), false, false),
        None,
        "no sibling"
    );
    assert_eq!(
        choose(Some("br"), false, true),
        None,
        "the client takes no gzip"
    );
    assert_eq!(choose(Some("br;q=0.5, gzip;q=0.8"), true, true), Some(Gzip));
    assert_eq!(choose(Some("br;q=0.8, gzip;q=0.5"), true, true), Some(Br));
    assert_eq!(choose(Some("br;q=0, gzip"), true, true), Some(Gzip));
    assert_eq!(choose(Some("br;q=0"), true, true), None);
    assert_eq!(choose(Some("x-gzip"), true, true), Some(Gzip));
    assert_eq!(choose(Some("deflate"), true, true), None, "not listed");
    assert_eq!(choose(Some("*"), true, true), Some(Br));
    assert_eq!(choose(Some("*;q=0"), true, true), None);
    assert_eq!(choose(Some("*, br;q=0"), true, true), Some(Gzip));
    assert_eq!(
        choose(Some("gzip;q=0.1, identity;q=0"), false, true),
        Some(Gzip)
    );
    assert_eq!(
        choose(Some("identity;q=0"), true, true),
        None,
        "nothing acceptable: the file as it is anyway"
    );
    assert_eq!(
        choose(Some("br;q=2, gzip"), true, true),
        Some(Gzip),
        "a malformed q-value says nothing"
    );
    assert_eq!(choose(Some("br;q=0.001, gzip;q=0"), true, true), Some(Br));
}

#[test]
fn a_handlers_path_is_checked_without_decoding() {
    let ok = safe_relative(b"reports/2024 q1.pdf", DotFiles::Ignore).expect("plain");
    assert_eq!(ok.relative, Path::new("reports/2024 q1.pdf"));
    // Not decoded: `%2e%2e` is a name of its own, not `..`.
    let literal = safe_relative(b"%2e%2e/x", DotFiles::Ignore).expect("literal");
    assert_eq!(literal.relative, Path::new("%2e%2e/x"));
    for refused in [
        &b"../secret"[..],
        b"a/../../b",
        b"a/./b",
        b"a//b",
        b"/etc/passwd",
        b"a\\..\\b",
        b".env",
        b"a/.git/config",
    ] {
        assert_eq!(
            safe_relative(refused, DotFiles::Ignore),
            Err(PathError::Refused),
            "{}",
            String::from_utf8_lossy(refused)
        );
    }
    assert!(matches!(
        safe_relative(b"a\0b", DotFiles::Allow),
        Err(PathError::Malformed(_))
    ));
    assert!(safe_relative(b".well-known/x", DotFiles::Allow).is_ok());
}

#[test]
fn conditions_are_read_from_raw_header_lines() {
    let lines = b"Host: x\r\nIF-NONE-MATCH:  \"a\" \r\nRange: bytes=0-9\r\nrange: bytes=5-6\r\n\
Accept-Encoding: gzip;q=0.5\r\naccept-encoding: br\r\nX-If-Range: no\r\n";
    let conditions = Conditions::from_lines(lines);
    assert_eq!(conditions.if_none_match, Some(&b"\"a\""[..]));
    assert_eq!(conditions.range, Some(&b"bytes=0-9"[..]), "the first line");
    assert_eq!(conditions.if_range, None, "names compare whole");
    assert_eq!(conditions.if_match, None);
    let accept = accept_encoding_in(lines);
    assert_eq!(accept.quality(ContentCoding::Gzip), 500);
    assert_eq!(accept.quality(ContentCoding::Br), 1000, "every line counts");
    assert!(!accept_encoding_in(b"Host: x\r\n").is_present());
}

#[test]
fn without_validators_only_star_and_no_dates_match() {
    let bare = Validators {
        etag: None,
        modified: None,
        size: 1000,
    };
    let with = |conditions: Conditions<'static>| plan(&conditions, &bare, true);
    let tag = Conditions {
        if_none_match: Some(TAG.as_bytes()),
        ..Conditions::default()
    };
    assert_eq!(with(tag), Plan::Whole, "no ETag: no tag matches");
    let star = Conditions {
        if_none_match: Some(b"*"),
        ..Conditions::default()
    };
    assert_eq!(with(star), Plan::NotModified);
    let if_match = Conditions {
        if_match: Some(TAG.as_bytes()),
        ..Conditions::default()
    };
    assert_eq!(with(if_match), Plan::PreconditionFailed);
    let since = Conditions {
        if_modified_since: Some(LATER),
        ..Conditions::default()
    };
    assert_eq!(with(since), Plan::Whole, "no Last-Modified: dates ignored");
    let if_range = Conditions {
        range: Some(b"bytes=0-9"),
        if_range: Some(DATE),
        ..Conditions::default()
    };
    assert_eq!(with(if_range), Plan::Whole, "If-Range needs a validator");
}
