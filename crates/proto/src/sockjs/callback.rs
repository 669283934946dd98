//! The JavaScript callback name of the jsonp and htmlfile transports, taken
//! from the `c` (or `callback`) query parameter.
//!
//! The name is written into a response the browser executes (`cb("...")`)
//! or a page it renders (`var c = parent.cb;`), so it is validated before
//! anything else: only ASCII letters, digits, `-`, `_` and `.` (the test
//! suite's `test_invalid_callback`: "Invalid characters are any matching
//! the following regexp: `[^a-zA-Z0-9-_.]`"), at most
//! [`MAX_CALLBACK_LEN`] of them. sockjs-client names its callbacks
//! `_jp.a` plus six random characters.

use std::fmt;

use super::form;

/// Longest accepted callback name, in bytes: 32, sockjs-node's limit on
/// the jsonp callback. It is one of the defences against "Rosetta Flash"
/// (CVE-2014-4671), which needs a long alphanumeric callback to smuggle a
/// Flash file into a JSONP response; the `/**/` prefix of every jsonp
/// response is the other. sockjs-node does not bound the htmlfile name;
/// applying one rule to both costs nothing, since real names are 11 bytes.
pub const MAX_CALLBACK_LEN: usize = 32;

/// A validated callback name. It is `Copy` and holds its bytes inline, so
/// a transport's framing can keep it without borrowing the request.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Callback {
    bytes: [u8; MAX_CALLBACK_LEN],
    len: u8,
}

/// Why no callback name could be taken from a query. Answered with status
/// 500 and [`CallbackError::message`] as the body, as sockjs-node and the
/// test suite (`test_no_callback`, `test_invalid_callback`) have it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallbackError {
    /// Neither `c` nor `callback` is in the query, or it is empty.
    /// (sockjs-node accepts an empty name and then writes `/**/("...")`,
    /// which the browser cannot run; refusing it is the useful answer.)
    Missing,
    /// The decoded name has a character outside `[a-zA-Z0-9_.-]` or is
    /// longer than [`MAX_CALLBACK_LEN`].
    Invalid,
}

impl CallbackError {
    /// The HTTP status to answer with: 500.
    pub fn status(self) -> u16 {
        500
    }

    /// The exact response body the protocol uses.
    pub fn message(self) -> &'static str {
        match self {
            CallbackError::Missing => "\"callback\" parameter required",
            CallbackError::Invalid => "invalid \"callback\" parameter",
        }
    }
}

impl fmt::Display for CallbackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for CallbackError {}

impl Callback {
    /// Takes the callback name from a request's query string (without the
    /// `?`; `None` when the URL has none). The `c` parameter wins over
    /// `callback`, wherever each appears, as in sockjs-node; the first
    /// occurrence of a repeated one counts. The value is percent-decoded
    /// (`c=%63allback` is `callback`) before it is checked.
    ///
    /// ```
    /// use switchboard_proto::sockjs::{Callback, CallbackError};
    ///
    /// assert_eq!(Callback::from_query(Some("c=%63allback")).unwrap().as_str(), "callback");
    /// assert_eq!(Callback::from_query(Some("t=1")), Err(CallbackError::Missing));
    /// assert_eq!(Callback::from_query(Some("c=abc%28")), Err(CallbackError::Invalid));
    /// ```
    pub fn from_query(query: Option<&str>) -> Result<Callback, CallbackError> {
        let query = query.unwrap_or("").as_bytes();
        let raw = form::field(query, b"c")
            .or_else(|| form::field(query, b"callback"))
            .ok_or(CallbackError::Missing)?;
        let mut callback = Callback {
            bytes: [0; MAX_CALLBACK_LEN],
            len: 0,
        };
        for b in form::decoded(raw) {
            let slot = callback
                .bytes
                .get_mut(usize::from(callback.len))
                .ok_or(CallbackError::Invalid)?;
            if !is_callback_byte(b) {
                return Err(CallbackError::Invalid);
            }
            *slot = b;
            callback.len += 1;
        }
        if callback.len == 0 {
            return Err(CallbackError::Missing);
        }
        Ok(callback)
    }

    /// Validates a name given directly (already decoded).
    pub fn new(name: &str) -> Result<Callback, CallbackError> {
        if name.is_empty() {
            return Err(CallbackError::Missing);
        }
        if name.len() > MAX_CALLBACK_LEN || !name.bytes().all(is_callback_byte) {
            return Err(CallbackError::Invalid);
        }
        let mut bytes = [0; MAX_CALLBACK_LEN];
        bytes[..name.len()].copy_from_slice(name.as_bytes());
        Ok(Callback {
            bytes,
            // At most MAX_CALLBACK_LEN (32), checked above.
            len: name.len() as u8,
        })
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        // Only ASCII bytes are ever stored, so this cannot fail.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or("")
    }
}

impl fmt::Debug for Callback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Callback").field(&self.as_str()).finish()
    }
}

/// `[a-zA-Z0-9_.-]`.
fn is_callback_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')
}
