//! What an error answer to a command in a cluster means for the command:
//! sent elsewhere, sent again, or given up. Pure.
//!
//! Every case but `Refused` means the command did not run, so sending it
//! again cannot run it twice.

use super::resp;

/// The verdict on one error answer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Redirect {
    /// `-MOVED <slot> <addr>`: the slot is served by `addr` now.
    Moved { slot: u16, addr: String },
    /// `-ASK <slot> <addr>`: the slot is migrating and the keys are gone
    /// to `addr` already; this one command goes there, after `ASKING`.
    Ask { addr: String },
    /// `-TRYAGAIN`: mid-migration, some of the keys moved and some not;
    /// the same command, a moment later.
    TryAgain,
    /// `-NOSCRIPT`: this master has not got the script (a new master after
    /// a failover, a flushed cache): load it and send the command again.
    NoScript,
    /// Anything else (`CLUSTERDOWN`, `NOPERM`, a script error...): not
    /// sent again.
    Refused,
}

impl Redirect {
    pub(crate) fn of(error: &redis::ServerError) -> Self {
        let text = format!("{} {}", error.code(), error.details().unwrap_or(""));
        Self::of_text(&text)
    }

    /// From the error's text, as Redis writes it (`MOVED 3999 h:p`).
    pub(crate) fn of_text(text: &str) -> Self {
        if let Some((slot, addr)) = resp::moved(text) {
            return Redirect::Moved { slot, addr };
        }
        let mut words = text.split_ascii_whitespace();
        match words.next() {
            Some("ASK") => match (words.next(), words.next()) {
                (Some(_slot), Some(addr)) => Redirect::Ask {
                    addr: addr.to_string(),
                },
                _ => Redirect::Refused,
            },
            Some("TRYAGAIN") => Redirect::TryAgain,
            Some("NOSCRIPT") => Redirect::NoScript,
            _ => Redirect::Refused,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_answers() {
        assert_eq!(
            Redirect::of_text("MOVED 3999 127.0.0.1:6381"),
            Redirect::Moved {
                slot: 3999,
                addr: "127.0.0.1:6381".into()
            }
        );
        assert_eq!(
            Redirect::of_text("ASK 3999 127.0.0.1:6381"),
            Redirect::Ask {
                addr: "127.0.0.1:6381".into()
            }
        );
        assert_eq!(
            Redirect::of_text("TRYAGAIN Multiple keys request during rehashing of slot"),
            Redirect::TryAgain
        );
        assert_eq!(
            Redirect::of_text("NOSCRIPT No matching script. Please use EVAL."),
            Redirect::NoScript
        );
        assert_eq!(
            Redirect::of_text("CLUSTERDOWN The cluster is down"),
            Redirect::Refused
        );
        assert_eq!(Redirect::of_text("ASK nonsense"), Redirect::Refused);
    }
}
