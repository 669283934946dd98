//! Taking and validating the jsonp / htmlfile callback name. Queries are
//! ported from the MIT-licensed sockjs-protocol test suite
//! (`HtmlFile.test_transport`, `test_no_callback`, `test_invalid_callback`,
//! and the same tests of `JsonPolling`).

use super::*;

fn from(query: &str) -> Result<String, CallbackError> {
    Callback::from_query(Some(query)).map(|c| c.as_str().to_owned())
}

#[test]
fn error_texts_and_statuses() {
    assert_eq!(
        CallbackError::Missing.message(),
        "\"callback\" parameter required"
    );
    assert_eq!(
        CallbackError::Invalid.message(),
        "invalid \"callback\" parameter"
    );
    assert_eq!(CallbackError::Missing.status(), 500);
    assert_eq!(CallbackError::Invalid.status(), 500);
    assert_eq!(
        CallbackError::Invalid.to_string(),
        "invalid \"callback\" parameter"
    );
}

#[test]
fn suite_queries() {
    assert_eq!(from("c=%63allback"), Ok("callback".into()));
    assert_eq!(from("c=callback"), Ok("callback".into()));
    assert_eq!(from("c=x"), Ok("x".into()));
    // `test_no_callback`: no query at all.
    assert_eq!(Callback::from_query(None), Err(CallbackError::Missing));
    // `test_invalid_callback`.
    for value in ["%20", "*", "abc(", "abc%28"] {
        assert_eq!(
            from(&format!("c={value}")),
            Err(CallbackError::Invalid),
            "{value}"
        );
    }
}

#[test]
fn what_sockjs_client_sends() {
    // `_jp.a` and six random characters; the jsonp sender adds `i=`.
    assert_eq!(from("c=_jp.a1b2c3"), Ok("_jp.a1b2c3".into()));
    assert_eq!(from("c=_jp.aX-y_Z&t=1"), Ok("_jp.aX-y_Z".into()));
}

#[test]
fn parameter_names() {
    assert_eq!(from("callback=cb"), Ok("cb".into()));
    // `c` wins over `callback`, wherever it is.
    assert_eq!(from("callback=a&c=b"), Ok("b".into()));
    assert_eq!(from("c=b&callback=a"), Ok("b".into()));
    // The first of a repeated parameter counts.
    assert_eq!(from("c=a&c=b"), Ok("a".into()));
    assert_eq!(from("t=1&c=a"), Ok("a".into()));
    // An encoded name is still the name.
    assert_eq!(from("%63=a"), Ok("a".into()));
    for query in ["", "t=1", "cc=a", "C=a", "callbacks=a", "xc=a", "&"] {
        assert_eq!(from(query), Err(CallbackError::Missing), "{query:?}");
    }
}

#[test]
fn empty_is_missing() {
    assert_eq!(from("c="), Err(CallbackError::Missing));
    assert_eq!(from("c"), Err(CallbackError::Missing));
    assert_eq!(Callback::new(""), Err(CallbackError::Missing));
}

#[test]
fn allowed_characters() {
    let all = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.";
    for chunk in all.as_bytes().chunks(MAX_CALLBACK_LEN) {
        let name = std::str::from_utf8(chunk).unwrap();
        assert_eq!(from(&format!("c={name}")), Ok(name.to_owned()));
        assert_eq!(Callback::new(name).unwrap().as_str(), name);
    }
    for b in 0..=255u8 {
        let allowed = b.is_ascii_alphanumeric() || b"-_.".contains(&b);
        let query = format!("c=a%{b:02X}");
        assert_eq!(from(&query).is_ok(), allowed, "{query}");
    }
    for name in [
        "a b",
        "a+b",
        "a/b",
        "a;b",
        "a\"b",
        "é",
        "a\u{0}",
        "alert(1)//",
        "a,b",
    ] {
        assert_eq!(Callback::new(name), Err(CallbackError::Invalid), "{name:?}");
    }
    // `+` decodes to a space, which is refused.
    assert_eq!(from("c=a+b"), Err(CallbackError::Invalid));
}

#[test]
fn length_limit() {
    let longest = "a".repeat(MAX_CALLBACK_LEN);
    assert_eq!(from(&format!("c={longest}")), Ok(longest.clone()));
    assert_eq!(Callback::new(&longest).unwrap().as_str(), longest);
    let too_long = "a".repeat(MAX_CALLBACK_LEN + 1);
    assert_eq!(from(&format!("c={too_long}")), Err(CallbackError::Invalid));
    assert_eq!(Callback::new(&too_long), Err(CallbackError::Invalid));
    // The limit applies to the decoded name: 32 encoded `a`s are fine.
    assert_eq!(
        from(&format!("c={}", "%61".repeat(MAX_CALLBACK_LEN))),
        Ok(longest)
    );
}

#[test]
fn debug_shows_the_name() {
    assert_eq!(
        format!("{:?}", Callback::new("cb").unwrap()),
        "Callback(\"cb\")"
    );
}
