//! Header values, texts and defaults the protocol fixes, as data for the
//! layer that writes responses.

use std::time::Duration;

/// `Cache-Control` of everything that must never be cached: `/info` and
/// every session transport but the WebSocket one.
///
/// This is sockjs-node 0.3.24's value and the one the current
/// sockjs-protocol test suite (`sockjs-protocol.py`, `verify_not_cached`)
/// compares verbatim. The older `sockjs-protocol-0.3.3.py` expects it
/// without `no-transform`; `no-transform` keeps proxies from recompressing
/// or rewriting streaming responses, which would break them. No `Expires`
/// or `Last-Modified` may accompany it.
pub const NO_CACHE: &str = "no-store, no-cache, no-transform, must-revalidate, max-age=0";

/// One year in seconds: how long the iframe page and preflight answers are
/// cached. The test suite requires a seven-digit `max-age` ("one year
/// (31536000) is best") and an `Access-Control-Max-Age` above 1000000.
pub const ONE_YEAR_SECS: u32 = 365 * 24 * 60 * 60;

/// `Cache-Control` of the iframe page and of `OPTIONS` answers; send an
/// `Expires` one year ahead with it (the suite checks it is present).
pub const CACHE_ONE_YEAR: &str = "public, max-age=31536000";

/// `Access-Control-Max-Age` of `OPTIONS` answers (one year, as sockjs-node
/// sends).
pub const ACCESS_CONTROL_MAX_AGE: &str = "31536000";

/// `text/plain; charset=UTF-8`: the greeting, `xhr_send`, `jsonp_send` and
/// error texts.
pub const CONTENT_TYPE_PLAIN: &str = "text/plain; charset=UTF-8";
/// `application/json; charset=UTF-8`: `/info`.
pub const CONTENT_TYPE_JSON: &str = "application/json; charset=UTF-8";
/// `text/html; charset=UTF-8`: the iframe page and htmlfile.
pub const CONTENT_TYPE_HTML: &str = "text/html; charset=UTF-8";
/// `application/javascript; charset=UTF-8`: `xhr`, `xhr_streaming` and
/// `jsonp`.
pub const CONTENT_TYPE_JAVASCRIPT: &str = "application/javascript; charset=UTF-8";
/// `text/event-stream; charset=UTF-8`: EventSource. (sockjs-node 0.3.24
/// omits the charset; the test suite expects it.)
pub const CONTENT_TYPE_EVENT_STREAM: &str = "text/event-stream; charset=UTF-8";

/// `X-Content-Type-Options` of jsonp answers, so a browser never sniffs a
/// JSONP response as something else (the Rosetta Flash defence, with the
/// `/**/` prefix and [`super::MAX_CALLBACK_LEN`]).
pub const NOSNIFF: &str = "nosniff";

/// The body of a successful `jsonp_send` answer (status 200; Konqueror
/// mishandles 204).
pub const JSONP_SEND_OK: &str = "ok";

/// The 400 body for a request to a WebSocket URL that is not a WebSocket
/// upgrade; `sockjs-protocol-0.3.3.py` (`WebsocketHttpErrors
/// .test_httpMethod`) looks for this text, later suites only check the
/// status.
pub const WEBSOCKET_UPGRADE_REQUIRED: &str = "Can \"Upgrade\" only to \"WebSocket\".";

/// Default interval between heartbeat frames on an idle receiving
/// connection: 25 s, sockjs-node's and the protocol's ("The typical delay
/// is 25 seconds"), below the 30 s or more most proxies wait before
/// dropping an idle connection.
pub const DEFAULT_HEARTBEAT_DELAY: Duration = Duration::from_secs(25);

/// Default time a session without a receiving connection is kept before
/// it is closed: 5 s, sockjs-node's and the protocol's ("The session must
/// time out after 5 seconds of not having a receiving connection"). A
/// polling client reconnects well within it.
pub const DEFAULT_DISCONNECT_DELAY: Duration = Duration::from_secs(5);

/// Default bytes of frames (counted after transport wrapping, prelude
/// excluded, as sockjs-node counts) after which a streaming response is
/// ended so the browser can free what it buffered: 128 KiB, the
/// protocol's default ("By default we should close a streaming request
/// every 128KiB"). The test suite's server lowers it to 4096.
pub const DEFAULT_RESPONSE_LIMIT: usize = 128 * 1024;
