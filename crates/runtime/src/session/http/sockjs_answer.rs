//! What a SockJS service answers at once: a status, header lines and a
//! body, built with the protocol's rules for CORS, caching and the
//! `JSESSIONID` cookie. Shared by the service's endpoints (`sockjs.rs`),
//! its receiving requests and its sends.

use std::time::{SystemTime, UNIX_EPOCH};

use switchboard_proto::http1::{HttpDate, RequestHead, Version};
use switchboard_proto::sockjs::{CACHE_ONE_YEAR, ONE_YEAR_SECS};

use crate::config::SockJsConfig;

/// What one request gets.
pub(super) struct Answer {
    pub(super) status: u16,
    pub(super) headers: String,
    pub(super) body: Vec<u8>,
}

impl Answer {
    pub(super) fn new(status: u16) -> Self {
        Self {
            status,
            headers: String::new(),
            body: Vec::new(),
        }
    }

    /// The whole response: status line, headers, body.
    pub(super) fn framed(&self, keep_alive: bool, version: Version) -> Vec<u8> {
        super::answers::frame(
            self.status,
            self.headers.as_bytes(),
            &self.body,
            self.body.len(),
            keep_alive,
            version,
        )
    }

    pub(super) fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push_str(name);
        self.headers.push_str(": ");
        self.headers.push_str(value);
        self.headers.push_str("\r\n");
        self
    }

    pub(super) fn body(mut self, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        self = self.header("Content-Type", content_type);
        self.body = body.into();
        self
    }

    /// CORS as the protocol's suite expects (`verify_cors`): the request's
    /// `Origin` echoed with credentials allowed (the JSESSIONID cookie
    /// must travel), or `*` without them.
    pub(super) fn cors(self, head: &RequestHead<'_, '_>) -> Self {
        match head.header("origin") {
            Some(origin) => {
                let origin = String::from_utf8_lossy(origin).into_owned();
                self.header("Access-Control-Allow-Origin", &origin)
                    .header("Access-Control-Allow-Credentials", "true")
            }
            None => self.header("Access-Control-Allow-Origin", "*"),
        }
    }

    /// A preflight's `Access-Control-Allow-Headers`: the headers it asked
    /// for, echoed (`XhrPolling.test_request_headers_cors`).
    pub(super) fn allow_headers(self, head: &RequestHead<'_, '_>) -> Self {
        match head.header("access-control-request-headers") {
            Some(asked) if !asked.is_empty() => {
                let asked = String::from_utf8_lossy(asked).into_owned();
                self.header("Access-Control-Allow-Headers", &asked)
            }
            _ => self,
        }
    }

    /// With `cookie_needed`, every session URL sets `JSESSIONID` (the
    /// client's own value echoed, else `dummy`), for load balancers that
    /// stick sessions by it (`JsessionidCookie`).
    pub(super) fn cookie(self, service: &SockJsConfig, head: &RequestHead<'_, '_>) -> Self {
        if !service.cookie_needed {
            return self;
        }
        let value = head
            .header("cookie")
            .and_then(|cookies| jsessionid(&String::from_utf8_lossy(cookies)))
            .unwrap_or_else(|| "dummy".to_owned());
        self.header("Set-Cookie", &format!("JSESSIONID={value}; path=/"))
    }

    /// Cached for a year: the iframe page, preflight answers.
    pub(super) fn cached_for_a_year(self) -> Self {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let expires = HttpDate::from_unix_seconds(now + u64::from(ONE_YEAR_SECS));
        self.header("Cache-Control", CACHE_ONE_YEAR)
            .header("Expires", expires.as_str())
    }
}

/// The `JSESSIONID` value in a `Cookie` header.
fn jsessionid(cookies: &str) -> Option<String> {
    cookies.split(';').find_map(|pair| {
        let (name, value) = pair.split_once('=')?;
        (name.trim() == "JSESSIONID").then(|| value.trim().to_owned())
    })
}
