//! Taking a request body off the byte stream: a fixed length, or the
//! chunked coding (RFC 9112 §7.1) checked byte by byte, so that the next
//! pipelined request starts exactly where this body ends and any input
//! slicing gives the same result.

use super::error::HttpError;
use super::fields::is_tchar;
use super::BodyKind;

/// Limits on a request body, checked before the bytes they concern are
/// accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyLimits {
    /// Most decoded body bytes. Default 1 MiB: JSON APIs and form posts sit
    /// far below it; uploads need a per-route limit
    /// ([`BodyDecoder::set_max_body_bytes`]). Over it: 413.
    pub max_body_bytes: u64,
    /// Longest chunk-size line, extensions included, CRLF excluded.
    /// Default 4 KiB: a size needs at most 16 hex digits and no client we
    /// know sends extensions, so this only bounds abuse. Over it: 400.
    pub max_chunk_line_bytes: usize,
    /// Largest trailer section (its field lines with their CRLFs). Default
    /// 16 KiB, the head's default: trailers are header lines too. Over it:
    /// 431.
    pub max_trailer_bytes: usize,
}

impl Default for BodyLimits {
    fn default() -> Self {
        BodyLimits {
            max_body_bytes: 1024 * 1024,
            max_chunk_line_bytes: 4 * 1024,
            max_trailer_bytes: 16 * 1024,
        }
    }
}

/// What one [`BodyDecoder::decode`] call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyChunk<'a> {
    /// Input bytes used (framing and data); the caller drops them.
    pub consumed: usize,
    /// Body bytes decoded by this call: one slice of the input (empty when
    /// the call consumed only framing).
    pub data: &'a [u8],
    /// The body has ended; input after `consumed` is the next request.
    pub done: bool,
}

/// Where the decoder stands between two bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// A fixed-length body with this many bytes to go.
    Length(u64),
    /// In a chunk-size line.
    Line(Line),
    /// In chunk data, this many bytes to go.
    Data(u64),
    /// The CR after chunk data.
    DataCr,
    /// The LF after chunk data.
    DataLf,
    /// In the trailer section.
    Trailer(Trailer),
    /// The body has ended.
    Done,
    /// A previous call failed with this error.
    Failed(HttpError),
}

/// Progress through `chunk-size [ chunk-ext ] CRLF`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Line {
    part: LinePart,
    size: u64,
    len: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LinePart {
    /// Before the first hex digit.
    Start,
    /// In the hex digits.
    Size,
    /// BWS after the size, which must lead to `;`.
    SizeBws,
    /// After `;` (BWS allowed), before an extension name.
    NameStart,
    /// In an extension name.
    Name,
    /// BWS after a name, which must lead to `=` or `;`.
    NameBws,
    /// After `=` (BWS allowed), before the value.
    ValueStart,
    /// In a token value.
    Token,
    /// In a quoted-string value.
    Quoted,
    /// After a backslash in a quoted string.
    Escape,
    /// After a quoted-string value: BWS, `;` or CR.
    AfterValue,
    /// BWS after a value, which must lead to `;`.
    ValueBws,
    /// The CR that ends the line.
    Cr,
}

/// Progress through the trailer section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Trailer {
    part: TrailerPart,
    /// Bytes of trailer field lines so far.
    len: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TrailerPart {
    LineStart,
    Name,
    Value,
    Cr,
    FinalCr,
}

/// Decodes one request body. Create it from [`super::RequestHead::body`];
/// it holds a few integers and never allocates.
#[derive(Debug, Clone)]
pub struct BodyDecoder {
    state: State,
    limits: BodyLimits,
    received: u64,
}

const CHUNK_LINE: HttpError = HttpError::BadRequest("malformed chunk-size line");

impl BodyDecoder {
    /// A decoder for a body framed as `kind`. A `Content-Length` over
    /// `max_body_bytes` is refused at once, before any byte is read.
    pub fn new(kind: BodyKind, limits: BodyLimits) -> Result<Self, HttpError> {
        let state = match kind {
            BodyKind::Empty | BodyKind::Length(0) => State::Done,
            BodyKind::Length(n) if n > limits.max_body_bytes => {
                return Err(HttpError::BodyTooLarge)
            }
            BodyKind::Length(n) => State::Length(n),
            BodyKind::Chunked => State::Line(Line {
                part: LinePart::Start,
                size: 0,
                len: 0,
            }),
        };
        Ok(BodyDecoder {
            state,
            limits,
            received: 0,
        })
    }

