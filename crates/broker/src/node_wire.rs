//! A node message as it travels through Redis (docs/scale-out.md, "Node
//! messages"): an operation on another node's connections, or a node's
//! heartbeat or goodbye. Pure: bytes in, values out.
//!
//! ```text
//! 0      version (1)
//! 1      kind
//! 2..4   sending node's number, u16 little-endian
//! ..     the kind's fields (integers little-endian):
//!   1 send         flags u8 (bit 0 binary), id u64, payload
//!   2 end          id u64, close code u16, reason (UTF-8)
//!   3 terminate    id u64
//!   4 subscribe    delta i32, n u32, n ids u64, channel (UTF-8)
//!   5 unsubscribe  id u64, channel (UTF-8)
//!   6 publishTo    flags u8 (bit 0 binary, bit 1 exclude follows),
//!                  [exclude node u16, exclude id u64],
//!                  n u16, n channels (length u16, UTF-8),
//!                  m u16, m groups (node u16, k u32, k ids u64),
//!                  payload
//!   16 alive       (nothing: a heartbeat)
//!   17 leave       (nothing: a graceful goodbye)
//! ```
//!
//! The last variable field runs to the end of the message, so it needs no
//! length. Every count is checked against the bytes that are there before
//! anything is allocated: a malformed or hostile message costs no more
//! memory than its own size, and is refused (`None`), never half applied.

use switchboard_runtime::NodeCommand;

/// The only version written; another version is refused.
pub const VERSION: u8 = 1;

const SEND: u8 = 1;
const END: u8 = 2;
const TERMINATE: u8 = 3;
const SUBSCRIBE: u8 = 4;
const UNSUBSCRIBE: u8 = 5;
const PUBLISH_TO: u8 = 6;
const ALIVE: u8 = 16;
const LEAVE: u8 = 17;

const BINARY: u8 = 1;
const EXCLUDE: u8 = 2;

/// A decoded node message, borrowing from the bytes.
#[derive(Debug, PartialEq, Eq)]
pub enum Inbound<'a> {
    Command(Command<'a>),
    /// The sender is alive (its heartbeat).
    Alive,
    /// The sender leaves (a graceful shutdown).
    Leave,
}

/// An operation to apply here; as [`NodeCommand`], owning its lists.
#[derive(Debug, PartialEq, Eq)]
pub enum Command<'a> {
    Send {
        id: u64,
        data: &'a [u8],
        binary: bool,
    },
    End {
        id: u64,
        code: u16,
        reason: &'a str,
    },
    Terminate {
        id: u64,
    },
    Subscribe {
        ids: Vec<u64>,
        channel: &'a str,
        delta: i32,
    },
    Unsubscribe {
        id: u64,
        channel: &'a str,
    },
    PublishTo {
        channels: Vec<&'a str>,
        groups: Vec<(u16, Vec<u64>)>,
        data: &'a [u8],
        binary: bool,
        exclude: Option<(u16, u64)>,
    },
}

/// A message and its sender.
#[derive(Debug, PartialEq, Eq)]
pub struct Message<'a> {
    pub from: u16,
    pub body: Inbound<'a>,
}

fn header(kind: u8, from: u16, capacity: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + capacity);
    out.push(VERSION);
    out.push(kind);
    out.extend_from_slice(&from.to_le_bytes());
    out
}

/// A heartbeat of node `from`.
pub fn alive(from: u16) -> Vec<u8> {
    header(ALIVE, from, 0)
}

/// The goodbye of node `from`.
pub fn leave(from: u16) -> Vec<u8> {
    header(LEAVE, from, 0)
}

