//! Channel names as NATS subjects, and back (docs/scale-out.md, "NATS").
//!
//! A NATS subject is tokens separated by `.`; a token may not be empty,
//! whitespace ends a protocol argument, and a token that is exactly `*` or
//! `>` is a wildcard in a subscription. A channel name is any 1..255 bytes
//! of UTF-8. The escaping, applied byte by byte to the channel's name:
//!
//! - ASCII letters, digits and the punctuation `! " # & ' ( ) + , - / : ;
//!   < = ? @ [ \ ] ^ _ ` { | } ~` stand for themselves;
//! - `.` stands for itself (so `chat.lobby` is the two tokens `chat` and
//!   `lobby`, and NATS permissions and monitoring read naturally), except
//!   where it would make an empty token: as the first or last byte, or
//!   right after another `.`;
//! - every other byte is `%` and two upper-case hex digits: `%` itself,
//!   `*`, `>`, `$` (subjects starting with `$` belong to the system and
//!   JetStream), space and the control characters, DEL, and every byte of
//!   a non-ASCII character.
//!
//! So no token is empty or a wildcard, no subject holds whitespace, a
//! subscription matches exactly one channel, and the subject is ASCII of
//! at most 3 x 255 bytes (plus the prefix). The escaping is a function and
//! [`channel`] its inverse on the subjects it produces (it refuses any
//! other spelling, `%2e` or a `%2E` that could have been a `.`), so every
//! channel has exactly one subject and every subject at most one channel.

