//! The ordering rules of §4 that need memory of earlier frames but not of
//! calls or streams: one [`SequenceCheck`] per direction of a connection.
//!
//! What it does not check, because that needs per-call or per-stream state
//! which the connection layer (the TypeScript peer) owns: flow control
//! (`ERR_PROTOCOL_FLOW_CONTROL`), file sizes (`ERR_PROTOCOL_FILE_SIZE`),
//! responses to call ids never used and data on streams that are not open
//! (`ERR_PROTOCOL_CALL_ID` / `ERR_PROTOCOL_STREAM_ID` there), timeouts.

use super::error::ProtocolError;
use super::frame::{Frame, ALL_FEATURES, FEATURE_CANCEL, FEATURE_FILES, FEATURE_STREAMS};

/// Checks the frames one peer sends after the handshake, in arrival order:
///
/// - MESSAGE call ids start at 1 and increase strictly
///   (`ERR_PROTOCOL_CALL_ID`);
/// - STREAM_OPEN stream ids start at 1 and increase strictly
///   (`ERR_PROTOCOL_STREAM_ID`);
/// - a MESSAGE or RESPONSE with `n` attachments is followed by exactly `n`
///   STREAM_OPEN frames, and a STREAM_OPEN anywhere else is
///   `ERR_PROTOCOL_SEQUENCE`;
/// - HELLO or WELCOME is `ERR_PROTOCOL_HANDSHAKE`;
/// - a frame that uses a feature not in effect is `ERR_PROTOCOL_FEATURE`
///   (§4): a plain STREAM_OPEN needs streams, one with FILE needs files, a
///   CANCEL needs cancellation.
///
/// After an error the connection is over; the state is then unspecified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SequenceCheck {
    /// The feature bits in effect on the connection.
    features: u32,
    /// The last MESSAGE call id (0 before the first): the order's memory.
    highest_call_id: u64,
    /// The last call id of a MESSAGE whose attachments have all arrived:
    /// what a GO_AWAY reports (§2.4). A message still waiting for its
    /// STREAM_OPENs is never dispatched if the connection ends first.
    complete_call_id: u64,
    /// The last STREAM_OPEN stream id (0 before the first).
    last_stream_id: u64,
    /// STREAM_OPEN frames still due after the last MESSAGE or RESPONSE.
    pending_attachments: u8,
}

impl Default for SequenceCheck {
    fn default() -> Self {
        Self::with_features(ALL_FEATURES)
    }
}

impl SequenceCheck {
    /// A check for a peer that has sent nothing since its handshake, with
    /// every feature in effect.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same for a connection whose handshake put only `features` in
    /// effect (the bits both sides set).
    pub fn with_features(features: u32) -> Self {
        Self {
            features,
            highest_call_id: 0,
            complete_call_id: 0,
            last_stream_id: 0,
            pending_attachments: 0,
        }
    }

    /// The highest call id of the peer's MESSAGEs that are complete, their
    /// attachments' STREAM_OPENs all in (0 = none): the `last call id` of a
    /// GO_AWAY to this peer (§2.4, §8), since a message that still waits
    /// for its attachments is not dispatched when the connection ends.
    /// Unnumbered messages (call id 0) do not count.
    pub fn last_call_id(&self) -> u64 {
        self.complete_call_id
    }

    /// Whether STREAM_OPEN frames are still due: the last MESSAGE or
    /// RESPONSE cannot be dispatched until they have arrived.
    pub fn awaiting_attachments(&self) -> bool {
        self.pending_attachments > 0
    }

