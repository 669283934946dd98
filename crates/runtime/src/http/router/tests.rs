//! The route table's tests: every rule of the module docs, backtracking,
//! a GitHub-like route set, and property tests against a naive matcher.

use super::*;
use std::hint::black_box;
use std::time::Instant;

/// A lookup's outcome in owned form, for `assert_eq!`.
#[derive(Debug, PartialEq)]
enum Got {
    /// The route's spec ("METHOD /pattern") and its (name, value) params.
    Found(String, Vec<(String, String)>),
    Allow(String),
    NotFound,
}

fn found(spec: &str, params: &[(&str, &str)]) -> Got {
    let params = params.iter().map(|&(n, v)| (n.into(), v.into()));
    Got::Found(spec.into(), params.collect())
}

fn allow(list: &str) -> Got {
    Got::Allow(list.into())
}

/// "GET /a" is `(Some("GET"), "/a")`; "ALL /a" is `(None, "/a")`.
fn spec(spec: &str) -> (Option<&str>, &str) {
    let (method, pattern) = spec.split_once(' ').expect("METHOD /pattern");
    (Some(method).filter(|m| *m != "ALL"), pattern)
}

/// A table whose values are the route specs.
fn table(specs: &[&str]) -> Router<String> {
    let mut router = Router::new();
    for s in specs {
        let (method, pattern) = spec(s);
        if let Err(e) = router.insert(method, pattern, s.to_string()) {
            panic!("{s}: {e}");
        }
    }
    router
}

fn get(router: &Router<String>, method: &str, path: &str) -> Got {
    let mut params = vec!["stale"];
    match router.find(method, path, &mut params) {
        Match::Found { value, names } => {
            assert_eq!(names.len(), params.len(), "{method} {path}");
            let pairs = names.iter().zip(&params);
            Got::Found(
                value.clone(),
                pairs.map(|(n, v)| (n.to_string(), v.to_string())).collect(),
            )
        }
        Match::MethodNotAllowed { allow } => {
            assert!(params.is_empty());
            Got::Allow(allow.into())
        }
        Match::NotFound => {
            assert!(params.is_empty());
            Got::NotFound
        }
    }
}

