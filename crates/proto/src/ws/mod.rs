//! The WebSocket protocol (RFC 6455) with permessage-deflate (RFC 7692).
//!
//! - [`Decoder`] turns received bytes into [`Event`]s and enforces every
//!   framing rule and limit;
//! - [`encoder`] builds frames to send;
//! - [`deflate`] negotiates compression and compresses/inflates messages;
//! - [`close`] and [`utf8`] hold the close-frame and UTF-8 rules the decoder
//!   uses, public because the runtime needs them when it sends.

pub mod close;
mod decoder;
pub mod deflate;
pub mod encoder;
mod error;
pub mod extensions;
pub mod frame;
pub mod utf8;

pub use close::CloseFrame;
pub use decoder::{Decoder, DecoderConfig, Event, Flow, DEFAULT_MAX_PAYLOAD_LENGTH};
pub use error::{ProtocolError, ALL_ERROR_CODES};
pub use frame::OpCode;
pub use utf8::Utf8Validator;

/// Which end of the connection this code plays. It decides the masking rule
/// (RFC 6455 §5.1: clients mask, servers do not) and, for permessage-deflate,
/// which negotiated parameters apply to each direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Role {
    /// We accepted the connection: incoming frames must be masked.
    #[default]
    Server,
    /// We opened the connection: incoming frames must not be masked.
    Client,
}
