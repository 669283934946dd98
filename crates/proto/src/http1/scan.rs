//! The incremental pre-scan of a request head: finds the blank line that
//! ends it and rejects, byte by byte and as early as possible, what RFC 9112
//! lets a lenient recipient accept but this parser does not.
//!
//! The runtime calls [`super::HeadParser::parse`] after every read, and a
//! slow client can send one byte per read. The scanner remembers where it
//! stopped, so each byte of a head is looked at once whatever the read
//! pattern (linear, not quadratic), and httparse runs once, on the complete
//! head. Because every decision depends only on the bytes before it, the
//! outcome is the same however the input is split.

use super::error::HttpError;

/// Where the scan stands between two bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the request line, where empty lines are skipped.
    Leading,
    /// A CR of an empty line before the request line.
    LeadingCr,
    /// In the method token.
    Method,
    /// SPs between the method and the request-target.
    BeforeTarget,
    /// In the request-target.
    Target,
    /// After the request-target: SPs and the version.
    Version,
    /// The CR that ends the request line.
    RequestLineCr,
    /// At the start of the first line after the request line.
    FirstLineStart,
    /// At the start of a later header line.
    LineStart,
    /// Inside a header line.
    Field,
    /// The CR that ends a header line.
    FieldCr,
    /// The CR of the blank line that ends the head.
    FinalCr,
}

/// The scan of one head, resumable.
#[derive(Debug, Clone)]
pub(super) struct Scanner {
    /// Bytes of the buffer already scanned.
    pos: usize,
    state: State,
    /// Length of the request-target so far.
    target_len: usize,
}

impl Default for Scanner {
    fn default() -> Self {
        Scanner {
            pos: 0,
            state: State::Leading,
            target_len: 0,
        }
    }
}

/// Any control character (RFC 5234 CTL: 0x00-0x1F and DEL).
fn is_ctl(b: u8) -> bool {
    b < 0x20 || b == 0x7f
}

/// How many bytes at the start of `bytes` are above `floor` and not DEL
/// (obs-text, 0x80 and up, included): a target's run with `floor` SP, a
/// header line's (field-vchar and SP, RFC 9110 §5.5) with `floor` 0x1F.
///
/// Eight bytes at a time, as one `u64` (SWAR): the scan of a browser's
/// request head took a third of its parse byte by byte. For a byte `b` of
/// the word, `(b - (floor + 1)) & !b & 0x80` is set exactly when
/// `b <= floor`: the subtraction borrows (setting bit 7) only for such a
/// byte, and `!b`'s bit 7 drops bytes of 0x80 and up, whose difference has
/// bit 7 set without a borrow. A borrow carries into the next byte up, so
/// only the lowest flagged byte is sure to be right: it is the one the run
/// stops at. DEL is found the same way as a zero byte of `word ^ 0x7f..`.
/// `floor` is below 0x80, so both tests are exact for that lowest byte.
fn run_above(bytes: &[u8], floor: u8) -> usize {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    const DEL: u64 = u64::from_ne_bytes([0x7f; 8]);
    let limit = ONES * u64::from(floor + 1);
    let mut chunks = bytes.chunks_exact(8);
    let mut run = 0;
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(chunk.try_into().expect("chunks of 8"));
        let low = word.wrapping_sub(limit) & !word & HIGHS;
        let del = word ^ DEL;
        let del = del.wrapping_sub(ONES) & !del & HIGHS;
        let stops = low | del;
        if stops != 0 {
            // Little-endian: the lowest flagged byte is the first one.
            return run + (stops.trailing_zeros() / 8) as usize;
        }
        run += 8;
    }
    run + chunks
        .remainder()
        .iter()
        .take_while(|&&b| b > floor && b != 0x7f)
        .count()
}

const BARE_CR: HttpError = HttpError::BadRequest("CR not followed by LF in the head");
// RFC 9112 §2.2: "a recipient MAY recognize a single LF as a line terminator
// and ignore any preceding CR". We do not: Node 20's node:http (llhttp,
// strict mode) answers 400 to a bare LF ending the request line, a header
// line or the head, and agreeing with the server most of our users ran
// before, and with llhttp's strict defaults, leaves no LF-only request that a
// front proxy and this server would split differently.
const BARE_LF: HttpError = HttpError::BadRequest("line ended by LF without CR");
const CONTROL: HttpError = HttpError::BadRequest("control character in the head");

impl Scanner {
    /// Bytes already scanned; a buffer shorter than this is a new request.
    pub(super) fn pos(&self) -> usize {
        self.pos
    }

    /// Forgets the scan, for the next request.
    pub(super) fn reset(&mut self) {
        *self = Scanner::default();
    }

