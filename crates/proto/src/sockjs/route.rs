//! The URL layout under a SockJS prefix (sockjs-protocol, "Base URL",
//! "Static URLs", "Session URLs"):
//!
//! | path under the prefix           | what                                     |
//! |---------------------------------|------------------------------------------|
//! | `` or `/`                       | the greeting                             |
//! | `/info`                         | server capabilities (JSON)               |
//! | `/iframe.html`, `/iframe-*.html`| the iframe page for cross-domain tricks  |
//! | `/websocket`                    | a raw WebSocket, no SockJS framing       |
//! | `/{server}/{session}/{transport}` | a session transport                    |
//!
//! Every route but the greeting may end with one `/`, as sockjs-node's
//! patterns (`[/]?$`) allow. Anything else is 404, including `//`, `/a`,
//! `/a/a` and `/a/a/` (`BaseUrlGreeting.test_notFound`).
//!
//! Paths are matched as received, without percent-decoding, like
//! sockjs-node's matcher: `/abcdefgh_i-j%20/abcdefg_i-j%20/xhr` is a
//! session whose ids contain `%20` (`SessionURLs.test_anyValue`). The query
//! string must be split off first; `/iframe-a.html?t=1234` is the iframe
//! page only once `?t=1234` is gone.

use crate::http1::Method;

use super::Transport;

/// A request path under the SockJS prefix, classified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route<'a> {
    /// `` or `/`: answer [`super::GREETING`].
    Greeting,
    /// `/info`: answer [`super::Info`] as JSON.
    Info,
    /// `/iframe.html` or a versioned `/iframe-<version>.html`: answer
    /// [`super::IframePage`]. The version is ignored (the same page serves
    /// every client version; `IframePage.test_versionedUrl`).
    Iframe,
    /// `/websocket`: a WebSocket whose messages are the application's own,
    /// without open frame, heartbeats or JSON (sockjs-protocol, "Raw
    /// WebSocket url").
    RawWebSocket,
    /// `/{server}/{session}/{transport}`.
    Session {
        /// Chosen by the client for load balancers' sticky routing
        /// (sockjs-client picks three digits); the server ignores it
        /// (`SessionURLs.test_ignoringServerId`).
        server_id: &'a str,
        /// Identifies the session; never exposed to the application.
        session_id: &'a str,
        /// How the request takes part in the session.
        transport: Transport,
    },
}

/// The part of `path` under `prefix`, or `None` when `path` is not under
/// it. `prefix` is the service's base path without a trailing slash (`""`
/// for the root, `"/echo"`; sockjs-protocol: "Base url should never end
/// with a slash"). `/echo`, `/echo/` and `/echo/info` are under `/echo`;
/// `/echoes` is not.
pub fn strip_prefix<'a>(path: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = path.strip_prefix(prefix)?;
    (rest.is_empty() || rest.starts_with('/')).then_some(rest)
}

impl<'a> Route<'a> {
    /// Classifies `path`, the request path under the prefix (see
    /// [`strip_prefix`]) without its query; `None` means 404.
    ///
    /// ```
    /// use switchboard_proto::sockjs::{Route, Transport};
    ///
    /// assert_eq!(Route::parse("/"), Some(Route::Greeting));
    /// assert_eq!(Route::parse("/iframe-1.6.1.html"), Some(Route::Iframe));
    /// assert_eq!(
    ///     Route::parse("/000/abc/xhr_streaming"),
    ///     Some(Route::Session { server_id: "000", session_id: "abc", transport: Transport::XhrStreaming }),
    /// );
    /// assert_eq!(Route::parse("/a./a/xhr"), None);
    /// ```
    pub fn parse(path: &'a str) -> Option<Route<'a>> {
        if path.is_empty() || path == "/" {
            return Some(Route::Greeting);
        }
        let rest = path.strip_prefix('/')?;
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        let mut segments = rest.split('/');
        let first = segments.next()?;
        match (segments.next(), segments.next(), segments.next()) {
            (None, _, _) => match first {
                "info" => Some(Route::Info),
                "websocket" => Some(Route::RawWebSocket),
                _ if is_iframe_name(first) => Some(Route::Iframe),
                _ => None,
            },
            (Some(session_id), Some(transport), None) => {
                if !is_id(first) || !is_id(session_id) {
                    return None;
                }
                Some(Route::Session {
                    server_id: first,
                    session_id,
                    transport: Transport::from_name(transport)?,
                })
            }
            _ => None,
        }
    }

    /// Whether the route answers `method`. Anything else is answered with
    /// 405 and [`Route::allow_header`] (`WebsocketHttpErrors`
    /// `.test_invalidMethod`); the methods come from sockjs-node's
    /// dispatcher table.
    pub fn allows(&self, method: Method) -> bool {
        match self {
            Route::Greeting | Route::Iframe | Route::RawWebSocket => method == Method::Get,
            Route::Info => matches!(method, Method::Get | Method::Options),
            Route::Session { transport, .. } => transport.allows(method),
        }
    }

    /// The `Allow` header of a 405 answer; for `/info` also the
    /// `Access-Control-Allow-Methods` of its preflight answer
    /// (`"OPTIONS, GET"`, compared verbatim by `InfoTest.test_options`).
    pub fn allow_header(&self) -> &'static str {
        match self {
            Route::Greeting | Route::Iframe | Route::RawWebSocket => "GET",
            Route::Info => "OPTIONS, GET",
            Route::Session { transport, .. } => transport.allow_header(),
        }
    }
}

/// A server or session id: non-empty, without `.` (sockjs-node's
/// `[^/.]+`; `SessionURLs.test_invalidPaths` refuses `/a./a`, `/a/a.`,
/// `/./.`). Splitting on `/` already keeps slashes out.
fn is_id(segment: &str) -> bool {
    !segment.is_empty() && !segment.contains('.')
}

/// `iframe`, then any run of `[0-9a-z_.-]`, then `.html`: sockjs-node's
/// `/iframe[0-9-.a-z_]*.html` with its unescaped `.` read as the literal
/// dot it is meant to be. Case-sensitive (`/IFRAME.HTML` is 404).
fn is_iframe_name(segment: &str) -> bool {
    segment
        .strip_prefix("iframe")
        .and_then(|s| s.strip_suffix(".html"))
        .is_some_and(|version| {
            version
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'z' | b'_' | b'.' | b'-'))
        })
}