    /// Checks the next frame received from the peer and records it.
    pub fn check(&mut self, frame: &Frame<'_>) -> Result<(), ProtocolError> {
        match frame {
            Frame::Hello(_) | Frame::Welcome(_) => {
                return Err(ProtocolError::Handshake(
                    "handshake frame after the handshake",
                ));
            }
            Frame::StreamOpen { stream_id, file } => {
                if self.pending_attachments == 0 {
                    return Err(ProtocolError::Sequence(
                        "STREAM_OPEN not right after a MESSAGE or RESPONSE with attachments",
                    ));
                }
                match file {
                    None if self.features & FEATURE_STREAMS == 0 => {
                        return Err(ProtocolError::Feature(
                            "a stream without the streams feature",
                        ));
                    }
                    Some(_) if self.features & FEATURE_FILES == 0 => {
                        return Err(ProtocolError::Feature("a file without the files feature"));
                    }
                    _ => {}
                }
                if *stream_id <= self.last_stream_id {
                    return Err(ProtocolError::StreamId {
                        stream_id: *stream_id,
                        last: self.last_stream_id,
                    });
                }
                self.last_stream_id = *stream_id;
                self.pending_attachments -= 1;
                if self.pending_attachments == 0 {
                    // The message they belong to (if numbered) is complete.
                    self.complete_call_id = self.highest_call_id;
                }
                return Ok(());
            }
            _ if self.pending_attachments > 0 => {
                return Err(ProtocolError::Sequence(
                    "another frame before every attachment's STREAM_OPEN",
                ));
            }
            Frame::Cancel { .. } if self.features & FEATURE_CANCEL == 0 => {
                return Err(ProtocolError::Feature(
                    "a CANCEL without the cancellation feature",
                ));
            }
            _ => {}
        }
        match frame {
            // Unnumbered one-way messages (broadcasts) take no place in
            // the order.
            Frame::Message(m) if m.call_id == 0 && !m.expects_reply => {
                self.pending_attachments = m.attachments;
            }
            Frame::Message(m) => {
                if m.call_id <= self.highest_call_id {
                    return Err(ProtocolError::CallId {
                        call_id: m.call_id,
                        last: self.highest_call_id,
                    });
                }
                self.highest_call_id = m.call_id;
                self.pending_attachments = m.attachments;
                if m.attachments == 0 {
                    self.complete_call_id = m.call_id;
                }
            }
            Frame::Response(r) => self.pending_attachments = r.attachments,
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::{Message, Response};

    fn message(call_id: u64, attachments: u8) -> Frame<'static> {
        Frame::Message(Message {
            call_id,
            expects_reply: true,
            uuid: None,
            attachments,
            action: "a",
            payload: &[],
        })
    }

    fn open(stream_id: u64) -> Frame<'static> {
        Frame::StreamOpen {
            stream_id,
            file: None,
        }
    }

