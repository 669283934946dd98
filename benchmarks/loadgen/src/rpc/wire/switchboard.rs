//! Switchboard's own protocol (`docs/protocol.md`) through the real codec
//! (`switchboard_proto::rpc`), as `switchboard-client` speaks it with the
//! `raw` codec: preface and HELLO at once, nothing more until the server's
//! preface and WELCOME; then a MESSAGE per call (call ids from 1, one
//! sequence per connection), answered by a final RESPONSE (`tiny`: the
//! payload echoed) or a FAST_REPLY (`fast`: the integer 200).

use switchboard_proto::rpc::{
    decode, decode_preface, encode, encode_heartbeat, encode_message_header, uuid, Frame, Hello,
    Settings, DEFAULT_INITIAL_WINDOW, DEFAULT_MAX_FRAME_SIZE, PREFACE, RAW_CODEC,
};

use super::{Answer, Call, Parsed, FAST_CODE};

/// The largest frame we accept (what our HELLO announces): the protocol's
/// default. Answers here are a few dozen bytes.
const MAX_FRAME: usize = DEFAULT_MAX_FRAME_SIZE as usize;

/// One connection's codec: what to call and what the right answer is.
#[derive(Clone, Debug)]
pub struct Switchboard {
    call: Call,
    payload: Vec<u8>,
}

impl Switchboard {
    pub fn new(call: Call, payload: &[u8]) -> Switchboard {
        Switchboard {
            call,
            payload: payload.to_vec(),
        }
    }

