//! Incremental UTF-8 validation for text messages that arrive in pieces
//! (fragments, or one frame split across reads).
//!
//! RFC 6455 §8.1 lets an endpoint fail the connection as soon as the bytes
//! seen so far cannot be the prefix of valid UTF-8; Autobahn's 6.x cases check
//! that we do. `std::str::from_utf8` does the work: its error tells apart "an
//! invalid sequence" (`error_len() == Some(_)`) from "a sequence cut off at the
//! end" (`error_len() == None`). The standard library reports a truncated
//! sequence as invalid as soon as its second or third byte is out of range, so
//! prefixes that can never complete (`F5`, overlong `E0 80`, surrogate
//! `ED A0`, `F4 90` above U+10FFFF) are rejected immediately.

use std::fmt;

/// The bytes pushed so far are not, and cannot become, valid UTF-8.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Invalid;

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("invalid UTF-8")
    }
}

impl std::error::Error for Invalid {}

/// Validates a byte stream piece by piece, holding at most 3 bytes of an
/// unfinished code point between pushes and no heap memory.
#[derive(Debug, Clone, Default)]
pub struct Utf8Validator {
    /// Start of a code point cut off at the end of the previous push.
    pending: [u8; 4],
    /// How many bytes of `pending` are used (0..=3).
    pending_len: u8,
}

impl Utf8Validator {
    /// A validator at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Validates the next piece. An incomplete code point at the end of
    /// `bytes` is accepted and remembered; anything that can never become
    /// valid UTF-8 fails at once.
    pub fn push(&mut self, mut bytes: &[u8]) -> Result<(), Invalid> {
        if self.pending_len > 0 {
            bytes = self.complete_pending(bytes)?;
            if self.pending_len > 0 {
                // Still unfinished: `bytes` was consumed entirely.
                return Ok(());
            }
        }
        match std::str::from_utf8(bytes) {
            Ok(_) => Ok(()),
            Err(e) if e.error_len().is_some() => Err(Invalid),
            Err(e) => {
                // A cut-off code point: at most 3 bytes by construction.
                let tail = &bytes[e.valid_up_to()..];
                self.pending[..tail.len()].copy_from_slice(tail);
                self.pending_len = tail.len() as u8;
                Ok(())
            }
        }
    }