    fn run(frames: &[Frame<'_>]) -> Result<(), (usize, &'static str)> {
        let mut check = SequenceCheck::new();
        for (i, frame) in frames.iter().enumerate() {
            check.check(frame).map_err(|e| (i, e.code()))?;
        }
        Ok(())
    }

    #[test]
    fn call_ids_increase_from_one() {
        assert_eq!(run(&[message(1, 0), message(2, 0), message(10, 0)]), Ok(()));
        assert_eq!(run(&[message(0, 0)]), Err((0, "ERR_PROTOCOL_CALL_ID")));
        assert_eq!(
            run(&[message(3, 0), message(3, 0)]),
            Err((1, "ERR_PROTOCOL_CALL_ID"))
        );
        let mut check = SequenceCheck::new();
        check.check(&message(7, 0)).unwrap();
        assert_eq!(check.last_call_id(), 7);
    }

    #[test]
    fn the_go_away_call_id_leaves_out_a_message_awaiting_its_attachments() {
        let mut check = SequenceCheck::new();
        check.check(&message(1, 1)).unwrap();
        assert_eq!(check.last_call_id(), 0, "call 1 is not complete");
        assert!(check.check(&Frame::Heartbeat { pong: false }).is_err());
        assert_eq!(check.last_call_id(), 0, "nor after the violation");

        let mut check = SequenceCheck::new();
        check.check(&message(1, 0)).unwrap();
        check.check(&message(2, 2)).unwrap();
        check.check(&open(1)).unwrap();
        assert_eq!(check.last_call_id(), 1);
        check.check(&open(2)).unwrap();
        assert_eq!(check.last_call_id(), 2);
        // Attachments of a response or an unnumbered message change nothing.
        let response = Frame::Response(Response {
            call_id: 9,
            last: true,
            attachments: 1,
            payload: &[],
        });
        check.check(&response).unwrap();
        check.check(&open(3)).unwrap();
        let mut unnumbered = message(0, 1);
        if let Frame::Message(m) = &mut unnumbered {
            m.expects_reply = false;
        }
        check.check(&unnumbered).unwrap();
        check.check(&open(4)).unwrap();
        assert_eq!(check.last_call_id(), 2);
    }

    #[test]
    fn attachments_follow_at_once() {
        let response = Frame::Response(Response {
            call_id: 1,
            last: true,
            attachments: 1,
            payload: &[],
        });
        assert_eq!(
            run(&[message(1, 2), open(1), open(2), response.clone(), open(5)]),
            Ok(())
        );
        assert_eq!(
            run(&[message(1, 2), open(1), Frame::Heartbeat { pong: false }]),
            Err((2, "ERR_PROTOCOL_SEQUENCE"))
        );
        assert_eq!(
            run(&[message(1, 1), open(1), open(2)]),
            Err((2, "ERR_PROTOCOL_SEQUENCE"))
        );
        assert_eq!(run(&[open(1)]), Err((0, "ERR_PROTOCOL_SEQUENCE")));
        assert_eq!(
            run(&[message(1, 1), open(0)]),
            Err((1, "ERR_PROTOCOL_STREAM_ID"))
        );
        assert_eq!(
            run(&[response, open(4), message(1, 1), open(4)]),
            Err((3, "ERR_PROTOCOL_STREAM_ID"))
        );
        let mut check = SequenceCheck::new();
        check.check(&message(1, 1)).unwrap();
        assert!(check.awaiting_attachments());
        check.check(&open(1)).unwrap();
        assert!(!check.awaiting_attachments());
    }

    #[test]
    fn frames_of_features_not_in_effect_are_refused() {
        let file = Frame::StreamOpen {
            stream_id: 1,
            file: Some(crate::rpc::FileInfo { size: 1, name: "f" }),
        };
        let cancel = Frame::Cancel { call_id: 1 };
        let outcome = |features: u32, frames: &[Frame<'_>]| {
            let mut check = SequenceCheck::with_features(features);
            for (i, frame) in frames.iter().enumerate() {
                check.check(frame).map_err(|e| (i, e.code()))?;
            }
            Ok(())
        };
        let feature = Err((1, "ERR_PROTOCOL_FEATURE"));
        assert_eq!(outcome(FEATURE_FILES, &[message(1, 1), open(1)]), feature);
        assert_eq!(
            outcome(FEATURE_STREAMS, &[message(1, 1), file.clone()]),
            feature
        );
        assert_eq!(
            outcome(FEATURE_FILES, &[message(1, 1), file.clone()]),
            Ok(())
        );
        assert_eq!(outcome(FEATURE_STREAMS, &[message(1, 1), open(1)]), Ok(()));
        assert_eq!(
            outcome(0, &[message(1, 0), cancel.clone()]),
            Err((1, "ERR_PROTOCOL_FEATURE"))
        );
        assert_eq!(outcome(FEATURE_CANCEL, &[message(1, 0), cancel]), Ok(()));
        // The place of a STREAM_OPEN is checked first.
        assert_eq!(outcome(0, &[open(1)]), Err((0, "ERR_PROTOCOL_SEQUENCE")));
        assert_eq!(
            SequenceCheck::new(),
            SequenceCheck::with_features(ALL_FEATURES)
        );
    }

    #[test]
    fn no_second_handshake() {
        let welcome = crate::rpc::OwnedWelcome {
            settings: crate::rpc::Settings {
                seed: [0; 16],
                max_frame_size: 0,
                initial_window: 0,
                max_concurrent_calls: 0,
                heartbeat_ms: 0,
                features: 0,
            },
            codec: "raw".into(),
            data: vec![],
        };
        assert_eq!(
            SequenceCheck::new()
                .check(&welcome.frame())
                .unwrap_err()
                .code(),
            "ERR_PROTOCOL_HANDSHAKE"
        );
    }
}
