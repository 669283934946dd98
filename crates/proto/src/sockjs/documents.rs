//! The fixed documents a SockJS server serves outside sessions: the
//! greeting, `/info` and the iframe page (sockjs-protocol, "Greeting url",
//! "Info test", "IFrame page").

use std::io::Write;

/// The body of the greeting (`GET` on the prefix, with or without a
/// trailing slash), served as `text/plain; charset=UTF-8`. 19 bytes.
pub const GREETING: &str = "Welcome to SockJS!\n";

/// The sockjs-client script the iframe page loads by default: the one
/// sockjs-node 0.3.24 defaults to (the latest 1.x from a CDN). A server
/// should let operators point it at their own copy of the client.
pub const DEFAULT_SOCKJS_URL: &str =
    "https://cdn.jsdelivr.net/npm/sockjs-client@1/dist/sockjs.min.js";

/// What `/info` reports. The client fetches it before choosing a
/// transport and times the round trip to size its timeouts, so it must be
/// answered at once; it is never cached
/// ([`super::NO_CACHE`]) and is served as `application/json; charset=UTF-8`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Info {
    /// Whether the WebSocket transport is enabled; the client skips it when
    /// `false`.
    pub websocket: bool,
    /// Whether the server sets a `JSESSIONID` cookie for load balancers'
    /// sticky sessions; clients then avoid transports that cannot carry
    /// cookies.
    pub cookie_needed: bool,
    /// A fresh random number from 0 to 2^32 - 1 per request: old browsers
    /// had no good entropy source, so the client seeds its generator with
    /// this. The caller draws it (this crate draws no random numbers).
    pub entropy: u32,
}

impl Info {
    /// Appends the JSON body, with the members in sockjs-node's order and
    /// `origins` fixed to `["*:*"]` (the protocol requires that value and
    /// clients ignore it):
    ///
    /// ```
    /// use switchboard_proto::sockjs::Info;
    ///
    /// let mut out = Vec::new();
    /// Info { websocket: true, cookie_needed: false, entropy: 42 }.write_json(&mut out);
    /// assert_eq!(
    ///     out,
    ///     br#"{"websocket":true,"origins":["*:*"],"cookie_needed":false,"entropy":42}"#
    /// );
    /// ```
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"websocket\":");
        out.extend_from_slice(json_bool(self.websocket));
        out.extend_from_slice(b",\"origins\":[\"*:*\"],\"cookie_needed\":");
        out.extend_from_slice(json_bool(self.cookie_needed));
        out.extend_from_slice(b",\"entropy\":");
        // Writing to a Vec cannot fail.
        let _ = write!(out, "{}", self.entropy);
        out.push(b'}');
    }
}

fn json_bool(value: bool) -> &'static [u8] {
    if value {
        b"true"
    } else {
        b"false"
    }
}

/// The iframe page before the client script's URL. The iframe loads
/// sockjs-client from the server's origin so the iframe-based transports
/// can talk to the server same-origin, then relays to the parent page with
/// `postMessage`. `_sockjs_onload` is defined before the script loads;
/// sockjs-client (0.3 and 1.x alike) calls it once loaded. The text is
/// the test suite's (`IframePage.iframe_body`, matched as a regex).
const IFRAME_HEAD: &str = "<!DOCTYPE html>\n<html>\n<head>\n  \
<meta http-equiv=\"X-UA-Compatible\" content=\"IE=edge\" />\n  \
<meta http-equiv=\"Content-Type\" content=\"text/html; charset=UTF-8\" />\n  \
<script>\n    document.domain = document.domain;\n    \
_sockjs_onload = function(){SockJS.bootstrap_iframe();};\n  </script>\n  <script src=\"";

/// The iframe page after the client script's URL.
const IFRAME_TAIL: &str = "\"></script>\n</head>\n<body>\n  <h2>Don't panic!</h2>\n  \
<p>This is a SockJS hidden iframe. It's used for cross domain magic.</p>\n</body>\n</html>";

/// The iframe page (`/iframe.html`, `/iframe-<version>.html`) and its
/// `ETag`. Build it once per service: the page depends only on the client
/// URL.
///
/// Serve it as `text/html; charset=UTF-8`, cached for a year
/// ([`super::CACHE_ONE_YEAR`] and an `Expires`), with the `ETag` and no
/// `Last-Modified`; answer 304 without body or content type when
/// [`IframePage::is_fresh`] (`IframePage.test_cacheability`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IframePage {
    html: String,
    etag: String,
}

impl IframePage {
    /// The page loading sockjs-client from `sockjs_url`, which should be
    /// absolute or start with `/` (the suite checks for `/` or `http`). It
    /// is HTML-escaped into the `src` attribute.
    pub fn new(sockjs_url: &str) -> IframePage {
        let mut html =
            String::with_capacity(IFRAME_HEAD.len() + sockjs_url.len() + IFRAME_TAIL.len());
        html.push_str(IFRAME_HEAD);
        for c in sockjs_url.chars() {
            match c {
                '&' => html.push_str("&amp;"),
                '"' => html.push_str("&quot;"),
                '<' => html.push_str("&lt;"),
                '>' => html.push_str("&gt;"),
                _ => html.push(c),
            }
        }
        html.push_str(IFRAME_TAIL);
        let etag = etag_for(html.as_bytes());
        IframePage { html, etag }
    }

    /// The page.
    pub fn html(&self) -> &str {
        &self.html
    }

    /// The strong entity tag, quoted as the header carries it, e.g.
    /// `"3c1f0e5a9b2d4f60"`.
    pub fn etag(&self) -> &str {
        &self.etag
    }

    /// Whether an `If-None-Match` header value matches the page, so the
    /// answer is 304. Implements RFC 9110 §13.1.2: `*`, or a
    /// comma-separated list of entity tags compared weakly (a `W/` prefix
    /// is ignored).
    pub fn is_fresh(&self, if_none_match: &str) -> bool {
        let value = if_none_match.trim();
        value == "*"
            || value.split(',').any(|tag| {
                let tag = tag.trim();
                tag.strip_prefix("W/").unwrap_or(tag) == self.etag
            })
    }
}

/// A strong `ETag` for `bytes`: the 64-bit FNV-1a hash of the bytes, as 16
/// lowercase hex digits in quotes.
///
/// The tag only has to change when the page does and stay the same across
/// restarts and servers (which rules out `std`'s randomly keyed hasher);
/// it guards no secret, so a cryptographic hash (sockjs-node uses MD5)
/// buys nothing. FNV-1a: offset basis 0xcbf29ce484222325, prime
/// 0x100000001b3 (draft-eastlake-fnv).
pub fn etag_for(bytes: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("\"{hash:016x}\"")
}
