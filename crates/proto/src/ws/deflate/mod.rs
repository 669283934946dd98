//! permessage-deflate (RFC 7692): configuration, negotiation and the
//! per-connection compressor and decompressor.
//!
//! Memory is the deciding factor for the defaults. A zlib deflate stream with
//! a 15-bit window holds about 256 KiB and an inflate stream about 40 KiB; a
//! real-time server holds many mostly idle connections. With "no context
//! takeover" the state is only needed while a message is being processed, so
//! [`Compressor`] and [`Decompressor`] drop it between messages, and the same
//! input always compresses to the same bytes, which lets the runtime compress
//! a published message once for all its recipients.

mod codec;
mod negotiate;

pub use codec::{Compressor, Decompressor};
pub use negotiate::negotiate;

use std::fmt;

/// The server's permessage-deflate policy. It bounds what the server accepts
/// from the client's offers; the outcome is a [`DeflateParams`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeflateConfig {
    /// Ask for our (the server's) compressor to start every message with an
    /// empty window. Default `true`: see the module documentation; the
    /// compression ratio lost on small real-time messages is small.
    pub server_no_context_takeover: bool,
    /// Ask the client to start every message with an empty window, so our
    /// decompressor can be dropped between messages. Default `true`, for the
    /// same memory reason.
    pub client_no_context_takeover: bool,
    /// Largest LZ77 window (log2 bytes) our compressor may use, 9..=15.
    /// Default 15: the memory is only held during a message when
    /// `server_no_context_takeover` is set, so take the best ratio. zlib
    /// cannot produce raw deflate with an 8-bit window, hence the lower bound 9.
    pub server_max_window_bits: u8,
    /// Largest window we ask the client to use, 8..=15 (only sent when the
    /// client offered `client_max_window_bits`). Default 15.
    pub client_max_window_bits: u8,
    /// Messages shorter than this many bytes are sent uncompressed. Default
    /// 1024: below about 1 KiB deflate rarely saves enough to pay for its CPU
    /// time and header bytes (the same default as the `ws` package).
    pub threshold: usize,
    /// zlib compression level, 0..=9. Default 6, zlib's own balance of speed
    /// and ratio; with no context takeover the runtime compresses a
    /// published message once, so the cost is shared by its recipients.
    pub level: u32,
}

impl Default for DeflateConfig {
    fn default() -> Self {
        DeflateConfig {
            server_no_context_takeover: true,
            client_no_context_takeover: true,
            server_max_window_bits: 15,
            client_max_window_bits: 15,
            threshold: 1024,
            level: 6,
        }
    }
}

/// The agreed permessage-deflate parameters of one connection, plus the local
/// settings (`threshold`, `level`) copied from the [`DeflateConfig`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeflateParams {
    /// The server resets its compression context after every message.
    pub server_no_context_takeover: bool,
    /// The client resets its compression context after every message.
    pub client_no_context_takeover: bool,
    /// Window bits the server compresses with (9..=15).
    pub server_max_window_bits: u8,
    /// Window bits the client compresses with (8..=15).
    pub client_max_window_bits: u8,
    /// Messages shorter than this are sent uncompressed.
    pub threshold: usize,
    /// zlib compression level, 0..=9.
    pub level: u32,
}

impl Default for DeflateParams {
    /// RFC 7692's defaults (context takeover, 15-bit windows) with the local
    /// settings of [`DeflateConfig::default`].
    fn default() -> Self {
        let cfg = DeflateConfig::default();
        DeflateParams {
            server_no_context_takeover: false,
            client_no_context_takeover: false,
            server_max_window_bits: 15,
            client_max_window_bits: 15,
            threshold: cfg.threshold,
            level: cfg.level,
        }
    }
}

/// Why inflating a message failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeflateError {
    /// The compressed data is not a valid DEFLATE stream.
    Corrupt,
    /// The inflated message would exceed the output limit; inflation stopped
    /// as soon as the limit was passed.
    TooBig,
    /// zlib refused to compress. Valid use cannot cause this; it exists so
    /// that an internal zlib failure is reported instead of panicking.
    Compress,
}

impl fmt::Display for DeflateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeflateError::Corrupt => f.write_str("invalid DEFLATE data"),
            DeflateError::TooBig => f.write_str("inflated message exceeds the size limit"),
            DeflateError::Compress => f.write_str("internal compression failure"),
        }
    }
}

impl std::error::Error for DeflateError {}