/// Encode an operation of node `from`: the one copy a payload makes on
/// its way to Redis.
///
/// A channel or reason longer than its length field can say is cut at the
/// field's limit only where the field is a u16 (channel names in
/// `publishTo`, which are at most 255 bytes for the protocol anyway);
/// lists longer than their count field are cut the same way. The caller
/// (`remote.rs`) never passes such sizes in practice: 65,535 channels or
/// 4 Gi ids in one call.
pub fn encode(from: u16, command: &NodeCommand<'_>) -> Vec<u8> {
    match *command {
        NodeCommand::Send { id, data, binary } => {
            let mut out = header(SEND, from, 9 + data.len());
            out.push(if binary { BINARY } else { 0 });
            out.extend_from_slice(&id.to_le_bytes());
            out.extend_from_slice(data);
            out
        }
        NodeCommand::End { id, code, reason } => {
            let mut out = header(END, from, 10 + reason.len());
            out.extend_from_slice(&id.to_le_bytes());
            out.extend_from_slice(&code.to_le_bytes());
            out.extend_from_slice(reason.as_bytes());
            out
        }
        NodeCommand::Terminate { id } => {
            let mut out = header(TERMINATE, from, 8);
            out.extend_from_slice(&id.to_le_bytes());
            out
        }
        NodeCommand::Subscribe {
            ids,
            channel,
            delta,
        } => {
            let ids = &ids[..ids.len().min(u32::MAX as usize)];
            let mut out = header(SUBSCRIBE, from, 8 + 8 * ids.len() + channel.len());
            out.extend_from_slice(&delta.to_le_bytes());
            out.extend_from_slice(&(ids.len() as u32).to_le_bytes());
            for id in ids {
                out.extend_from_slice(&id.to_le_bytes());
            }
            out.extend_from_slice(channel.as_bytes());
            out
        }
        NodeCommand::Unsubscribe { id, channel } => {
            let mut out = header(UNSUBSCRIBE, from, 8 + channel.len());
            out.extend_from_slice(&id.to_le_bytes());
            out.extend_from_slice(channel.as_bytes());
            out
        }
        NodeCommand::PublishTo {
            channels,
            groups,
            data,
            binary,
            exclude,
        } => {
            let channels = &channels[..channels.len().min(u16::MAX as usize)];
            let groups = &groups[..groups.len().min(u16::MAX as usize)];
            let sizes: usize = channels.iter().map(|c| 2 + c.len()).sum::<usize>()
                + groups
                    .iter()
                    .map(|(_, ids)| 6 + 8 * ids.len())
                    .sum::<usize>();
            let mut out = header(PUBLISH_TO, from, 15 + sizes + data.len());
            let flags =
                if binary { BINARY } else { 0 } | if exclude.is_some() { EXCLUDE } else { 0 };
            out.push(flags);
            if let Some((node, id)) = exclude {
                out.extend_from_slice(&node.to_le_bytes());
                out.extend_from_slice(&id.to_le_bytes());
            }
            out.extend_from_slice(&(channels.len() as u16).to_le_bytes());
            for channel in channels {
                let name = &channel.as_bytes()[..channel.len().min(u16::MAX as usize)];
                out.extend_from_slice(&(name.len() as u16).to_le_bytes());
                out.extend_from_slice(name);
            }
            out.extend_from_slice(&(groups.len() as u16).to_le_bytes());
            for (node, ids) in groups {
                let ids = &ids[..ids.len().min(u32::MAX as usize)];
                out.extend_from_slice(&node.to_le_bytes());
                out.extend_from_slice(&(ids.len() as u32).to_le_bytes());
                for id in ids {
                    out.extend_from_slice(&id.to_le_bytes());
                }
            }
            out.extend_from_slice(data);
            out
        }
    }
}

/// Decode a node message; `None` for anything malformed or of another
/// version.
pub fn decode(bytes: &[u8]) -> Option<Message<'_>> {
    let mut r = Reader(bytes);
    if r.u8()? != VERSION {
        return None;
    }
    let kind = r.u8()?;
    let from = r.u16()?;
    let body = match kind {
        SEND => {
            let flags = r.u8()?;
            if flags & !BINARY != 0 {
                return None;
            }
            let id = r.u64()?;
            Inbound::Command(Command::Send {
                id,
                data: r.rest(),
                binary: flags & BINARY != 0,
            })
        }
        END => {
            let id = r.u64()?;
            let code = r.u16()?;
            let reason = std::str::from_utf8(r.rest()).ok()?;
            Inbound::Command(Command::End { id, code, reason })
        }
        TERMINATE => {
            let id = r.u64()?;
            r.end()?;
            Inbound::Command(Command::Terminate { id })
        }
        SUBSCRIBE => {
            let delta = r.u32()? as i32;
            let ids = r.ids()?;
            let channel = std::str::from_utf8(r.rest()).ok()?;
            Inbound::Command(Command::Subscribe {
                ids,
                channel,
                delta,
            })
        }
        UNSUBSCRIBE => {
            let id = r.u64()?;
            let channel = std::str::from_utf8(r.rest()).ok()?;
            Inbound::Command(Command::Unsubscribe { id, channel })
        }
        PUBLISH_TO => {
            let flags = r.u8()?;
            if flags & !(BINARY | EXCLUDE) != 0 {
                return None;
            }
            let exclude = match flags & EXCLUDE != 0 {
                true => Some((r.u16()?, r.u64()?)),
                false => None,
            };
            let count = usize::from(r.u16()?);
            // Each channel takes at least its 2-byte length.
            if count > r.0.len() / 2 {
                return None;
            }
            let mut channels = Vec::with_capacity(count);
            for _ in 0..count {
                let len = usize::from(r.u16()?);
                channels.push(std::str::from_utf8(r.take(len)?).ok()?);
            }
            let count = usize::from(r.u16()?);
            // Each group takes at least its 6-byte head.
            if count > r.0.len() / 6 {
                return None;
            }
            let mut groups = Vec::with_capacity(count);
            for _ in 0..count {
                let node = r.u16()?;
                groups.push((node, r.ids()?));
            }
            Inbound::Command(Command::PublishTo {
                channels,
                groups,
                data: r.rest(),
                binary: flags & BINARY != 0,
                exclude,
            })
        }
        ALIVE => {
            r.end()?;
            Inbound::Alive
        }
        LEAVE => {
            r.end()?;
            Inbound::Leave
        }
        _ => return None,
    };
    Some(Message { from, body })
}