    /// Feeds bytes to the pending code point. Returns the rest of `bytes`
    /// after the code point completes; if it does not complete, `bytes` is
    /// absorbed into `pending` and the empty slice is returned.
    fn complete_pending<'a>(&mut self, bytes: &'a [u8]) -> Result<&'a [u8], Invalid> {
        let have = usize::from(self.pending_len);
        // A code point is at most 4 bytes, so 4 - have more bytes decide it.
        let take = bytes.len().min(4 - have);
        let mut joined = self.pending;
        joined[have..have + take].copy_from_slice(&bytes[..take]);
        let joined = &joined[..have + take];
        let first_char_end = match std::str::from_utf8(joined) {
            Ok(_) => joined.len(),
            // `valid_up_to() > 0` means the pending code point completed (it
            // starts at 0); whatever follows it is checked with the rest.
            Err(e) if e.valid_up_to() > 0 => e.valid_up_to(),
            Err(e) if e.error_len().is_some() => return Err(Invalid),
            Err(_) => {
                self.pending[have..have + take].copy_from_slice(&bytes[..take]);
                self.pending_len = (have + take) as u8;
                return Ok(&bytes[take..]);
            }
        };
        self.pending_len = 0;
        Ok(&bytes[first_char_end - have..])
    }

    /// Ends the stream: fails if a code point was left unfinished. The
    /// validator is reset and can be reused for the next message.
    pub fn finish(&mut self) -> Result<(), Invalid> {
        let complete = self.pending_len == 0;
        self.pending_len = 0;
        if complete {
            Ok(())
        } else {
            Err(Invalid)
        }
    }

    /// True when no unfinished code point is pending.
    pub fn is_at_boundary(&self) -> bool {
        self.pending_len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn validate_split(bytes: &[u8], split: &[usize]) -> Result<(), Invalid> {
        let mut v = Utf8Validator::new();
        let mut start = 0;
        for &end in split.iter().chain(std::iter::once(&bytes.len())) {
            v.push(&bytes[start..end])?;
            start = end;
        }
        v.finish()
    }

    /// Every way of cutting `bytes` in two or three pieces agrees with
    /// `std::str::from_utf8` on the whole.
    fn agrees_everywhere(bytes: &[u8]) {
        let expected = std::str::from_utf8(bytes).is_ok();
        for i in 0..=bytes.len() {
            for j in i..=bytes.len() {
                let got = validate_split(bytes, &[i, j]).is_ok();
                assert_eq!(got, expected, "{bytes:02x?} split at {i},{j}");
            }
        }
    }

    #[test]
    fn agrees_with_std_on_samples() {
        let samples: &[&[u8]] = &[
            b"",
            b"Hello-\xc2\xb5@\xc3\x9f\xc3\xb6\xc3\xa4\xc3\xbc\xc3\xa0\xc3\xa1-UTF-8!!",
            "κόσμε".as_bytes(),
            "\u{10FFFF}\u{FFFD}\u{800}\u{7F}".as_bytes(),
            b"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\xed\xa0\x80edited",
            b"\xf4\x90\x80\x80",
            b"\xc0\xaf",
            b"\xe0\x80\xaf",
            b"\xf0\x8f\xbf\xbf",
            b"\xed\xbf\xbf",
            b"\xff",
            b"\x80",
            b"ab\xe2\x82",
            b"\xf0\x9f\x98\x80\xf0\x9f",
        ];
        for s in samples {
            agrees_everywhere(s);
        }
    }

    #[test]
    fn incomplete_tail_is_accepted_until_finish() {
        let mut v = Utf8Validator::new();
        assert_eq!(v.push(b"ab\xe2\x82"), Ok(()));
        assert!(!v.is_at_boundary());
        assert_eq!(v.finish(), Err(Invalid));
        // finish() resets, so the validator is reusable.
        assert_eq!(v.push(b"ok"), Ok(()));
        assert_eq!(v.finish(), Ok(()));
    }

    #[test]
    fn impossible_prefixes_fail_immediately() {
        let prefixes: &[&[u8]] = &[
            b"\xf5",         // beyond U+10FFFF lead byte
            b"\xff",         // never valid
            b"\xc0",         // overlong 2-byte lead
            b"\xc1",         // overlong 2-byte lead
            b"\xe0\x80",     // overlong 3-byte
            b"\xed\xa0",     // UTF-16 surrogate
            b"\xf0\x80",     // overlong 4-byte
            b"\xf4\x90",     // above U+10FFFF
            b"\xe2\x28",     // continuation expected
            b"\xf0\x9f\x98", // fine so far...
        ];
        for (i, p) in prefixes.iter().enumerate() {
            let mut v = Utf8Validator::new();
            let r = v.push(p);
            if i == prefixes.len() - 1 {
                assert_eq!(r, Ok(()), "{p:02x?} is a valid prefix");
            } else {
                assert_eq!(r, Err(Invalid), "{p:02x?}");
            }
            // Fed one byte at a time, the verdict comes at the same byte.
            let mut v = Utf8Validator::new();
            let r: Result<(), Invalid> = p.iter().try_for_each(|b| v.push(&[*b]));
            assert_eq!(r.is_ok(), i == prefixes.len() - 1, "{p:02x?} bytewise");
        }
    }

    #[test]
    fn pending_never_exceeds_three_bytes() {
        let mut v = Utf8Validator::new();
        for b in "😀".as_bytes().iter().take(3) {
            v.push(&[*b]).unwrap();
        }
        assert_eq!(v.pending_len, 3);
        v.push(&[0x80]).unwrap();
        assert!(v.is_at_boundary());
    }
}
