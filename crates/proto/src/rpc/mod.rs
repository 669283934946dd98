//! The Switchboard RPC protocol, version 1 (`docs/protocol.md`), as pure
//! code: frame model, decoder, encoder, UUID derivation, the server's half
//! of the handshake and the stateful ordering checks.
//!
//! - [`decode`] / [`peek_header`] / [`decode_preface`] turn received bytes
//!   into [`Frame`]s that borrow from the input, rejecting anything the spec
//!   forbids with a [`ProtocolError`];
//! - [`encode`] and the `encode_*` helpers write frames with the smallest
//!   integer widths (the helpers allocate nothing beyond `out` and write a
//!   frame's header apart from its payload, for vectored writes);
//! - [`uuid`] derives message and response UUIDs from a side's seed (§6);
//! - [`accept_hello`] turns a client's HELLO into our WELCOME (§4);
//! - [`SequenceCheck`] enforces the ordering rules that need state: call
//!   ids, stream ids, attachments right after their message (§4).
//!
//! Flow control, file sizes, response ids and heartbeats need the state of
//! calls and streams, which the connection layer owns; they are checked
//! there, not here.
//!
//! The byte-level test vectors in `spec/wire/` are normative; the
//! integration test `tests/rpc_vectors.rs` runs all of them against this
//! module, and the TypeScript codec runs the same files.

mod decode;
mod encode;
mod error;
mod frame;
mod handshake;
pub mod int;
mod sequence;
pub mod uuid;

pub use decode::{decode, decode_preface, peek_header, Header};
pub use encode::{
    encode, encode_fast_reply, encode_go_away, encode_heartbeat, encode_message_header,
    encode_response_header, encode_stream_data_header, encoded_len,
};
pub use error::{ProtocolError, ALL_ERROR_CODES};
pub use frame::{
    frame_type, is_code, Abort, ErrorFrame, FileInfo, Frame, Hello, Message, Response, Settings,
    Welcome, ALL_FEATURES, FEATURE_CANCEL, FEATURE_FILES, FEATURE_STREAMS,
};
pub use handshake::{accept_hello, OwnedWelcome, ServerSettings, RAW_CODEC};
pub use int::MAX_INTEGER;
pub use sequence::SequenceCheck;

/// The first four bytes each side sends: ASCII `SWB` and the version.
pub const PREFACE: &[u8; 4] = b"SWB\x01";

/// The protocol version this module speaks (the preface's fourth byte).
pub const VERSION: u8 = 1;

/// The WebSocket subprotocol name (`Sec-WebSocket-Protocol`) of version 1.
pub const SUBPROTOCOL: &str = "switchboard.v1";

/// Smallest `maxFrameSize` and `initialWindow` a handshake may announce:
/// below it a peer could not even send a HELLO with a token, and a window
/// that small would make streams crawl.
pub const MIN_FRAME_SIZE: u32 = 1024;

/// Largest body of a handshake frame (HELLO, WELCOME), whatever either
/// side's `maxFrameSize` (§2): it is read before the limits are known, from
/// a peer that has proven nothing yet, so its budget is small and fixed.
/// Connect data is a token, not a payload.
pub const MAX_HANDSHAKE_SIZE: usize = 64 * 1024;

/// Our default `maxFrameSize`: large enough that almost no payload needs a
/// stream, small enough that one frame cannot pin much memory per connection.
pub const DEFAULT_MAX_FRAME_SIZE: u32 = 16 * 1024 * 1024;

/// Our default `initialWindow`: 1 MiB per stream keeps a LAN link busy
/// (bandwidth × delay) while bounding what a stalled consumer buffers.
pub const DEFAULT_INITIAL_WINDOW: u32 = 1024 * 1024;

/// Our default `maxConcurrentCalls`: enough for heavy pipelining by one
/// client, low enough that one connection cannot queue unbounded work.
pub const DEFAULT_MAX_CONCURRENT_CALLS: u32 = 4096;