    /// Lowers or raises `max_body_bytes`, e.g. to a route's limit once the
    /// request is routed; meant to be called before any data was decoded.
    /// A fixed length over the new limit fails the next [`Self::decode`].
    pub fn set_max_body_bytes(&mut self, max: u64) {
        self.limits.max_body_bytes = max;
    }

    /// Whether the body has ended.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Body bytes decoded so far.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// The body bytes still to come when their number is known (a
    /// `Content-Length` body; 0 once any body ended), `None` in a chunked
    /// body, whose length is not.
    pub fn remaining(&self) -> Option<u64> {
        match self.state {
            State::Length(n) => Some(n),
            State::Done => Some(0),
            _ => None,
        }
    }

    /// Decodes from `input`, the bytes after what earlier calls consumed.
    ///
    /// Consumes framing up to the next data, then at most one run of data
    /// (returned as a slice of `input`), and stops there or where the body
    /// ends. Call again with the unconsumed rest while `consumed > 0` and
    /// not `done`; with `consumed == 0`, read more first. Every split of the
    /// input yields the same data, the same end and the same error, since
    /// each decision depends on the bytes before it only. After an error
    /// the decoder keeps returning it.
    pub fn decode<'a>(&mut self, input: &'a [u8]) -> Result<BodyChunk<'a>, HttpError> {
        let result = self.decode_inner(input);
        if let Err(e) = result {
            self.state = State::Failed(e);
        }
        result
    }

    fn decode_inner<'a>(&mut self, input: &'a [u8]) -> Result<BodyChunk<'a>, HttpError> {
        if let State::Failed(e) = self.state {
            return Err(e);
        }
        if self.received > self.limits.max_body_bytes {
            return Err(HttpError::BodyTooLarge);
        }
        let mut i = 0;
        loop {
            match self.state {
                State::Done => return Ok(self.chunk(i, &[], true)),
                State::Failed(e) => return Err(e),
                State::Length(remaining) | State::Data(remaining) => {
                    // Checked before taking bytes, so a limit lowered after
                    // routing applies to the declared length at once.
                    if self.received.saturating_add(remaining) > self.limits.max_body_bytes {
                        return Err(HttpError::BodyTooLarge);
                    }
                    if i == input.len() {
                        return Ok(self.chunk(i, &[], false));
                    }
                    let n = remaining.min((input.len() - i) as u64) as usize;
                    let data = &input[i..i + n];
                    self.received += n as u64;
                    let left = remaining - n as u64;
                    self.state = match (self.state, left) {
                        (State::Length(_), 0) => State::Done,
                        (State::Length(_), _) => State::Length(left),
                        (_, 0) => State::DataCr,
                        _ => State::Data(left),
                    };
                    let done = self.state == State::Done;
                    return Ok(self.chunk(i + n, data, done));
                }
                _ if i == input.len() => return Ok(self.chunk(i, &[], false)),
                State::Line(line) => self.state = self.line_byte(line, input[i])?,
                // RFC 9112 §7.1: chunk-data is followed by CRLF; anything
                // else (a bare LF, more data) is 400.
                State::DataCr if input[i] == b'\r' => self.state = State::DataLf,
                State::DataLf if input[i] == b'\n' => {
                    self.state = State::Line(Line {
                        part: LinePart::Start,
                        size: 0,
                        len: 0,
                    })
                }
                State::DataCr | State::DataLf => {
                    return Err(HttpError::BadRequest("chunk data not followed by CRLF"))
                }
                State::Trailer(trailer) => self.state = self.trailer_byte(trailer, input[i])?,
            }
            i += 1;
        }
    }

    fn chunk<'a>(&self, consumed: usize, data: &'a [u8], done: bool) -> BodyChunk<'a> {
        BodyChunk {
            consumed,
            data,
            done,
        }
    }

    /// One byte of a chunk-size line (RFC 9112 §7.1, §7.1.1):
    /// `chunk-size [ chunk-ext ] CRLF` with `chunk-size = 1*HEXDIG` and
    /// `chunk-ext = *( BWS ";" BWS name [ BWS "=" BWS value ] )`, name a
    /// token, value a token or quoted-string. BWS (SP / HTAB) is accepted
    /// where the grammar has it, as RFC 9110 §5.6.3 requires of recipients
    /// (Node 20 rejects it; nothing is framed differently either way); any
    /// other deviation is 400: whitespace before CRLF, a bare LF, CR or
    /// control character in an extension, a size with more significance
    /// than u64 holds (leading zeros are fine), a line longer than
    /// `max_chunk_line_bytes`.
    fn line_byte(&self, mut line: Line, b: u8) -> Result<State, HttpError> {
        use LinePart::*;
        if line.part != Cr && b != b'\r' {
            line.len += 1;
            if line.len > self.limits.max_chunk_line_bytes {
                return Err(HttpError::BadRequest("chunk-size line too long"));
            }
        }
        let bws = b == b' ' || b == b'\t';
        line.part = match (line.part, b) {
            (Start | Size, _) if b.is_ascii_hexdigit() => {
                let digit = u64::from((b as char).to_digit(16).unwrap_or(0));
                line.size = line
                    .size
                    .checked_mul(16)
                    .and_then(|s| s.checked_add(digit))
                    .ok_or(HttpError::BadRequest("chunk size overflows"))?;
                Size
            }
            (Start, _) => return Err(HttpError::BadRequest("chunk size is not hexadecimal")),
            (Size | Name | Token | AfterValue, b'\r') => Cr,
            (Size | SizeBws, _) if bws => SizeBws,
            (Size | SizeBws | Name | NameBws | Token | AfterValue | ValueBws, b';') => NameStart,
            (NameStart, _) if bws => NameStart,
            (NameStart | Name, _) if is_tchar(b) => Name,
            (Name | NameBws, _) if bws => NameBws,
            (Name | NameBws, b'=') => ValueStart,
            (ValueStart, _) if bws => ValueStart,
            (ValueStart, b'"') => Quoted,
            (ValueStart | Token, _) if is_tchar(b) => Token,
            (Token | AfterValue | ValueBws, _) if bws => ValueBws,
            (Quoted, b'"') => AfterValue,
            (Quoted, b'\\') => Escape,
            // qdtext and quoted-pair (RFC 9110 §5.6.4): HTAB, SP, visible
            // characters and obs-text.
            (Quoted | Escape, _) if bws || (b > 0x20 && b != 0x7f) => Quoted,
            (Cr, b'\n') => {
                return Ok(if line.size == 0 {
                    State::Trailer(Trailer {
                        part: TrailerPart::LineStart,
                        len: 0,
                    })
                } else if self.received.saturating_add(line.size) > self.limits.max_body_bytes {
                    // Refused when announced, before its data is read.
                    return Err(HttpError::BodyTooLarge);
                } else {
                    State::Data(line.size)
                });
            }
            (Cr, _) => return Err(HttpError::BadRequest("chunk-size line not ended by CRLF")),
            _ => return Err(CHUNK_LINE),
        };
        Ok(State::Line(line))
    }

    /// One byte of the trailer section (RFC 9112 §7.1.2): field lines
    /// checked like the head's (a token name directly followed by `:`, a
    /// value of visible characters, obs-text, SP and HTAB, CRLF endings, no
    /// obs-fold), then CRLF. The fields are discarded: RFC 9110 §6.5.1
    /// forbids merging them into the header section, and nothing here uses
    /// them. Over `max_trailer_bytes`: 431.
    fn trailer_byte(&self, mut trailer: Trailer, b: u8) -> Result<State, HttpError> {
        use TrailerPart::*;
        if trailer.part != FinalCr && !(trailer.part == LineStart && b == b'\r') {
            trailer.len += 1;
            if trailer.len > self.limits.max_trailer_bytes {
                return Err(HttpError::HeadersTooLarge);
            }
        }
        trailer.part = match (trailer.part, b) {
            (LineStart, b'\r') => FinalCr,
            (LineStart | Name, _) if is_tchar(b) => Name,
            (LineStart, b' ' | b'\t') => {
                return Err(HttpError::BadRequest(
                    "obs-fold or whitespace in the trailer",
                ))
            }
            (Name, b':') => Value,
            (Value, b'\r') => Cr,
            (Value, _) if b == b' ' || b == b'\t' || (b > 0x20 && b != 0x7f) => Value,
            (Cr, b'\n') => LineStart,
            (FinalCr, b'\n') => return Ok(State::Done),
            (Cr | FinalCr, _) => {
                return Err(HttpError::BadRequest("trailer line not ended by CRLF"))
            }
            _ => return Err(HttpError::BadRequest("malformed trailer field")),
        };
        Ok(State::Trailer(trailer))
    }
}
