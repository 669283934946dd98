//! The Switchboard protocol carried over SockJS (docs/protocol.md, "Over
//! SockJS"): SockJS messages are strings, so each one holds the base64
//! (RFC 4648 §4, the standard alphabet, padded) of one or more whole
//! protocol frames, as a WebSocket binary message holds their bytes.
//!
//! Base64 and not the protocol's bytes as code points: every byte would
//! then be a code point below 256, and the SockJS quoting escapes the
//! controls (`\u0000`...): up to six bytes per byte on the wire, against
//! base64's 4/3 and no escape at all (its alphabet needs none in JSON or
//! in any SockJS transport's wrapping).
//!
//! ```
//! use switchboard_proto::sockjs::{decode_carried, write_carried_message};
//!
//! let mut frame = Vec::new();
//! write_carried_message(&mut frame, &[0x53, 0x57, 0x42, 0x01]);
//! assert_eq!(frame, b"a[\"U1dCAQ==\"]");
//! let mut bytes = Vec::new();
//! decode_carried("U1dCAQ==", &mut bytes).unwrap();
//! assert_eq!(bytes, [0x53, 0x57, 0x42, 0x01]);
//! assert!(decode_carried("U1dCAQ", &mut bytes).is_err()); // unpadded
//! ```

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;

/// A carried message that is not canonical, padded, standard base64.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BrokenBase64;

impl std::fmt::Display for BrokenBase64 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a SockJS message of the Switchboard protocol is not padded standard base64")
    }
}

impl std::error::Error for BrokenBase64 {}

/// The length of `bytes` bytes in padded base64.
pub const fn carried_len(bytes: usize) -> usize {
    bytes.div_ceil(3) * 4
}

/// Append a SockJS message frame, `a["<base64 of frames>"]`, carrying
/// `frames` (whole protocol frames) as one message.
pub fn write_carried_message(out: &mut Vec<u8>, frames: &[u8]) {
    out.reserve(carried_len(frames.len()) + 5);
    out.extend_from_slice(b"a[\"");
    let start = out.len();
    out.resize(start + carried_len(frames.len()), 0);
    let written = BASE64
        .encode_slice(frames, &mut out[start..])
        .expect("the output was sized for the encoding");
    out.truncate(start + written);
    out.extend_from_slice(b"\"]");
}

/// Append the bytes one carried message holds to `out`. The decoder is
/// strict (RFC 4648 §3.5: padding required, no other characters, no bits
/// set past the data), so one byte string has one encoding. On error
/// `out` is as it was.
pub fn decode_carried(message: &str, out: &mut Vec<u8>) -> Result<(), BrokenBase64> {
    let len = out.len();
    BASE64.decode_vec(message, out).map_err(|_| {
        out.truncate(len);
        BrokenBase64
    })
}
