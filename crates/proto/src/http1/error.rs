//! The one error type of the HTTP/1.1 request codec. Every variant carries a
//! stable code and the status to answer with; the connection is closed after
//! the answer, because after any of them the request stream can no longer
//! be framed with certainty.

use std::fmt;

/// Why a request was refused. Answer with [`HttpError::status`] and close
/// the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpError {
    /// 400: the head or the body framing breaks RFC 9112; carries a short
    /// detail naming the rule.
    BadRequest(&'static str),
    /// 431: the head is larger than `max_head_bytes`, has more than
    /// `max_headers` lines, or the trailer section of a chunked body is
    /// larger than `max_trailer_bytes`.
    HeadersTooLarge,
    /// 414: the request-target is longer than `max_url_bytes`.
    UriTooLong,
    /// 413: the body is larger than `max_body_bytes`.
    BodyTooLarge,
    /// 505: a well-formed HTTP version other than 1.0 and 1.1.
    VersionNotSupported,
    /// 501: a method or transfer coding this server does not implement
    /// (including CONNECT); carries a short detail.
    NotImplemented(&'static str),
    /// 417: an `Expect` header other than `100-continue`.
    ExpectationFailed,
}

/// The codes this module adds to the catalogue: `(code, HTTP status,
/// description)`. `ERR_HTTP_BAD_REQUEST`, `ERR_HTTP_HEADERS_TOO_LARGE` and
/// `ERR_HTTP_VERSION_NOT_SUPPORTED` are shared with the upgrade handshake
/// and listed in [`crate::http::ALL_ERROR_CODES`]. Kept in sync with
/// `docs/errors.md` by a workspace test.
pub const ALL_ERROR_CODES: &[(&str, u16, &str)] = &[
    (
        "ERR_HTTP_URI_TOO_LONG",
        414,
        "The request-target was longer than the URL length limit.",
    ),
    (
        "ERR_HTTP_BODY_TOO_LARGE",
        413,
        "The request body was larger than the body size limit.",
    ),
    (
        "ERR_HTTP_NOT_IMPLEMENTED",
        501,
        "The request used a method (CONNECT included) or a transfer coding the server does not implement.",
    ),
    (
        "ERR_HTTP_EXPECTATION_FAILED",
        417,
        "The request carried an Expect header other than 100-continue.",
    ),
];

impl HttpError {
    /// The stable string code, e.g. `ERR_HTTP_URI_TOO_LONG`.
    pub fn code(&self) -> &'static str {
        self.row().0
    }

    /// The HTTP status to answer with.
    pub fn status(&self) -> u16 {
        self.row().1
    }

    /// The catalogue row of this error: one of [`ALL_ERROR_CODES`], or the
    /// handshake layer's row for the three codes shared with it.
    fn row(&self) -> (&'static str, u16, &'static str) {
        let shared = |code: &str| {
            let row = crate::http::ALL_ERROR_CODES
                .iter()
                .find(|(c, _, _)| *c == code)
                .copied();
            // The three shared codes are in the handshake table (a unit test
            // checks it); the fallback keeps this function total.
            row.unwrap_or(("ERR_HTTP_BAD_REQUEST", 400, "Bad request."))
        };
        match self {
            HttpError::BadRequest(_) => shared("ERR_HTTP_BAD_REQUEST"),
            HttpError::HeadersTooLarge => shared("ERR_HTTP_HEADERS_TOO_LARGE"),
            HttpError::VersionNotSupported => shared("ERR_HTTP_VERSION_NOT_SUPPORTED"),
            HttpError::UriTooLong => ALL_ERROR_CODES[0],
            HttpError::BodyTooLarge => ALL_ERROR_CODES[1],
            HttpError::NotImplemented(_) => ALL_ERROR_CODES[2],
            HttpError::ExpectationFailed => ALL_ERROR_CODES[3],
        }
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::BadRequest(detail) => write!(f, "Bad request: {detail}"),
            HttpError::NotImplemented(detail) => write!(f, "Not implemented: {detail}"),
            HttpError::HeadersTooLarge => f.write_str("Request header fields too large"),
            HttpError::VersionNotSupported => f.write_str("HTTP version not supported"),
            HttpError::UriTooLong => f.write_str("URI too long"),
            HttpError::BodyTooLarge => f.write_str("Content too large"),
            HttpError::ExpectationFailed => f.write_str("Expectation failed"),
        }
    }
}

impl std::error::Error for HttpError {}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [HttpError; 7] = [
        HttpError::BadRequest("x"),
        HttpError::HeadersTooLarge,
        HttpError::UriTooLong,
        HttpError::BodyTooLarge,
        HttpError::VersionNotSupported,
        HttpError::NotImplemented("y"),
        HttpError::ExpectationFailed,
    ];

    #[test]
    fn codes_and_statuses() {
        let got: Vec<_> = ALL.iter().map(|e| (e.code(), e.status())).collect();
        assert_eq!(
            got,
            [
                ("ERR_HTTP_BAD_REQUEST", 400),
                ("ERR_HTTP_HEADERS_TOO_LARGE", 431),
                ("ERR_HTTP_URI_TOO_LONG", 414),
                ("ERR_HTTP_BODY_TOO_LARGE", 413),
                ("ERR_HTTP_VERSION_NOT_SUPPORTED", 505),
                ("ERR_HTTP_NOT_IMPLEMENTED", 501),
                ("ERR_HTTP_EXPECTATION_FAILED", 417),
            ]
        );
        for e in ALL {
            assert!(!e.to_string().is_empty());
        }
        assert_eq!(
            HttpError::BadRequest("missing Host").to_string(),
            "Bad request: missing Host"
        );
    }

    #[test]
    fn shared_codes_come_from_the_handshake_table_and_new_ones_are_new() {
        for code in [
            "ERR_HTTP_BAD_REQUEST",
            "ERR_HTTP_HEADERS_TOO_LARGE",
            "ERR_HTTP_VERSION_NOT_SUPPORTED",
        ] {
            assert!(crate::http::ALL_ERROR_CODES
                .iter()
                .any(|(c, _, _)| *c == code));
        }
        for (code, status, description) in ALL_ERROR_CODES {
            assert!(code.starts_with("ERR_HTTP_"));
            assert!((400..600).contains(status));
            assert!(description.len() > 10);
            let elsewhere = crate::all_error_codes()
                .filter(|(c, _, _)| c == code)
                .count();
            assert_eq!(elsewhere, 1, "{code} is catalogued exactly once");
        }
    }
}
