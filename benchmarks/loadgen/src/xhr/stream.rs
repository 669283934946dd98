//! The receiving side of the xhr-streaming transport, pure (no I/O): the
//! bytes of one `xhr_streaming` connection in, SockJS frames out.
//!
//! A streaming response is `200` with a body of frames, each ending in
//! `\n`: the prelude (2048 `h` then `\n`, for old browsers that buffer the
//! first 2 KiB), then `o` (only in a session's first response), `h`,
//! `a[...]` and `c[...]`. The body comes chunked (HTTP/1.1) or until the
//! close (HTTP/1.0); [`Parser`] takes that framing off, this splits the
//! body into frames. The server ends the response after its response limit
//! (128 KiB in sockjs-node), and the client asks again for the same
//! session, on the same connection when it may be kept alive.
//!
//! Memory: a frame that lies within one piece of the body (one chunk of
//! one read: the common case, as sockjs-node writes each frame as one
//! chunk) is handed out as a slice of the read buffer; one that spans
//! pieces is assembled in a per-connection buffer, refused beyond
//! `max_frame` before it grows.

use crate::http::response::{Eof, Event, Framing, Parser};

/// What the stream brings, in order.
#[derive(Debug, PartialEq, Eq)]
pub enum StreamEvent<'a> {
    /// A response starts: its status (the transport answers 200).
    Head { status: u16 },
    /// One complete SockJS frame, without its `\n` (the prelude is a frame
    /// of 2048 `h`, which reads as a heartbeat).
    Frame(&'a [u8]),
    /// The response ended; `reusable`: the connection may carry the next
    /// request (HTTP/1.1 keep-alive), else the next one needs a new connection.
    End { reusable: bool },
}

/// Where the stream stood when the server closed the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Closed {
    /// Between responses, or at the end of a response that ran to the
    /// close: the session goes on with a request on a new connection.
    Between,
    /// In the middle of a response.
    MidResponse,
}

#[derive(Debug)]
pub struct StreamDecoder {
    parser: Parser,
    /// The start of a frame whose `\n` has not arrived yet.
    partial: Vec<u8>,
    /// Whether the current response's connection may be kept alive.
    reusable: bool,
    max_frame: usize,
}

impl StreamDecoder {
    pub fn new(max_frame: usize) -> StreamDecoder {
        StreamDecoder {
            parser: Parser::until_close(),
            partial: Vec::new(),
            reusable: false,
            max_frame,
        }
    }