/// Bytes written as they are, apart from `.` (see the module's comment).
fn plain(b: u8) -> bool {
    matches!(b, b'!'..=b'~') && !matches!(b, b'%' | b'*' | b'>' | b'$' | b'.')
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Append the subject of `channel` to `out` (after the prefix).
pub(crate) fn escape_into(channel: &str, out: &mut Vec<u8>) {
    let bytes = channel.as_bytes();
    let last = bytes.len().saturating_sub(1);
    for (i, &b) in bytes.iter().enumerate() {
        let dot_kept = b == b'.' && i != 0 && i != last && bytes[i - 1] != b'.';
        if plain(b) || dot_kept {
            out.push(b);
        } else {
            out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        }
    }
}

/// The subject of `channel`: `prefix` then the escaped name.
pub(crate) fn subject(prefix: &str, channel: &str) -> String {
    let mut out = Vec::with_capacity(prefix.len() + channel.len() + 8);
    out.extend_from_slice(prefix.as_bytes());
    escape_into(channel, &mut out);
    // Only ASCII was written after a `&str` prefix.
    String::from_utf8(out).unwrap_or_default()
}

/// The channel a subject carries, if it is the subject of one under
/// `prefix` (spelled exactly as [`subject`] spells it). The proof that the
/// escaping is one-to-one; arrivals need no decoding (each subscription's
/// forwarder knows its channel), so it is built for the tests only.
#[cfg(test)]
pub(crate) fn channel(prefix: &str, subject: &str) -> Option<String> {
    let escaped = subject.strip_prefix(prefix)?.as_bytes();
    let mut name = Vec::with_capacity(escaped.len());
    let mut i = 0;
    while i < escaped.len() {
        if escaped[i] == b'%' {
            let hex = escaped.get(i + 1..i + 3)?;
            let digit = |c: u8| HEX.iter().position(|&h| h == c);
            let (hi, lo) = (digit(hex[0])?, digit(hex[1])?);
            name.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            name.push(escaped[i]);
            i += 1;
        }
    }
    let name = String::from_utf8(name).ok()?;
    // One spelling only: what we would have written.
    let mut again = Vec::with_capacity(escaped.len());
    escape_into(&name, &mut again);
    (!name.is_empty() && again == escaped).then_some(name)
}

/// What follows the prefix in every subject of the nodes (`nats/nodes.rs`):
/// `%%`. The escaping writes `%` only in front of two hex digits, so no
/// channel's subject holds `%%` anywhere: a node subject can never be
/// taken for a channel's, nor a channel's for a node's, whatever the
/// channel is called (tested below over every name the tests build).
const NODES: &str = "%%";

/// Node `n`'s own subject: operations on its connections.
pub(crate) fn node_subject(prefix: &str, n: u16) -> String {
    format!("{prefix}{NODES}node.{n}")
}

/// The subject every node subscribes: heartbeats, goodbyes, and
/// `publishTo`s that name channels.
pub(crate) fn all_subject(prefix: &str) -> String {
    format!("{prefix}{NODES}nodes")
}

/// The subject of the number claims (roll-calls, claims, and the
/// heartbeats' proofs of ownership, `nats/claim.rs`).
pub(crate) fn claim_subject(prefix: &str) -> String {
    format!("{prefix}{NODES}claim")
}

/// A claiming node's inbox for the answers, named by its random token
/// (under the prefix, so one NATS permission covers everything of
/// Switchboard's, unlike `_INBOX.>`).
pub(crate) fn inbox_subject(prefix: &str, token: u64) -> String {
    format!("{prefix}{NODES}inbox.{token:016x}")
}

/// Whether `prefix` can stand in front of every escaped name: plain bytes
/// and `.`, no empty token (no `.` first, no `..`), no wildcard token.
/// It may end with `.` (`switchboard.`, the default) or not.
pub(crate) fn valid_prefix(prefix: &str) -> bool {
    let bytes = prefix.as_bytes();
    bytes.iter().all(|&b| plain(b) || b == b'.')
        && !prefix.starts_with('.')
        && !prefix.contains("..")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a NATS server accepts as a published subject with no wildcard
    /// token, and what a subscription to it matches: itself alone.
    fn literal_subject(s: &str) -> bool {
        !s.is_empty()
            && s.bytes().all(|b| b > b' ' && b != 0x7f && b.is_ascii())
            && s.split('.').all(|t| !t.is_empty() && t != "*" && t != ">")
    }

    #[test]
    fn fixed_spellings() {
        let cases = [
            ("room", "room"),
            ("chat.lobby", "chat.lobby"),
            ("a..b", "a.%2Eb"),
            (".", "%2E"),
            ("..", "%2E%2E"),
            (".x.", "%2Ex%2E"),
            ("a...b", "a.%2E%2Eb"),
            ("*", "%2A"),
            ("a.>", "a.%3E"),
            ("a*b", "a%2Ab"),
            ("$SYS.x", "%24SYS.x"),
            ("100%", "100%25"),
            ("with space\ttab\r\n", "with%20space%09tab%0D%0A"),
            ("é", "%C3%A9"),
            ("user:42/inbox", "user:42/inbox"),
        ];
        for (name, escaped) in cases {
            assert_eq!(subject("", name), escaped, "{name:?}");
            assert_eq!(subject("sb.", name), format!("sb.{escaped}"));
            assert_eq!(
                channel("sb.", &format!("sb.{escaped}")).as_deref(),
                Some(name)
            );
        }
    }

    #[test]
    fn other_spellings_are_no_channel() {
        for s in [
            "sb.%2e", "sb.a%2Eb", "sb.%41", "sb.%4", "sb.%ZZ", "sb.", "sb.%C3", "other.a", "sb.a b",
        ] {
            assert_eq!(channel("sb.", s), None, "{s}");
        }
    }

    #[test]
    fn every_name_round_trips_to_a_literal_subject() {
        // Names built from the bytes that matter, of every length up to 5,
        // then random ones: each maps to a literal subject and back.
        let alphabet = ['.', '*', '>', '%', ' ', 'a', '$', 'é', '\u{0}'];
        let mut names = vec![String::new()];
        for _ in 0..5 {
            let longer: Vec<String> = names
                .iter()
                .flat_map(|n| alphabet.iter().map(move |c| format!("{n}{c}")))
                .collect();
            names.extend(longer);
        }
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..2_000 {
            let len = (seed % 255) as usize + 1;
            let mut name = String::new();
            while name.len() < len {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let c = char::from_u32((seed % 0x300) as u32).unwrap_or('x');
                if name.len() + c.len_utf8() <= 255 {
                    name.push(c);
                } else {
                    break;
                }
            }
            names.push(name);
        }
        let names: std::collections::BTreeSet<String> = names.into_iter().collect();
        let mut seen = std::collections::HashSet::new();
        for name in names.iter().filter(|n| !n.is_empty()) {
            for prefix in ["", "sb.", "switchboard:"] {
                let s = subject(prefix, name);
                assert!(literal_subject(&s), "{name:?} -> {s:?}");
                assert_eq!(channel(prefix, &s).as_deref(), Some(name.as_str()));
            }
            assert!(
                seen.insert(subject("sb.", name)),
                "two names share {name:?}'s subject"
            );
            // Never a node subject, whatever the prefix ends with.
            assert!(!subject("", name).contains(NODES), "{name:?}");
        }
    }

    #[test]
    fn node_subjects_are_literal_and_no_channel() {
        for prefix in ["", "sb.", "switchboard:", "app.v1."] {
            let names = [
                node_subject(prefix, 1),
                node_subject(prefix, 1023),
                all_subject(prefix),
                claim_subject(prefix),
                inbox_subject(prefix, u64::MAX),
            ];
            for s in &names {
                assert!(literal_subject(s), "{s}");
                assert_eq!(channel(prefix, s), None, "{s} read as a channel");
            }
            assert_eq!(
                names.iter().collect::<std::collections::HashSet<_>>().len(),
                5
            );
        }
        // The channels spelled like them are escaped away from them.
        assert_eq!(subject("sb.", "%%nodes"), "sb.%25%25nodes");
        assert_eq!(node_subject("sb.", 7), "sb.%%node.7");
    }

    #[test]
    fn prefixes() {
        for ok in ["", "switchboard.", "switchboard:", "app.v1.", "a"] {
            assert!(valid_prefix(ok), "{ok}");
        }
        for bad in [".a", "a..b", "a b", "a.*.", ">", "a.>.b", "%", "$SYS."] {
            assert!(!valid_prefix(bad), "{bad}");
        }
    }
}