    /// Action names of `benchmarks/rpc/peers/switchboard/server.mjs`.
    fn action(&self) -> &'static str {
        match self.call {
            Call::Echo => "tiny",
            Call::Fast => "fast",
        }
    }

    /// Our preface and HELLO. `random` becomes the seed (with the UUID v4
    /// marks set); we run no calls of the server's (`maxConcurrentCalls`
    /// 0), want no heartbeats and use no optional feature.
    pub fn hello(random: [u8; 16], out: &mut Vec<u8>) {
        out.extend_from_slice(PREFACE);
        let hello = Frame::Hello(Hello {
            settings: Settings {
                seed: uuid::seed_from_random(random),
                max_frame_size: DEFAULT_MAX_FRAME_SIZE,
                initial_window: DEFAULT_INITIAL_WINDOW,
                max_concurrent_calls: 0,
                heartbeat_ms: 0,
                features: 0,
            },
            codecs: vec![RAW_CODEC],
            data: &[],
        });
        encode(&hello, out);
    }

    /// The server's preface and WELCOME at the start of `buf`: `Ok(None)`
    /// until both have arrived, then the bytes they used. Refuses a server
    /// that chose another codec or runs fewer calls at once than
    /// `in_flight`.
    pub fn handshake(buf: &[u8], in_flight: u32) -> Result<Option<usize>, String> {
        let Some(preface) = decode_preface(buf).map_err(|e| format!("server preface: {e}"))? else {
            return Ok(None);
        };
        let Some((frame, used)) =
            decode(&buf[preface..], MAX_FRAME).map_err(|e| format!("handshake: {e}"))?
        else {
            return Ok(None);
        };
        match frame {
            Frame::Welcome(w) => {
                if w.codec != RAW_CODEC {
                    return Err(format!("the server chose codec {:?}, not raw", w.codec));
                }
                if w.settings.max_concurrent_calls < in_flight {
                    return Err(format!(
                        "the server runs {} calls at once per connection, fewer than --in-flight {in_flight}",
                        w.settings.max_concurrent_calls
                    ));
                }
                Ok(Some(preface + used))
            }
            Frame::GoAway { code, message, .. } => Err(format!(
                "the server refused the connection: {code} {message}"
            )),
            other => Err(format!(
                "the server's first frame is type {:#04x}, not WELCOME",
                other.frame_type()
            )),
        }
    }

    /// Appends call `seq` (the call id, from 1).
    #[inline]
    pub fn write_call(&self, seq: u64, out: &mut Vec<u8>) {
        let payload: &[u8] = match self.call {
            Call::Echo => &self.payload,
            Call::Fast => &[],
        };
        encode_message_header(seq, true, None, self.action(), payload.len(), out);
        out.extend_from_slice(payload);
    }

    /// The frame at the start of `buf`. A ping is answered into `out`.
    #[inline]
    pub fn parse(&self, buf: &[u8], out: &mut Vec<u8>) -> Parsed {
        let Some((frame, used)) = decode(buf, MAX_FRAME).map_err(|e| e.to_string())? else {
            return Ok(None);
        };
        let answer = match frame {
            Frame::Response(r) => {
                let id = Some(r.call_id);
                if !r.last || r.attachments != 0 {
                    Answer::Bad(id, "a non-final RESPONSE or one with attachments")
                } else if self.call == Call::Fast {
                    Answer::Bad(id, "a RESPONSE where a FAST_REPLY was expected")
                } else if r.payload != self.payload.as_slice() {
                    Answer::Bad(id, "the RESPONSE's payload is not the request's")
                } else {
                    Answer::Ok(id)
                }
            }
            Frame::FastReply { call_id, code } => {
                let id = Some(call_id);
                if self.call != Call::Fast {
                    Answer::Bad(id, "a FAST_REPLY where the payload was expected")
                } else if code != FAST_CODE {
                    Answer::Bad(id, "a FAST_REPLY with another code than 200")
                } else {
                    Answer::Ok(id)
                }
            }
            Frame::Error(e) => Answer::Bad(Some(e.call_id), "an ERROR frame"),
            Frame::End { call_id } => Answer::Bad(Some(call_id), "END without a response"),
            Frame::Heartbeat { pong } => {
                if !pong {
                    encode_heartbeat(true, out);
                }
                Answer::Other
            }
            Frame::GoAway { code, message, .. } => {
                return Err(format!("the server sent GO_AWAY: {code} {message}"))
            }
            other => {
                return Err(format!(
                    "unexpected frame type {:#04x} from the server",
                    other.frame_type()
                ))
            }
        };
        Ok(Some((answer, used)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::TINY;
    use switchboard_proto::rpc::{
        accept_hello, encode_fast_reply, encode_response_header, ServerSettings,
    };

    /// A server's side of the handshake, from our HELLO.
    fn welcome(hello: &[u8], ours: &ServerSettings) -> Vec<u8> {
        assert_eq!(&hello[..4], PREFACE);
        let (frame, used) = decode(&hello[4..], MAX_FRAME).unwrap().unwrap();
        assert_eq!(4 + used, hello.len());
        let Frame::Hello(h) = frame else {
            panic!("not a HELLO")
        };
        assert_eq!(h.codecs, vec!["raw"]);
        assert_eq!(h.settings.heartbeat_ms, 0);
        let w = accept_hello(&h, ours, [7; 16]).unwrap();
        let mut out = PREFACE.to_vec();
        encode(&w.frame(), &mut out);
        out
    }

    #[test]
    fn handshake_byte_by_byte() {
        let mut hello = Vec::new();
        Switchboard::hello([1; 16], &mut hello);
        let ours = ServerSettings {
            heartbeat_ms: 0,
            ..ServerSettings::default()
        };
        let mut bytes = welcome(&hello, &ours);
        bytes.extend_from_slice(b"next");
        let total = bytes.len() - 4;
        for n in 0..total {
            assert_eq!(Switchboard::handshake(&bytes[..n], 100), Ok(None), "{n}");
        }
        assert_eq!(Switchboard::handshake(&bytes, 100), Ok(Some(total)));
        // Too few calls at once for the load.
        let small = ServerSettings {
            max_concurrent_calls: 10,
            ..ours
        };
        let err = Switchboard::handshake(&welcome(&hello, &small), 100).unwrap_err();
        assert!(err.contains("fewer than --in-flight 100"), "{err}");
        assert!(Switchboard::handshake(b"HTTP/1.1 400", 1).is_err());
    }

    #[test]
    fn calls_and_answers() {
        let sb = Switchboard::new(Call::Echo, TINY);
        let mut out = Vec::new();
        sb.write_call(1, &mut out);
        sb.write_call(300, &mut out);
        // Both are MESSAGEs expecting a reply to `tiny` with the 16 bytes.
        let (f, used) = decode(&out, MAX_FRAME).unwrap().unwrap();
        let Frame::Message(m) = f else { panic!() };
        assert_eq!((m.call_id, m.expects_reply, m.action), (1, true, "tiny"));
        assert_eq!(m.payload, TINY);
        let Frame::Message(m) = decode(&out[used..], MAX_FRAME).unwrap().unwrap().0 else {
            panic!()
        };
        assert_eq!(m.call_id, 300);

        // The right answer, split anywhere, then a wrong one and a ping.
        let mut rx = Vec::new();
        encode_response_header(300, true, 16, &mut rx);
        rx.extend_from_slice(TINY);
        let first = rx.len();
        encode_response_header(301, true, 3, &mut rx);
        rx.extend_from_slice(b"abc");
        let second = rx.len();
        encode_heartbeat(false, &mut rx);
        let mut pong = Vec::new();
        for n in 0..first {
            assert_eq!(sb.parse(&rx[..n], &mut pong), Ok(None));
        }
        assert_eq!(
            sb.parse(&rx, &mut pong),
            Ok(Some((Answer::Ok(Some(300)), first)))
        );
        assert!(matches!(
            sb.parse(&rx[first..], &mut pong),
            Ok(Some((Answer::Bad(Some(301), _), n))) if n == second - first
        ));
        assert_eq!(
            sb.parse(&rx[second..], &mut pong),
            Ok(Some((Answer::Other, rx.len() - second)))
        );
        let mut want = Vec::new();
        encode_heartbeat(true, &mut want);
        assert_eq!(pong, want);
        // A FAST_REPLY is wrong for an echo call; garbage is fatal.
        let mut fr = Vec::new();
        encode_fast_reply(5, 200, &mut fr);
        assert!(matches!(
            sb.parse(&fr, &mut pong),
            Ok(Some((Answer::Bad(Some(5), _), _)))
        ));
        assert!(sb.parse(&[0xff, 0, 0], &mut pong).is_err());
    }

    #[test]
    fn fast_reply() {
        let sb = Switchboard::new(Call::Fast, TINY);
        let mut out = Vec::new();
        sb.write_call(7, &mut out);
        let Frame::Message(m) = decode(&out, MAX_FRAME).unwrap().unwrap().0 else {
            panic!()
        };
        assert_eq!((m.action, m.payload), ("fast", &[][..]));
        let mut rx = Vec::new();
        encode_fast_reply(7, 200, &mut rx);
        let n = rx.len();
        encode_fast_reply(8, 201, &mut rx);
        let mut pong = Vec::new();
        assert_eq!(sb.parse(&rx, &mut pong), Ok(Some((Answer::Ok(Some(7)), n))));
        assert!(matches!(
            sb.parse(&rx[n..], &mut pong),
            Ok(Some((Answer::Bad(Some(8), _), _)))
        ));
    }
}