#[test]
fn usage_example() {
    let mut router = Router::new();
    router.insert(Some("GET"), "/users/:id", 1).unwrap();
    router.insert(Some("POST"), "/users", 2).unwrap();
    let mut params = Vec::new();
    match router.find("GET", "/users/42", &mut params) {
        Match::Found { value, names } => {
            assert_eq!((*value, &*names[0], params[0]), (1, "id", "42"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        router.find("PUT", "/users", &mut params),
        Match::MethodNotAllowed { allow: "POST" }
    );
    assert_eq!(router.find("GET", "/nope", &mut params), Match::NotFound);
}

#[test]
fn static_routes_are_exact_case_sensitive_and_strict_about_slashes() {
    let r = table(&[
        "GET /",
        "GET /a",
        "GET /a/",
        "GET /about",
        "GET /a/b",
        "GET /A",
    ]);
    assert_eq!(get(&r, "GET", "/"), found("GET /", &[]));
    assert_eq!(get(&r, "GET", "/a"), found("GET /a", &[]));
    assert_eq!(get(&r, "GET", "/a/"), found("GET /a/", &[]));
    assert_eq!(get(&r, "GET", "/about"), found("GET /about", &[]));
    assert_eq!(get(&r, "GET", "/A"), found("GET /A", &[]));
    assert_eq!(get(&r, "GET", "/a/b"), found("GET /a/b", &[]));
    for path in [
        "", "/ab", "/abo", "/about/", "/a/b/", "/a//b", "/B", "//", "a", "/a%2Fb",
    ] {
        assert_eq!(get(&r, "GET", path), Got::NotFound, "{path:?}");
    }
}

#[test]
fn a_parameter_matches_one_non_empty_segment() {
    let r = table(&[
        "GET /users/:id",
        "GET /users/:id/posts/:post",
        "GET /:a/:b/:c/:d",
    ]);
    assert_eq!(
        get(&r, "GET", "/users/42"),
        found("GET /users/:id", &[("id", "42")])
    );
    assert_eq!(
        get(&r, "GET", "/users/%20x:y*"),
        found("GET /users/:id", &[("id", "%20x:y*")])
    );
    assert_eq!(
        get(&r, "GET", "/users/7/posts/9"),
        found("GET /users/:id/posts/:post", &[("id", "7"), ("post", "9")])
    );
    assert_eq!(
        get(&r, "GET", "/w/x/y/z"),
        found(
            "GET /:a/:b/:c/:d",
            &[("a", "w"), ("b", "x"), ("c", "y"), ("d", "z")]
        )
    );
    for path in [
        "/users/",
        "/users",
        "/users/42/",
        "/users/4/2",
        "/users/7/posts/",
        "/w/x//z",
    ] {
        assert_eq!(get(&r, "GET", path), Got::NotFound, "{path:?}");
    }
}

#[test]
fn parameters_are_raw_utf8_slices() {
    let r = table(&["GET /é/:x/*", "GET /éa/:y"]);
    assert_eq!(
        get(&r, "GET", "/é/ü/ß/%C3"),
        found("GET /é/:x/*", &[("x", "ü"), ("*", "ß/%C3")])
    );
    assert_eq!(get(&r, "GET", "/éa/ü"), found("GET /éa/:y", &[("y", "ü")]));
    // A path that diverges inside a multi-byte character.
    assert_eq!(get(&r, "GET", "/è/x/"), Got::NotFound);
}

#[test]
fn a_wildcard_matches_the_rest_including_nothing() {
    let r = table(&["GET /static/*", "GET /*"]);
    let w = |rest| found("GET /static/*", &[("*", rest)]);
    assert_eq!(get(&r, "GET", "/static/"), w(""));
    assert_eq!(get(&r, "GET", "/static/a/b.css"), w("a/b.css"));
    assert_eq!(get(&r, "GET", "/static//x/"), w("/x/"));
    assert_eq!(
        get(&r, "GET", "/static"),
        found("GET /*", &[("*", "static")])
    );
    assert_eq!(get(&r, "GET", "/"), found("GET /*", &[("*", "")]));
    assert_eq!(get(&r, "GET", ""), Got::NotFound);
    let r = table(&["GET /files/:dir/*"]);
    assert_eq!(
        get(&r, "GET", "/files/d/a/b"),
        found("GET /files/:dir/*", &[("dir", "d"), ("*", "a/b")])
    );
    assert_eq!(get(&r, "GET", "/files/d"), Got::NotFound);
}

#[test]
fn static_beats_parameter_beats_wildcard() {
    let routes = [
        "GET /a/*",
        "GET /a/:x",
        "GET /a/b",
        "GET /a/",
        "GET /a/:x/c",
    ];
    // Insertion order does not matter.
    for r in [
        table(&routes),
        table(&[routes[4], routes[3], routes[2], routes[1], routes[0]]),
    ] {
        assert_eq!(get(&r, "GET", "/a/b"), found("GET /a/b", &[]));
        assert_eq!(get(&r, "GET", "/a/c"), found("GET /a/:x", &[("x", "c")]));
        assert_eq!(get(&r, "GET", "/a/"), found("GET /a/", &[]));
        assert_eq!(
            get(&r, "GET", "/a/b/c"),
            found("GET /a/:x/c", &[("x", "b")])
        );
        assert_eq!(get(&r, "GET", "/a/b/d"), found("GET /a/*", &[("*", "b/d")]));
        assert_eq!(get(&r, "GET", "/a/bc"), found("GET /a/:x", &[("x", "bc")]));
    }
}

#[test]
fn backtracking_from_static_to_parameter_to_wildcard() {
    let r = table(&["GET /a/b/d", "GET /a/:x/c"]);
    assert_eq!(
        get(&r, "GET", "/a/b/c"),
        found("GET /a/:x/c", &[("x", "b")])
    );
    assert_eq!(get(&r, "GET", "/a/b/d"), found("GET /a/b/d", &[]));
    assert_eq!(get(&r, "GET", "/a/b/e"), Got::NotFound);

    // Several levels up (echo's example): /a/c/f fails under /a/c/d and
    // /a/:b, and is matched by /:e/c/f.
    let r = table(&[
        "GET /a/:b/c",
        "GET /a/c/d",
        "GET /a/c/df",
        "GET /:e/c/f",
        "GET /*",
    ]);
    assert_eq!(
        get(&r, "GET", "/a/c/f"),
        found("GET /:e/c/f", &[("e", "a")])
    );
    assert_eq!(get(&r, "GET", "/a/c/df"), found("GET /a/c/df", &[]));
    assert_eq!(
        get(&r, "GET", "/a/c/c"),
        found("GET /a/:b/c", &[("b", "c")])
    );
    assert_eq!(
        get(&r, "GET", "/a/c/dx"),
        found("GET /*", &[("*", "a/c/dx")])
    );

    // A split inside a segment: /abd fails after matching "/ab".
    let r = table(&["GET /abc/:x", "GET /abd", "GET /:y/z"]);
    assert_eq!(
        get(&r, "GET", "/abc/q"),
        found("GET /abc/:x", &[("x", "q")])
    );
    assert_eq!(
        get(&r, "GET", "/abd/z"),
        found("GET /:y/z", &[("y", "abd")])
    );
    assert_eq!(
        get(&r, "GET", "/abc/z"),
        found("GET /abc/:x", &[("x", "z")])
    );
    assert_eq!(
        get(&r, "GET", "/abcd/z"),
        found("GET /:y/z", &[("y", "abcd")])
    );
}

#[test]
fn backtracking_drops_the_parameters_of_failed_branches() {
    let r = table(&["GET /:a/:b/:c/x", "GET /:a/k/*", "GET /:a/:b/*", "GET /*"]);
    let (a, b) = (("a", "1"), ("b", "2"));
    assert_eq!(
        get(&r, "GET", "/1/2/3/x"),
        found("GET /:a/:b/:c/x", &[a, b, ("c", "3")])
    );
    // Pushes a, b and c, fails at "y", keeps a and b for the wildcard.
    assert_eq!(
        get(&r, "GET", "/1/2/3/y"),
        found("GET /:a/:b/*", &[a, b, ("*", "3/y")])
    );
    assert_eq!(
        get(&r, "GET", "/1/k/3/y"),
        found("GET /:a/k/*", &[a, ("*", "3/y")])
    );
    // Static "k" beats the parameter b, so this is not /:a/:b/:c/x.
    assert_eq!(
        get(&r, "GET", "/1/k/3/x"),
        found("GET /:a/k/*", &[a, ("*", "3/x")])
    );
    assert_eq!(get(&r, "GET", "/1/2"), found("GET /*", &[("*", "1/2")]));
}

#[test]
fn parameter_names_belong_to_routes_not_nodes() {
    let r = table(&[
        "GET /users/:id",
        "GET /users/:name/posts",
        "POST /users/:uid",
    ]);
    assert_eq!(
        get(&r, "GET", "/users/1"),
        found("GET /users/:id", &[("id", "1")])
    );
    assert_eq!(
        get(&r, "POST", "/users/1"),
        found("POST /users/:uid", &[("uid", "1")])
    );
    assert_eq!(
        get(&r, "GET", "/users/ann/posts"),
        found("GET /users/:name/posts", &[("name", "ann")])
    );
}

#[test]
fn a_specific_method_beats_all_and_head_falls_back_to_get() {
    let r = table(&[
        "ALL /a", "GET /a", "GET /b", "HEAD /c", "GET /c", "ALL /d", "POST /e",
    ]);
    assert_eq!(get(&r, "GET", "/a"), found("GET /a", &[]));
    assert_eq!(get(&r, "DELETE", "/a"), found("ALL /a", &[]));
    assert_eq!(get(&r, "BREW", "/a"), found("ALL /a", &[]));
    // Automatic HEAD is preferred to "all": GET is the more specific route.
    assert_eq!(get(&r, "HEAD", "/a"), found("GET /a", &[]));
    assert_eq!(get(&r, "HEAD", "/b"), found("GET /b", &[]));
    // An explicit HEAD route wins over automatic HEAD.
    assert_eq!(get(&r, "HEAD", "/c"), found("HEAD /c", &[]));
    assert_eq!(get(&r, "GET", "/c"), found("GET /c", &[]));
    assert_eq!(get(&r, "HEAD", "/d"), found("ALL /d", &[]));
    assert_eq!(get(&r, "HEAD", "/e"), allow("POST"));
    // Methods are case-sensitive.
    assert_eq!(get(&r, "get", "/b"), allow("GET, HEAD"));
}

#[test]
fn method_not_allowed_lists_the_methods_in_a_fixed_order() {
    let r = table(&[
        "PURGE /r",
        "TRACE /r",
        "PATCH /r",
        "OPTIONS /r",
        "DELETE /r",
        "PUT /r",
        "POST /r",
        "GET /r",
        "BREW /r",
        "M-SEARCH /r",
        "HEAD /h",
        "POST /p",
        "GET /p",
    ]);
    let all = "GET, HEAD, POST, PUT, DELETE, OPTIONS, PATCH, TRACE, BREW, M-SEARCH, PURGE";
    assert_eq!(get(&r, "CONNECT", "/r"), allow(all));
    assert_eq!(get(&r, "GET", "/h"), allow("HEAD"));
    assert_eq!(get(&r, "PUT", "/p"), allow("GET, HEAD, POST"));
    assert_eq!(get(&r, "PUT", "/q"), Got::NotFound);
    assert_eq!(get(&r, "M-SEARCH", "/r"), found("M-SEARCH /r", &[]));
}

/// The rule for method conflicts across shapes: the first shape in
/// priority order that accepts the method wins; when none does, the
/// highest-priority shape matching the path gives the `Allow` list.
#[test]
fn a_route_never_hides_a_lower_priority_route_of_another_method() {
    let r = table(&[
        "GET /a/b",
        "POST /a/:x",
        "DELETE /a/*",
        "GET /f/x",
        "ALL /f/*",
    ]);
    assert_eq!(get(&r, "GET", "/a/b"), found("GET /a/b", &[]));
    assert_eq!(get(&r, "POST", "/a/b"), found("POST /a/:x", &[("x", "b")]));
    assert_eq!(
        get(&r, "DELETE", "/a/b"),
        found("DELETE /a/*", &[("*", "b")])
    );
    assert_eq!(get(&r, "PUT", "/a/b"), allow("GET, HEAD"));
    assert_eq!(get(&r, "PUT", "/a/c"), allow("POST"));
    assert_eq!(get(&r, "PUT", "/a/c/d"), allow("DELETE"));
    assert_eq!(get(&r, "GET", "/a/c"), allow("POST"));
    assert_eq!(get(&r, "PUT", "/f/x"), found("ALL /f/*", &[("*", "x")]));
    // Deeper: the static branch matches the path with the wrong method,
    // backtracking finds the parameter branch with the right one.
    let r = table(&["GET /v/k/s", "PUT /v/:id/s"]);
    assert_eq!(
        get(&r, "PUT", "/v/k/s"),
        found("PUT /v/:id/s", &[("id", "k")])
    );
    assert_eq!(get(&r, "POST", "/v/k/s"), allow("GET, HEAD"));
}

#[test]
fn invalid_patterns_are_refused_with_a_reason() {
    let cases = [
        ("", "a pattern must start with '/'"),
        ("a/b", "a pattern must start with '/'"),
        ("*", "a pattern must start with '/'"),
        ("/*/a", "'*' may only be the last segment"),
        ("/*/", "'*' may only be the last segment"),
        ("/a*", "'*' may only be a whole segment"),
        ("/a/*b", "'*' may only be a whole segment"),
        ("/a/**", "'*' may only be a whole segment"),
        ("/a:b", "':' may only start a segment"),
        ("/a/b:", "':' may only start a segment"),
        ("/:a:b", "':' may only start a segment"),
        ("/:", "empty parameter name"),
        ("/a/:/b", "empty parameter name"),
        (
            "/:a-b",
            "a parameter name may only contain A-Z, a-z, 0-9 and '_'",
        ),
        (
            "/:é",
            "a parameter name may only contain A-Z, a-z, 0-9 and '_'",
        ),
        (
            "/:a*",
            "a parameter name may only contain A-Z, a-z, 0-9 and '_'",
        ),
        ("/:id/x/:id", "a parameter name is repeated"),
        (
            "/a?b=1",
            "'?', '#', spaces and control characters never occur in a request path",
        ),
        (
            "/a#b",
            "'?', '#', spaces and control characters never occur in a request path",
        ),
        (
            "/a b",
            "'?', '#', spaces and control characters never occur in a request path",
        ),
        (
            "/a\nb",
            "'?', '#', spaces and control characters never occur in a request path",
        ),
    ];
    let mut r = Router::new();
    for (pattern, reason) in cases {
        assert_eq!(
            r.insert(Some("GET"), pattern, ()),
            Err(RouteError::Invalid(reason)),
            "{pattern:?}"
        );
    }
    for pattern in [
        "/",
        "//",
        "/a//b",
        "/:A_9z/*",
        "/a-b.c~!$&'()+,;=@%20",
        "/*",
    ] {
        assert_eq!(r.insert(Some("GET"), pattern, ()), Ok(()), "{pattern:?}");
    }
    assert_eq!(r.len(), 6);
}

#[test]
fn invalid_methods_are_refused() {
    let mut r = Router::new();
    for method in ["", "get", "Get", "GET ", "G\u{e9}T", "GE(T", "GE/T"] {
        assert_eq!(
            r.insert(Some(method), "/", ()),
            Err(RouteError::InvalidMethod),
            "{method:?}"
        );
    }
    for method in ["GET", "M-SEARCH", "X_1", "A!#$%&'*+.^`|~"] {
        assert_eq!(r.insert(Some(method), "/", ()), Ok(()), "{method:?}");
    }
    assert!(r.insert(None, "/", ()).is_ok());
}

#[test]
fn duplicates_are_refused_and_change_nothing() {
    let mut r = table(&[
        "GET /a/:id",
        "ALL /a/:id",
        "POST /a/:id",
        "BREW /a/:id",
        "GET /s/*",
    ]);
    assert_eq!(
        r.insert(Some("GET"), "/a/:id", String::new()),
        Err(RouteError::Duplicate)
    );
    assert_eq!(
        r.insert(Some("GET"), "/a/:other", String::new()),
        Err(RouteError::Duplicate)
    );
    assert_eq!(
        r.insert(None, "/a/:x", String::new()),
        Err(RouteError::Duplicate)
    );
    assert_eq!(
        r.insert(Some("BREW"), "/a/:x", String::new()),
        Err(RouteError::Duplicate)
    );
    assert_eq!(
        r.insert(Some("GET"), "/s/*", String::new()),
        Err(RouteError::Duplicate)
    );
    assert_eq!(r.len(), 5);
    assert_eq!(get(&r, "GET", "/a/1"), found("GET /a/:id", &[("id", "1")]));
    assert_eq!(get(&r, "PUT", "/a/1"), found("ALL /a/:id", &[("id", "1")]));
    // Not duplicates: another method, or another shape.
    assert!(r
        .insert(Some("HEAD"), "/a/:id", "HEAD /a/:id".into())
        .is_ok());
    assert!(r
        .insert(Some("GET"), "/a/:id/", "GET /a/:id/".into())
        .is_ok());
    assert!(r.insert(Some("GET"), "/a/id", "GET /a/id".into()).is_ok());
    assert!(r.insert(Some("GET"), "/s/:x", "GET /s/:x".into()).is_ok());
    assert_eq!(
        get(&r, "HEAD", "/a/1"),
        found("HEAD /a/:id", &[("id", "1")])
    );
    assert_eq!(get(&r, "GET", "/s/x"), found("GET /s/:x", &[("x", "x")]));
    assert_eq!(get(&r, "GET", "/s/"), found("GET /s/*", &[("*", "")]));
}

#[test]
fn routes_are_listed_in_insertion_order() {
    let mut r = Router::new();
    assert!(r.is_empty());
    r.insert(Some("POST"), "/b", 1).unwrap();
    r.insert(None, "/a/:x", 2).unwrap();
    r.insert(Some("GET"), "/b", 3).unwrap();
    assert_eq!(
        r.insert(Some("get"), "/c", 4),
        Err(RouteError::InvalidMethod)
    );
    assert!(!r.is_empty());
    assert_eq!(r.len(), 3);
    let listed: Vec<_> = r.routes().collect();
    assert_eq!(
        listed,
        [
            (Some("POST"), "/b", &1),
            (None, "/a/:x", &2),
            (Some("GET"), "/b", &3)
        ]
    );
    assert_eq!(
        format!("{r:?}"),
        r#"[(Some("POST"), "/b", 1), (None, "/a/:x", 2), (Some("GET"), "/b", 3)]"#
    );
}

#[test]
fn errors_display_their_reason() {
    let e = RouteError::Invalid("empty parameter name");
    assert_eq!(e.to_string(), "invalid route pattern: empty parameter name");
    let boxed: Box<dyn Error> = Box::new(RouteError::Duplicate);
    assert!(boxed.to_string().contains("already exists"));
    assert!(RouteError::InvalidMethod.to_string().contains("uppercase"));
}

/// A route set shaped like GitHub's REST API.
const GITHUB: &[&str] = &[
    "GET /",
    "GET /user",
    "PATCH /user",
    "GET /user/repos",
    "POST /user/repos",
    "GET /user/orgs",
    "GET /user/followers",
    "GET /user/following",
    "GET /user/following/:username",
    "PUT /user/following/:username",
    "DELETE /user/following/:username",
    "GET /user/keys",
    "POST /user/keys",
    "GET /user/keys/:key_id",
    "DELETE /user/keys/:key_id",
    "GET /user/emails",
    "POST /user/emails",
    "DELETE /user/emails",
    "GET /user/starred",
    "GET /user/starred/:owner/:repo",
    "PUT /user/starred/:owner/:repo",
    "DELETE /user/starred/:owner/:repo",
    "GET /user/subscriptions",
    "GET /user/issues",
    "GET /users",
    "GET /users/:username",
    "GET /users/:username/repos",
    "GET /users/:username/orgs",
    "GET /users/:username/followers",
    "GET /users/:username/following",
    "GET /users/:username/following/:target_user",
    "GET /users/:username/keys",
    "GET /users/:username/starred",
    "GET /users/:username/subscriptions",
    "GET /users/:username/events",
    "GET /users/:username/events/public",
    "GET /users/:username/events/orgs/:org",
    "GET /users/:username/received_events",
    "GET /users/:username/gists",
    "GET /orgs/:org",
    "PATCH /orgs/:org",
    "GET /orgs/:org/repos",
    "POST /orgs/:org/repos",
    "GET /orgs/:org/members",
    "GET /orgs/:org/members/:username",
    "DELETE /orgs/:org/members/:username",
    "GET /orgs/:org/public_members",
    "GET /orgs/:org/teams",
    "POST /orgs/:org/teams",
    "GET /orgs/:org/teams/:team_slug",
    "PATCH /orgs/:org/teams/:team_slug",
    "DELETE /orgs/:org/teams/:team_slug",
    "GET /orgs/:org/teams/:team_slug/members",
    "GET /orgs/:org/events",
    "GET /orgs/:org/issues",
    "GET /orgs/:org/hooks",
    "POST /orgs/:org/hooks",
    "GET /repos/:owner/:repo",
    "PATCH /repos/:owner/:repo",
    "DELETE /repos/:owner/:repo",
    "GET /repos/:owner/:repo/contributors",
    "GET /repos/:owner/:repo/languages",
    "GET /repos/:owner/:repo/tags",
    "GET /repos/:owner/:repo/branches",
    "GET /repos/:owner/:repo/branches/:branch",
    "GET /repos/:owner/:repo/branches/:branch/protection",
    "PUT /repos/:owner/:repo/branches/:branch/protection",
    "DELETE /repos/:owner/:repo/branches/:branch/protection",
    "GET /repos/:owner/:repo/collaborators",
    "GET /repos/:owner/:repo/collaborators/:username",
    "PUT /repos/:owner/:repo/collaborators/:username",
    "DELETE /repos/:owner/:repo/collaborators/:username",
    "GET /repos/:owner/:repo/comments",
    "GET /repos/:owner/:repo/comments/:comment_id",
    "PATCH /repos/:owner/:repo/comments/:comment_id",
    "DELETE /repos/:owner/:repo/comments/:comment_id",
    "GET /repos/:owner/:repo/commits",
    "GET /repos/:owner/:repo/commits/:ref",
    "GET /repos/:owner/:repo/commits/:ref/comments",
    "POST /repos/:owner/:repo/commits/:commit_sha/comments",
    "GET /repos/:owner/:repo/commits/:ref/status",
    "GET /repos/:owner/:repo/commits/:ref/statuses",
    "GET /repos/:owner/:repo/compare/:basehead",
    "GET /repos/:owner/:repo/contents/*",
    "PUT /repos/:owner/:repo/contents/*",
    "DELETE /repos/:owner/:repo/contents/*",
    "GET /repos/:owner/:repo/readme",
    "GET /repos/:owner/:repo/tarball/:ref",
    "GET /repos/:owner/:repo/zipball/:ref",
    "GET /repos/:owner/:repo/keys",
    "POST /repos/:owner/:repo/keys",
    "GET /repos/:owner/:repo/keys/:key_id",
    "DELETE /repos/:owner/:repo/keys/:key_id",
    "GET /repos/:owner/:repo/forks",
    "POST /repos/:owner/:repo/forks",
    "GET /repos/:owner/:repo/hooks",
    "POST /repos/:owner/:repo/hooks",
    "GET /repos/:owner/:repo/hooks/:hook_id",
    "PATCH /repos/:owner/:repo/hooks/:hook_id",
    "DELETE /repos/:owner/:repo/hooks/:hook_id",
    "POST /repos/:owner/:repo/hooks/:hook_id/tests",
    "POST /repos/:owner/:repo/merges",
    "GET /repos/:owner/:repo/releases",
    "POST /repos/:owner/:repo/releases",
    "GET /repos/:owner/:repo/releases/latest",
    "GET /repos/:owner/:repo/releases/tags/:tag",
    "GET /repos/:owner/:repo/releases/:release_id",
    "PATCH /repos/:owner/:repo/releases/:release_id",
    "DELETE /repos/:owner/:repo/releases/:release_id",
    "GET /repos/:owner/:repo/releases/:release_id/assets",
    "GET /repos/:owner/:repo/stargazers",
    "GET /repos/:owner/:repo/subscribers",
    "GET /repos/:owner/:repo/subscription",
    "PUT /repos/:owner/:repo/subscription",
    "DELETE /repos/:owner/:repo/subscription",
    "GET /repos/:owner/:repo/issues",
    "POST /repos/:owner/:repo/issues",
    "GET /repos/:owner/:repo/issues/comments",
    "GET /repos/:owner/:repo/issues/comments/:comment_id",
    "GET /repos/:owner/:repo/issues/events",
    "GET /repos/:owner/:repo/issues/:issue_number",
    "PATCH /repos/:owner/:repo/issues/:issue_number",
    "GET /repos/:owner/:repo/issues/:issue_number/comments",
    "POST /repos/:owner/:repo/issues/:issue_number/comments",
    "GET /repos/:owner/:repo/issues/:issue_number/labels",
    "POST /repos/:owner/:repo/issues/:issue_number/labels",
    "PUT /repos/:owner/:repo/issues/:issue_number/labels",
    "DELETE /repos/:owner/:repo/issues/:issue_number/labels",
    "DELETE /repos/:owner/:repo/issues/:issue_number/labels/:name",
    "GET /repos/:owner/:repo/labels",
    "GET /repos/:owner/:repo/labels/:name",
    "GET /repos/:owner/:repo/milestones",
    "GET /repos/:owner/:repo/milestones/:milestone_number",
    "GET /repos/:owner/:repo/pulls",
    "POST /repos/:owner/:repo/pulls",
    "GET /repos/:owner/:repo/pulls/comments",
    "GET /repos/:owner/:repo/pulls/:pull_number",
    "PATCH /repos/:owner/:repo/pulls/:pull_number",
    "GET /repos/:owner/:repo/pulls/:pull_number/commits",
    "GET /repos/:owner/:repo/pulls/:pull_number/files",
    "GET /repos/:owner/:repo/pulls/:pull_number/merge",
    "PUT /repos/:owner/:repo/pulls/:pull_number/merge",
    "POST /repos/:owner/:repo/git/blobs",
    "GET /repos/:owner/:repo/git/blobs/:file_sha",
    "GET /repos/:owner/:repo/git/commits/:commit_sha",
    "GET /repos/:owner/:repo/git/ref/*",
    "GET /repos/:owner/:repo/git/trees/:tree_sha",
    "GET /repos/:owner/:repo/stats/contributors",
    "GET /repos/:owner/:repo/stats/commit_activity",
    "GET /repos/:owner/:repo/events",
    "GET /repos/:owner/:repo/notifications",
    "PUT /repos/:owner/:repo/notifications",
    "GET /gists",
    "POST /gists",
    "GET /gists/public",
    "GET /gists/starred",
    "GET /gists/:gist_id",
    "PATCH /gists/:gist_id",
    "DELETE /gists/:gist_id",
    "GET /gists/:gist_id/star",
    "PUT /gists/:gist_id/star",
    "DELETE /gists/:gist_id/star",
    "POST /gists/:gist_id/forks",
    "GET /events",
    "GET /feeds",
    "GET /notifications",
    "PUT /notifications",
    "GET /notifications/threads/:thread_id",
    "GET /search/repositories",
    "GET /search/code",
    "GET /search/issues",
    "GET /search/users",
    "GET /rate_limit",
    "GET /emojis",
    "GET /meta",
    "POST /markdown",
    "POST /markdown/raw",
];

/// A path that `pattern` matches, with the parameter values it yields.
fn example_path(pattern: &str) -> (String, Vec<(String, String)>) {
    let mut params = Vec::new();
    let segments: Vec<String> = pattern[1..]
        .split('/')
        .enumerate()
        .map(|(i, seg)| match seg.strip_prefix(':') {
            Some(name) => {
                params.push((name.to_string(), format!("v{i}")));
                format!("v{i}")
            }
            None if seg == "*" => {
                params.push(("*".into(), "src/lib.rs".into()));
                "src/lib.rs".into()
            }
            None => seg.into(),
        })
        .collect();
    (format!("/{}", segments.join("/")), params)
}

#[test]
fn a_github_like_route_set() {
    let r = table(GITHUB);
    assert_eq!(r.len(), GITHUB.len());
    assert!(GITHUB.len() > 170);
    for s in GITHUB {
        let (method, pattern) = spec(s);
        let (path, params) = example_path(pattern);
        assert_eq!(
            get(&r, method.unwrap(), &path),
            Got::Found(s.to_string(), params.clone()),
            "{path}"
        );
        if method == Some("GET") {
            assert_eq!(
                get(&r, "HEAD", &path),
                Got::Found(s.to_string(), params),
                "HEAD {path}"
            );
        }
    }
    let repo = |rest: &str| format!("/repos/octo/hello{rest}");
    let or = [("owner", "octo"), ("repo", "hello")];
    assert_eq!(
        get(&r, "GET", &repo("/releases/latest")),
        found("GET /repos/:owner/:repo/releases/latest", &or)
    );
    assert_eq!(
        get(&r, "PATCH", &repo("/releases/latest")),
        found(
            "PATCH /repos/:owner/:repo/releases/:release_id",
            &[or[0], or[1], ("release_id", "latest")]
        )
    );
    assert_eq!(
        get(&r, "PUT", &repo("/releases/latest")),
        allow("GET, HEAD")
    );
    assert_eq!(
        get(&r, "PUT", &repo("/releases/7")),
        allow("GET, HEAD, DELETE, PATCH")
    );
    assert_eq!(
        get(&r, "POST", &repo("/commits/abc/comments")),
        found(
            "POST /repos/:owner/:repo/commits/:commit_sha/comments",
            &[or[0], or[1], ("commit_sha", "abc")]
        )
    );
    assert_eq!(
        get(&r, "GET", &repo("/commits/abc/comments")),
        found(
            "GET /repos/:owner/:repo/commits/:ref/comments",
            &[or[0], or[1], ("ref", "abc")]
        )
    );
    assert_eq!(
        get(&r, "DELETE", &repo("/commits/abc/comments")),
        allow("GET, HEAD, POST")
    );
    assert_eq!(
        get(&r, "DELETE", &repo("/contents/")),
        found(
            "DELETE /repos/:owner/:repo/contents/*",
            &[or[0], or[1], ("*", "")]
        )
    );
    assert_eq!(
        get(&r, "POST", &repo("/contents/a/b")),
        allow("GET, HEAD, PUT, DELETE")
    );
    assert_eq!(
        get(&r, "GET", "/user/following/ann"),
        found("GET /user/following/:username", &[("username", "ann")])
    );
    assert_eq!(
        get(&r, "GET", "/users/ann/following/bob"),
        found(
            "GET /users/:username/following/:target_user",
            &[("username", "ann"), ("target_user", "bob")]
        )
    );
    assert_eq!(
        get(&r, "GET", "/gists/public"),
        found("GET /gists/public", &[])
    );
    assert_eq!(
        get(&r, "DELETE", "/gists/public"),
        found("DELETE /gists/:gist_id", &[("gist_id", "public")])
    );
    assert_eq!(get(&r, "DELETE", "/gists"), allow("GET, HEAD, POST"));
    assert_eq!(get(&r, "GET", "/markdown"), allow("POST"));
    assert_eq!(get(&r, "OPTIONS", "/"), allow("GET, HEAD"));
    for path in [
        "/nope",
        "/repos/octo",
        "/repos/octo/hello/",
        "/repos/octo/hello/contents",
        "/users/",
        "//",
        "/user/",
    ] {
        assert_eq!(get(&r, "GET", path), Got::NotFound, "{path}");
    }
}

/// splitmix64: a tiny deterministic generator for the property tests.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The reference model: every route in a list, matched one by one.
#[derive(Default)]
struct Naive {
    routes: Vec<(Option<String>, String)>,
}

/// Kinds of a matched pattern's segments (0 static, 1 parameter, 2
/// wildcard) and its parameter values. Comparing kind lists orders
/// matching patterns by priority: static before parameter before
/// wildcard at the first segment where they differ.
fn naive_match<'p>(pattern: &str, path: &'p str) -> Option<(Vec<u8>, Vec<&'p str>)> {
    let segments: Vec<&'p str> = path.strip_prefix('/')?.split('/').collect();
    let (mut kinds, mut params, mut offset) = (Vec::new(), Vec::new(), 1);
    let pieces: Vec<&str> = pattern[1..].split('/').collect();
    for (i, piece) in pieces.iter().enumerate() {
        if *piece == "*" {
            kinds.push(2);
            params.push(path.get(offset..)?);
            return Some((kinds, params));
        }
        let segment = *segments.get(i)?;
        if piece.starts_with(':') {
            if segment.is_empty() {
                return None;
            }
            kinds.push(1);
            params.push(segment);
        } else if *piece == segment {
            kinds.push(0);
        } else {
            return None;
        }
        offset += segment.len() + 1;
    }
    (segments.len() == pieces.len()).then_some((kinds, params))
}

fn shape(pattern: &str) -> String {
    let pieces = pattern
        .split('/')
        .map(|p| if p.starts_with(':') { ":" } else { p });
    pieces.collect::<Vec<_>>().join("/")
}

fn names(pattern: &str) -> Vec<String> {
    let pieces = pattern
        .split('/')
        .filter(|p| p.starts_with(':') || *p == "*");
    pieces
        .map(|p| p.trim_start_matches(':').to_string())
        .collect()
}

const ORDER: [&str; 8] = [
    "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE",
];

impl Naive {
    fn insert(&mut self, method: Option<&str>, pattern: &str) -> Result<(), RouteError> {
        let same = |(m, p): &(Option<String>, String)| {
            m.as_deref() == method && shape(p) == shape(pattern)
        };
        if self.routes.iter().any(same) {
            return Err(RouteError::Duplicate);
        }
        self.routes.push((method.map(Into::into), pattern.into()));
        Ok(())
    }

    /// Like `get`, with the route's index as its spec.
    fn find(&self, method: &str, path: &str) -> Got {
        let mut matching: Vec<(Vec<u8>, usize, Vec<&str>)> = Vec::new();
        for (i, (_, pattern)) in self.routes.iter().enumerate() {
            if let Some((kinds, params)) = naive_match(pattern, path) {
                matching.push((kinds, i, params));
            }
        }
        matching.sort_by(|a, b| a.0.cmp(&b.0));
        for group in matching.chunk_by(|a, b| a.0 == b.0) {
            let with = |m: Option<&str>| {
                group
                    .iter()
                    .find(|(_, i, _)| self.routes[*i].0.as_deref() == m)
            };
            let chosen = with(Some(method))
                .or_else(|| {
                    if method == "HEAD" {
                        with(Some("GET"))
                    } else {
                        None
                    }
                })
                .or_else(|| with(None));
            if let Some((_, i, params)) = chosen {
                let pairs = names(&self.routes[*i].1)
                    .into_iter()
                    .zip(params.iter().map(|v| v.to_string()));
                return Got::Found(i.to_string(), pairs.collect());
            }
        }
        let Some(first) = matching.chunk_by(|a, b| a.0 == b.0).next() else {
            return Got::NotFound;
        };
        let mut methods: Vec<&str> = first
            .iter()
            .filter_map(|(_, i, _)| self.routes[*i].0.as_deref())
            .collect();
        if methods.contains(&"GET") {
            methods.push("HEAD");
        }
        methods.sort_by_key(|m| (ORDER.iter().position(|o| o == m).unwrap_or(ORDER.len()), *m));
        methods.dedup();
        Got::Allow(methods.join(", "))
    }
}

/// Inserts the same routes into both, checking they agree on errors.
fn build_both(routes: &[(Option<&str>, String)]) -> (Router<String>, Naive) {
    let (mut router, mut naive) = (Router::new(), Naive::default());
    for (method, pattern) in routes {
        let expected = naive.insert(*method, pattern);
        let id = router.len().to_string();
        assert_eq!(
            router.insert(*method, pattern, id),
            expected,
            "{method:?} {pattern}"
        );
    }
    assert_eq!(router.len(), naive.routes.len());
    (router, naive)
}

const METHODS: &[Option<&str>] = &[
    Some("GET"),
    Some("GET"),
    Some("POST"),
    Some("HEAD"),
    Some("PURGE"),
    None,
];
const REQUEST_METHODS: &[&str] = &["GET", "HEAD", "POST", "PUT", "PURGE", "get"];

#[test]
fn static_routes_agree_with_a_linear_matcher() {
    // Strings over a tiny alphabet share many prefixes: splits everywhere,
    // including inside the two-byte 'é'.
    const CHARS: &[&str] = &["a", "b", "/", "é", "è"];
    let mut rng = Rng(1);
    let random = |rng: &mut Rng| {
        let len = rng.below(8);
        let s: String = (0..len).map(|_| *rng.pick(CHARS)).collect();
        format!("/{s}")
    };
    for _ in 0..300 {
        let count = 1 + rng.below(40);
        let routes: Vec<_> = (0..count)
            .map(|_| (*rng.pick(METHODS), random(&mut rng)))
            .collect();
        let (router, naive) = build_both(&routes);
        for _ in 0..100 {
            let path = if rng.below(2) == 0 {
                routes[rng.below(count)].1.clone()
            } else {
                random(&mut rng)
            };
            let method = *rng.pick(REQUEST_METHODS);
            assert_eq!(
                get(&router, method, &path),
                naive.find(method, &path),
                "{method} {path} in {routes:?}"
            );
        }
    }
}

#[test]
fn mixed_routes_agree_with_a_linear_matcher() {
    const STATIC: &[&str] = &["a", "b", "ab", "abc", "é", "éa", ""];
    const PATH: &[&str] = &["a", "b", "ab", "abc", "é", "éa", "", "c", "ab/c"];
    let mut rng = Rng(2);
    let mut checked = [0; 3];
    for _ in 0..400 {
        let count = 1 + rng.below(30);
        let routes: Vec<_> = (0..count)
            .map(|_| {
                let len = 1 + rng.below(4);
                let segments: Vec<String> = (0..len)
                    .map(|i| match rng.below(6) {
                        0 | 1 => format!(":{}{i}", rng.pick(&["x", "y"])),
                        2 if i == len - 1 => "*".into(),
                        _ => rng.pick(STATIC).to_string(),
                    })
                    .collect();
                (*rng.pick(METHODS), format!("/{}", segments.join("/")))
            })
            .collect();
        let (router, naive) = build_both(&routes);
        for _ in 0..200 {
            let path = if rng.below(2) == 0 {
                // Fill a route's pattern with random values.
                let pattern = &routes[rng.below(count)].1;
                let segments: Vec<&str> = pattern[1..]
                    .split('/')
                    .map(|s| {
                        if s.starts_with(':') || s == "*" {
                            rng.pick(&PATH[..6])
                        } else {
                            s
                        }
                    })
                    .collect();
                format!("/{}", segments.join("/"))
            } else {
                let segments: Vec<&str> = (0..rng.below(5)).map(|_| *rng.pick(PATH)).collect();
                format!("/{}", segments.join("/"))
            };
            let method = *rng.pick(REQUEST_METHODS);
            let expected = naive.find(method, &path);
            checked[match expected {
                Got::Found(..) => 0,
                Got::Allow(_) => 1,
                Got::NotFound => 2,
            }] += 1;
            assert_eq!(
                get(&router, method, &path),
                expected,
                "{method} {path} in {routes:?}"
            );
        }
    }
    // Every outcome is well exercised.
    assert!(checked.iter().all(|&n| n > 5_000), "{checked:?}");
}

/// `cargo test --release -- --ignored --nocapture bench`
#[test]
#[ignore = "benchmark"]
fn bench_lookup() {
    let r = table(GITHUB);
    let cases = [
        ("GET", "/"),
        ("GET", "/user/repos"),
        ("GET", "/repos/octo/hello/pulls/1347/files"),
        ("GET", "/repos/octo/hello/contents/src/router/lib.rs"),
        ("PATCH", "/repos/octo/hello/releases/latest"),
        ("GET", "/repos/octo/hello/nope"),
        ("PUT", "/repos/octo/hello/releases/latest"),
    ];
    let mut params = Vec::new();
    const N: u32 = 2_000_000;
    for (method, path) in cases {
        let outcome = format!("{:?}", r.find(method, path, &mut params));
        let start = Instant::now();
        for _ in 0..N {
            black_box(r.find(black_box(method), black_box(path), &mut params));
        }
        let ns = start.elapsed().as_nanos() as f64 / f64::from(N);
        println!(
            "{ns:6.1} ns  {method} {path}  -> {}",
            &outcome[..outcome.len().min(60)]
        );
    }
}
