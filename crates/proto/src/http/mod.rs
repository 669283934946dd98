//! The HTTP/1.1 side of opening a WebSocket (RFC 6455 §4): parse the request
//! head, validate the upgrade, answer with `101 Switching Protocols` or an
//! error response.
//!
//! Typical use by the runtime:
//!
//! ```
//! use switchboard_proto::http::{
//!     accept_key, parse_request_head, switching_protocols_response, validate_upgrade, HeadLimits,
//! };
//!
//! let bytes = b"GET /chat HTTP/1.1\r\nHost: example.com\r\nUpgrade: websocket\r\n\
//!     Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
//!     Sec-WebSocket-Version: 13\r\n\r\n";
//! let (head, consumed) = parse_request_head(bytes, &HeadLimits::default())
//!     .unwrap()
//!     .expect("complete head");
//! assert_eq!(consumed, bytes.len());
//! let upgrade = validate_upgrade(&head).unwrap();
//! let response = switching_protocols_response(&accept_key(&upgrade.key), None, None);
//! assert!(response.starts_with(b"HTTP/1.1 101 Switching Protocols\r\n"));
//! ```

mod error;
mod request;
mod response;
mod upgrade;

pub use error::{HandshakeError, ALL_ERROR_CODES};
pub use request::{
    parse_request_head, HeadLimits, RequestHead, DEFAULT_MAX_HEADERS, DEFAULT_MAX_HEAD_BYTES,
};
pub use response::{error_response, switching_protocols_response};
pub use upgrade::{accept_key, validate_upgrade, UpgradeRequest};