/// Reads the fields in order; every read fails (`None`) past the end.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.0.len() {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.array::<1>()?[0])
    }

    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.array()?))
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.array()?))
    }

    /// A u32 count and that many ids, the count checked against the bytes
    /// before the list is allocated.
    fn ids(&mut self) -> Option<Vec<u64>> {
        let count = self.u32()? as usize;
        let bytes = self.take(count.checked_mul(8)?)?;
        Some(
            bytes
                .chunks_exact(8)
                .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
                .collect(),
        )
    }

    fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.0)
    }

    fn end(&self) -> Option<()> {
        self.0.is_empty().then_some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(command: NodeCommand<'_>) -> Vec<u8> {
        let bytes = encode(7, &command);
        let message = decode(&bytes).expect("decodes");
        assert_eq!(message.from, 7);
        let Inbound::Command(decoded) = message.body else {
            panic!("not a command")
        };
        let again = match &decoded {
            Command::Send { id, data, binary } => NodeCommand::Send {
                id: *id,
                data,
                binary: *binary,
            },
            Command::End { id, code, reason } => NodeCommand::End {
                id: *id,
                code: *code,
                reason,
            },
            Command::Terminate { id } => NodeCommand::Terminate { id: *id },
            Command::Subscribe {
                ids,
                channel,
                delta,
            } => NodeCommand::Subscribe {
                ids,
                channel,
                delta: *delta,
            },
            Command::Unsubscribe { id, channel } => NodeCommand::Unsubscribe { id: *id, channel },
            Command::PublishTo {
                channels,
                groups,
                data,
                binary,
                exclude,
            } => {
                let bytes = encode(
                    7,
                    &NodeCommand::PublishTo {
                        channels,
                        groups,
                        data,
                        binary: *binary,
                        exclude: *exclude,
                    },
                );
                assert_eq!(decode(&bytes).unwrap().body, Inbound::Command(decoded));
                return bytes;
            }
        };
        assert_eq!(again, command);
        bytes
    }

    #[test]
    fn byte_vectors() {
        let send = round_trip(NodeCommand::Send {
            id: 0x0102,
            data: b"hi",
            binary: true,
        });
        assert_eq!(send, [1, 1, 7, 0, 1, 2, 1, 0, 0, 0, 0, 0, 0, b'h', b'i']);
        let end = round_trip(NodeCommand::End {
            id: 3,
            code: 4000,
            reason: "bye",
        });
        assert_eq!(
            end,
            [1, 2, 7, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0xa0, 0x0f, b'b', b'y', b'e']
        );
        let subscribe = round_trip(NodeCommand::Subscribe {
            ids: &[1, 2],
            channel: "room",
            delta: -1,
        });
        assert_eq!(subscribe.len(), 4 + 4 + 4 + 16 + 4);
        assert_eq!(&subscribe[4..8], &[0xff; 4]);
        round_trip(NodeCommand::Terminate { id: u64::MAX });
        round_trip(NodeCommand::Unsubscribe { id: 9, channel: "" });
        let publish = round_trip(NodeCommand::PublishTo {
            channels: &["a", "bc"],
            groups: &[(2, vec![5]), (3, vec![])],
            data: b"x",
            binary: false,
            exclude: Some((2, 5)),
        });
        assert_eq!(
            publish,
            [
                1, 6, 7, 0, // header
                2, 2, 0, 5, 0, 0, 0, 0, 0, 0, 0, // flags, exclude
                2, 0, 1, 0, b'a', 2, 0, b'b', b'c', // channels
                2, 0, 2, 0, 1, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, // groups
                b'x'
            ]
        );
        assert_eq!(
            decode(&alive(300)),
            Some(Message {
                from: 300,
                body: Inbound::Alive
            })
        );
        assert_eq!(decode(&leave(1)).unwrap().body, Inbound::Leave);
    }

    #[test]
    fn refuses_malformed_messages() {
        assert_eq!(decode(b""), None);
        assert_eq!(decode(b"plain text from another program"), None);
        // Another version, an unknown kind, unknown flags.
        assert_eq!(decode(&[2, 16, 1, 0]), None);
        assert_eq!(decode(&[1, 99, 1, 0]), None);
        assert_eq!(decode(&[1, 1, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0]), None);
        // Trailing bytes where none belong.
        assert_eq!(decode(&[1, 16, 1, 0, 0]), None);
        // Cut short.
        assert_eq!(decode(&[1, 3, 1, 0, 1, 2]), None);
        // Counts larger than the bytes: refused before allocating.
        assert_eq!(
            decode(&[1, 4, 1, 0, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]),
            None
        );
        assert_eq!(decode(&[1, 6, 1, 0, 0, 0xff, 0xff]), None);
        assert_eq!(decode(&[1, 6, 1, 0, 0, 0, 0, 0xff, 0xff, 1]), None);
        // A reason or channel that is not UTF-8.
        assert_eq!(decode(&[1, 5, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0xff]), None);
        // Every prefix of a good message is refused or decodes to less.
        let good = encode(
            1,
            &NodeCommand::PublishTo {
                channels: &["room"],
                groups: &[(4, vec![1, 2])],
                data: b"",
                binary: true,
                exclude: None,
            },
        );
        for cut in 0..good.len() {
            assert_eq!(decode(&good[..cut]), None, "cut at {cut}");
        }
    }
}
