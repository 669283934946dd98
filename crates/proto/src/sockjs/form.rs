//! `application/x-www-form-urlencoded` fields, as found in a query string
//! (the jsonp and htmlfile `c` / `callback` parameter) and in a `jsonp_send`
//! body (the `d` field).
//!
//! Decoding follows the WHATWG URL Standard's urlencoded parser (§5.1):
//! fields are separated by `&`, name and value by the first `=`, `+` means
//! a space and `%XX` a byte; a `%` not followed by two hex digits stays as
//! it is, which is also what Node's `querystring` (used by sockjs-node)
//! does. Nothing here allocates: callers either compare decoded bytes or
//! decode into a buffer they own.

/// The raw (still encoded) value of the first field whose decoded name is
/// `name`. A field without `=` has an empty value.
pub(crate) fn field<'a>(input: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    input.split(|&b| b == b'&').find_map(|pair| {
        let (raw_name, raw_value) = match pair.iter().position(|&b| b == b'=') {
            Some(eq) => (&pair[..eq], &pair[eq + 1..]),
            None => (pair, &pair[pair.len()..]),
        };
        decoded(raw_name)
            .eq(name.iter().copied())
            .then_some(raw_value)
    })
}

/// The bytes `raw` decodes to.
pub(crate) fn decoded(raw: &[u8]) -> Decoded<'_> {
    Decoded { rest: raw }
}

/// Iterator over the decoded bytes of one form-encoded name or value.
pub(crate) struct Decoded<'a> {
    rest: &'a [u8],
}

impl Iterator for Decoded<'_> {
    type Item = u8;

    fn next(&mut self) -> Option<u8> {
        let (&b, tail) = self.rest.split_first()?;
        self.rest = tail;
        match b {
            b'+' => Some(b' '),
            b'%' => match tail {
                [hi, lo, after @ ..] => match (hex_value(*hi), hex_value(*lo)) {
                    (Some(hi), Some(lo)) => {
                        self.rest = after;
                        Some(hi << 4 | lo)
                    }
                    _ => Some(b'%'),
                },
                _ => Some(b'%'),
            },
            _ => Some(b),
        }
    }
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}