    /// Parses what it can of `buf`, calling `on` for each event in order;
    /// returns the bytes used (the rest, an incomplete head or chunk-size
    /// line, is passed again followed by more). An error from `on` stops
    /// the parse and is returned.
    pub fn feed<F>(&mut self, buf: &[u8], mut on: F) -> Result<usize, String>
    where
        F: FnMut(StreamEvent<'_>) -> Result<(), String>,
    {
        let StreamDecoder {
            parser,
            partial,
            reusable,
            max_frame,
        } = self;
        parser.feed(buf, |ev| match ev {
            Event::Head(head) => {
                *reusable = !head.close && head.framing != Framing::Close;
                partial.clear();
                on(StreamEvent::Head {
                    status: head.status,
                })
            }
            Event::Body(body) => split_frames(body, partial, *max_frame, &mut on),
            Event::End => {
                if !partial.is_empty() {
                    return Err("the streaming response ended inside a frame".into());
                }
                on(StreamEvent::End {
                    reusable: *reusable,
                })
            }
        })
    }

    /// The server closed the connection; `pending`: bytes not parsed yet.
    /// A response that ran to the close ends here (`on` gets its
    /// [`StreamEvent::End`]).
    pub fn at_eof<F>(&mut self, pending: usize, mut on: F) -> Result<Closed, String>
    where
        F: FnMut(StreamEvent<'_>) -> Result<(), String>,
    {
        match self.parser.at_eof(pending) {
            Eof::Idle => Ok(Closed::Between),
            Eof::Ended if self.partial.is_empty() => {
                on(StreamEvent::End { reusable: false })?;
                Ok(Closed::Between)
            }
            Eof::Ended | Eof::Truncated => Ok(Closed::MidResponse),
        }
    }

    /// Forgets a connection's state, for the session's next one.
    pub fn reset(&mut self) {
        self.parser = Parser::until_close();
        self.partial.clear();
        self.reusable = false;
    }
}

/// Hands `on` every frame `body` completes; keeps the unfinished tail.
#[inline]
fn split_frames<F>(
    body: &[u8],
    partial: &mut Vec<u8>,
    max_frame: usize,
    on: &mut F,
) -> Result<(), String>
where
    F: FnMut(StreamEvent<'_>) -> Result<(), String>,
{
    let mut rest = body;
    if !partial.is_empty() {
        let Some(nl) = memchr::memchr(b'\n', rest) else {
            return keep(partial, rest, max_frame);
        };
        keep(partial, &rest[..nl], max_frame)?;
        on(StreamEvent::Frame(&partial[..]))?;
        partial.clear();
        rest = &rest[nl + 1..];
    }
    while let Some(nl) = memchr::memchr(b'\n', rest) {
        on(StreamEvent::Frame(&rest[..nl]))?;
        rest = &rest[nl + 1..];
    }
    if rest.is_empty() {
        Ok(())
    } else {
        keep(partial, rest, max_frame)
    }
}

/// Adds `more` to the unfinished frame, unless that makes it too long.
fn keep(partial: &mut Vec<u8>, more: &[u8], max_frame: usize) -> Result<(), String> {
    if partial.len() + more.len() > max_frame {
        return Err(format!(
            "a streaming frame longer than {max_frame} bytes (no newline)"
        ));
    }
    partial.extend_from_slice(more);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Owned events, for comparing.
    #[derive(Clone, Debug, PartialEq, Eq)]
    enum Ev {
        Head(u16),
        Frame(String),
        End(bool),
    }

    fn owned(e: StreamEvent<'_>) -> Ev {
        match e {
            StreamEvent::Head { status } => Ev::Head(status),
            StreamEvent::Frame(f) => Ev::Frame(String::from_utf8(f.to_vec()).unwrap()),
            StreamEvent::End { reusable } => Ev::End(reusable),
        }
    }

    /// Feeds `parts` as successive reads, carrying what is not used, as
    /// the engine does; then the close when `eof`.
    fn decode(parts: &[&[u8]], eof: bool) -> Result<(Vec<Ev>, Option<Closed>), String> {
        let mut d = StreamDecoder::new(1 << 16);
        let mut evs = Vec::new();
        let mut carry = Vec::new();
        for part in parts {
            carry.extend_from_slice(part);
            let used = d.feed(&carry, |e| {
                evs.push(owned(e));
                Ok(())
            })?;
            carry.drain(..used);
        }
        let closed = if eof {
            Some(d.at_eof(carry.len(), |e| {
                evs.push(owned(e));
                Ok(())
            })?)
        } else {
            None
        };
        Ok((evs, closed))
    }

    fn prelude() -> String {
        format!("{}\n", "h".repeat(2048))
    }

    /// Two responses of one session on a keep-alive connection, chunked
    /// the way sockjs-node chunks (a frame per chunk) and the way a
    /// batching server might (frames split across chunks, several in one).
    fn keep_alive_stream() -> (Vec<u8>, Vec<Ev>) {
        let head = "HTTP/1.1 200 OK\r\nContent-Type: application/javascript; charset=UTF-8\r\n\
                    Connection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n";
        let chunk = |s: &str| format!("{:x}\r\n{s}\r\n", s.len());
        let mut s = String::new();
        s += head;
        s += &chunk(&prelude());
        s += &chunk("o\n");
        s += &chunk("a[\"m1\"]\n");
        s += &chunk("h\na[\"m2\",\"m\\\"3\"]\na[\"m");
        s += &chunk("4\"]");
        s += &chunk("\n");
        s += "0\r\n\r\n";
        s += head;
        s += &chunk(&prelude());
        s += &chunk("a[\"m5\"]\nc[3000,\"Go away!\"]\n");
        s += "0\r\n\r\n";
        let frame = |f: &str| Ev::Frame(f.to_string());
        let h = "h".repeat(2048);
        let want = vec![
            Ev::Head(200),
            frame(&h),
            frame("o"),
            frame("a[\"m1\"]"),
            frame("h"),
            frame("a[\"m2\",\"m\\\"3\"]"),
            frame("a[\"m4\"]"),
            Ev::End(true),
            Ev::Head(200),
            frame(&h),
            frame("a[\"m5\"]"),
            frame("c[3000,\"Go away!\"]"),
            Ev::End(true),
        ];
        (s.into_bytes(), want)
    }

    #[test]
    fn split_at_every_byte() {
        let (s, want) = keep_alive_stream();
        assert_eq!(
            decode(&[&s], true),
            Ok((want.clone(), Some(Closed::Between)))
        );
        for cut in 0..=s.len() {
            let (a, b) = s.split_at(cut);
            assert_eq!(
                decode(&[a, b], false),
                Ok((want.clone(), None)),
                "cut at {cut}"
            );
        }
        let bytes: Vec<&[u8]> = s.chunks(1).collect();
        assert_eq!(decode(&bytes, false), Ok((want, None)));
    }

    #[test]
    fn http10_runs_to_the_close() {
        let s = format!(
            "HTTP/1.0 200 OK\r\nContent-Type: application/javascript\r\n\r\n{}o\na[\"x\"]\n",
            prelude()
        );
        let s = s.as_bytes();
        let want = vec![
            Ev::Head(200),
            Ev::Frame("h".repeat(2048)),
            Ev::Frame("o".into()),
            Ev::Frame("a[\"x\"]".into()),
            Ev::End(false),
        ];
        for cut in (0..=s.len()).step_by(13) {
            let (a, b) = s.split_at(cut);
            assert_eq!(
                decode(&[a, b], true),
                Ok((want.clone(), Some(Closed::Between))),
                "cut at {cut}"
            );
        }
        // Closed inside a frame: the frame is lost, the response was cut short.
        let (evs, closed) = decode(&[&s[..s.len() - 3]], true).unwrap();
        assert_eq!(closed, Some(Closed::MidResponse));
        assert_eq!(evs.last(), Some(&Ev::Frame("o".into())));
    }

    #[test]
    fn connection_close_is_not_reusable() {
        let s = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\no\n";
        assert_eq!(
            decode(&[s], false),
            Ok((
                vec![Ev::Head(200), Ev::Frame("o".into()), Ev::End(false)],
                None
            ))
        );
    }

    #[test]
    fn cut_short_and_refused() {
        let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        let mut s = head.to_vec();
        s.extend_from_slice(b"2\r\no\n\r\n3\r\na[");
        let (_, closed) = decode(&[&s], true).unwrap();
        assert_eq!(closed, Some(Closed::MidResponse));
        // A response that ends inside a frame.
        let mut s = head.to_vec();
        s.extend_from_slice(b"3\r\no\nh\r\n0\r\n\r\n");
        assert!(decode(&[&s], false).is_err());
        // A frame longer than the limit is refused before it is kept.
        let mut d = StreamDecoder::new(8);
        let mut s = head.to_vec();
        s.extend_from_slice(b"9\r\n123456789\r\n");
        assert!(d.feed(&s, |_| Ok(())).is_err());
        // Other statuses are the caller's to judge.
        assert_eq!(
            decode(
                &[b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"],
                true
            ),
            Ok((vec![Ev::Head(404), Ev::End(true)], Some(Closed::Between)))
        );
        // An error from the caller stops the parse.
        let mut d = StreamDecoder::new(64);
        let r = d.feed(
            b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\no\no\n",
            |e| match e {
                StreamEvent::Frame(_) => Err("stop".into()),
                _ => Ok(()),
            },
        );
        assert_eq!(r, Err("stop".to_string()));
    }

    #[test]
    fn reset_forgets_the_connection() {
        let mut d = StreamDecoder::new(64);
        d.feed(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\na[\"",
            |_| Ok(()),
        )
        .unwrap();
        d.reset();
        let mut evs = Vec::new();
        d.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nh\n", |e| {
            evs.push(owned(e));
            Ok(())
        })
        .unwrap();
        assert_eq!(evs, [Ev::Head(200), Ev::Frame("h".into()), Ev::End(true)]);
    }
}