    /// Scans `buf` from where the last call stopped. Returns the head's
    /// length once its blank line has arrived, `None` if it has not yet.
    ///
    /// Rules enforced here (the rest is httparse's and `head.rs`'s):
    /// - RFC 9112 §2.2: empty lines (CRLF, or a bare LF as Node accepts)
    ///   before the request line are skipped.
    /// - RFC 9112 §2.2: every line ends with CRLF; a bare LF or a CR not
    ///   followed by LF is 400 (see `BARE_LF` for why bare LF is refused).
    /// - RFC 9112 §3: no control character in the request line, HTAB
    ///   included: Node 20 answers 400 to `GET\t/`, and the RFC's permission
    ///   to treat HTAB, VT, FF or bare CR as SP is only a MAY. (Several SPs
    ///   between the parts are accepted, as Node does; httparse is told so.)
    /// - RFC 9110 §5.5: no control character other than HTAB in a field
    ///   line (NUL, DEL and bare CR included).
    /// - RFC 9112 §2.2: whitespace between the request line and the first
    ///   header line is 400 (the RFC allows rejecting or ignoring it).
    /// - RFC 9112 §5.2: obs-fold (a line starting with SP or HTAB) is 400.
    /// - A request-target longer than `max_url_bytes` is 414 (RFC 9112 §3)
    ///   as soon as its first extra byte arrives.
    pub(super) fn scan(
        &mut self,
        buf: &[u8],
        max_url_bytes: usize,
    ) -> Result<Option<usize>, HttpError> {
        let mut i = self.pos;
        while i < buf.len() {
            let b = buf[i];
            match self.state {
                State::Leading => match b {
                    b'\r' => self.state = State::LeadingCr,
                    b'\n' => {}
                    _ => {
                        self.state = State::Method;
                        continue; // this byte starts the method
                    }
                },
                State::LeadingCr => match b {
                    b'\n' => self.state = State::Leading,
                    _ => return Err(BARE_CR),
                },
                State::Method | State::Version | State::BeforeTarget => match b {
                    b'\r' => self.state = State::RequestLineCr,
                    b'\n' => return Err(BARE_LF),
                    _ if is_ctl(b) => return Err(CONTROL),
                    b' ' if self.state == State::Method => self.state = State::BeforeTarget,
                    b' ' => {}
                    _ if self.state == State::BeforeTarget => {
                        self.state = State::Target;
                        continue; // this byte starts the target
                    }
                    _ => {}
                },
                State::Target => {
                    // Fast path: the target's bytes up to the next SP or CTL.
                    let run = run_above(&buf[i..], b' ');
                    self.target_len += run;
                    if self.target_len > max_url_bytes {
                        return Err(HttpError::UriTooLong);
                    }
                    i += run;
                    if i < buf.len() {
                        self.state = State::Version;
                        continue; // SP or CTL: handled as after the target
                    }
                    break;
                }
                State::RequestLineCr => match b {
                    b'\n' => self.state = State::FirstLineStart,
                    _ => return Err(BARE_CR),
                },
                State::FirstLineStart | State::LineStart => match b {
                    b'\r' => self.state = State::FinalCr,
                    b'\n' => return Err(BARE_LF),
                    b' ' | b'\t' if self.state == State::FirstLineStart => {
                        return Err(HttpError::BadRequest(
                            "whitespace between the request line and the first header",
                        ))
                    }
                    b' ' | b'\t' => {
                        return Err(HttpError::BadRequest(
                            "obsolete line folding (obs-fold) in a header",
                        ))
                    }
                    _ if is_ctl(b) => return Err(CONTROL),
                    _ => self.state = State::Field,
                },
                State::Field => {
                    // SP and visible bytes in runs; HTAB (allowed, but a
                    // control byte) one at a time.
                    loop {
                        i += run_above(&buf[i..], b' ' - 1);
                        if i < buf.len() && buf[i] == b'\t' {
                            i += 1;
                        } else {
                            break;
                        }
                    }
                    if i == buf.len() {
                        break;
                    }
                    match buf[i] {
                        b'\r' => self.state = State::FieldCr,
                        b'\n' => return Err(BARE_LF),
                        _ => return Err(CONTROL),
                    }
                }
                State::FieldCr => match b {
                    b'\n' => self.state = State::LineStart,
                    _ => return Err(BARE_CR),
                },
                State::FinalCr => match b {
                    b'\n' => {
                        self.pos = i + 1;
                        return Ok(Some(i + 1));
                    }
                    _ => return Err(BARE_CR),
                },
            }
            i += 1;
        }
        self.pos = buf.len();
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan_all(input: &[u8], max_url: usize) -> Result<Option<usize>, HttpError> {
        Scanner::default().scan(input, max_url)
    }

    fn scan_bytewise(input: &[u8], max_url: usize) -> Result<Option<usize>, HttpError> {
        let mut s = Scanner::default();
        for end in 0..=input.len() {
            if let Some(n) = s.scan(&input[..end], max_url)? {
                return Ok(Some(n));
            }
        }
        Ok(None)
    }

    #[test]
    fn finds_the_end_of_a_head_however_it_arrives() {
        let head = b"\r\n\nGET  /a?b  HTTP/1.1\r\nHost: x\r\nA:\t b \r\n\r\nbody";
        let end = head.len() - 4;
        assert_eq!(scan_all(head, 100), Ok(Some(end)));
        assert_eq!(scan_bytewise(head, 100), Ok(Some(end)));
        assert_eq!(scan_all(b"GET / HTTP/1.1\r\n\r\n", 1), Ok(Some(18)));
        assert_eq!(scan_all(b"GET / HTTP/1.1\r\nA: b\r\n", 100), Ok(None));
    }

    #[test]
    fn runs_stop_where_the_byte_by_byte_rule_stops() {
        // Every byte value at every position of a 20-byte window (so it
        // falls in a word and in the remainder), after bytes that pass.
        for floor in [b' ' - 1, b' '] {
            let naive = |bytes: &[u8]| {
                bytes
                    .iter()
                    .take_while(|&&b| b > floor && b != 0x7f)
                    .count()
            };
            for at in 0..20 {
                for stop in 0..=255u8 {
                    let mut bytes = vec![b'a'; 20];
                    bytes[at] = stop;
                    // Bytes on both sides of the stop that pass but sit at
                    // the edges of the rule.
                    if at > 0 {
                        bytes[at - 1] = floor + 1;
                    }
                    if at + 1 < bytes.len() {
                        bytes[at + 1] = 0x80;
                    }
                    assert_eq!(
                        run_above(&bytes, floor),
                        naive(&bytes),
                        "floor {floor}, {stop:#x} at {at}"
                    );
                }
            }
            // Pseudo-random words, where several bytes may stop the run.
            let mut x = 0x9e37_79b9_7f4a_7c15_u64;
            for _ in 0..20_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let bytes: Vec<u8> = x
                    .to_le_bytes()
                    .iter()
                    .chain(&(x >> 3).to_le_bytes())
                    .copied()
                    .collect();
                assert_eq!(run_above(&bytes, floor), naive(&bytes), "{bytes:?}");
            }
        }
    }

    #[test]
    fn rejects_early() {
        for (input, err) in [
            (&b"GET / HTTP/1.1\nHost: a\n\n"[..], BARE_LF),
            (b"GET / HTTP/1.1\r\nHost: a\n", BARE_LF),
            (b"GET / HTTP/1.1\r\nHost: a\r\n\n", BARE_LF),
            (b"\rGET", BARE_CR),
            (b"GET / HTTP/1.1\rX", BARE_CR),
            (b"GET / HTTP/1.1\r\nA: b\rc", BARE_CR),
            (b"GET / HTTP/1.1\r\nA: b\r\n\rx", BARE_CR),
            (b"GET\t/ HTTP/1.1", CONTROL),
            (b"GET / HTTP/1.1\r\nA: b\0", CONTROL),
            (b"GET / HTTP/1.1\r\nA: b\x7f", CONTROL),
            (b"GET / HTTP/1.1\r\nA: \x0c", CONTROL),
            (b"GET /\x01 HTTP/1.1", CONTROL),
            (b"GET / HTTP/1.1\r\n\x00", CONTROL),
        ] {
            assert_eq!(scan_all(input, 100), Err(err), "{input:?}");
            assert_eq!(scan_bytewise(input, 100), Err(err), "{input:?}");
        }
        let folded = scan_all(b"GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n", 100);
        assert!(matches!(folded, Err(HttpError::BadRequest(m)) if m.contains("obs-fold")));
        let first = scan_all(b"GET / HTTP/1.1\r\n Host: a\r\n\r\n", 100);
        assert!(matches!(first, Err(HttpError::BadRequest(m)) if m.contains("request line")));
    }

    #[test]
    fn long_targets_fail_without_the_rest_of_the_head() {
        let mut input = b"GET /".to_vec();
        input.extend_from_slice(&[b'a'; 99]);
        assert_eq!(scan_all(&input, 100), Ok(None));
        assert_eq!(scan_bytewise(&input, 100), Ok(None));
        input.push(b'a');
        assert_eq!(scan_all(&input, 100), Err(HttpError::UriTooLong));
        assert_eq!(scan_bytewise(&input, 100), Err(HttpError::UriTooLong));
        // Exactly the limit is fine.
        let ok = b"GET /aaa HTTP/1.1\r\n\r\n";
        assert_eq!(scan_all(ok, 4), Ok(Some(ok.len())));
        assert_eq!(scan_all(ok, 3), Err(HttpError::UriTooLong));
    }
}
