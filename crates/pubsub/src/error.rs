//! The one error type of the pub/sub layer.
//!
//! Only virtual-socket operations can fail: subscribing and publishing accept
//! any id and any channel name, because the registry cannot know which
//! connections exist (the runtime owns that knowledge and validates first).

use std::fmt;

use crate::SubscriberId;

/// Why a registry operation was refused. A refused operation changes nothing.
///
/// Each variant has a stable string code ([`Error::code`]) that the binding
/// layer hands to JavaScript unchanged; the full catalogue is
/// [`ALL_ERROR_CODES`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The id does not name a live virtual socket (never created, or already
    /// deleted, possibly as a dependent of another deletion).
    VirtualSocketUnknown {
        /// The id that was looked up.
        id: SubscriberId,
    },
    /// A guarded delete found the virtual socket pointing somewhere else than
    /// the caller expected (WarpSocket's `expectedTargetSocketId`).
    VirtualSocketTargetMismatch {
        /// The virtual socket that was to be deleted.
        id: SubscriberId,
        /// The target the caller expected.
        expected: SubscriberId,
        /// The target the virtual socket actually has.
        actual: SubscriberId,
    },
    /// A virtual socket with this id already exists.
    VirtualSocketExists {
        /// The id that was to be created.
        id: SubscriberId,
    },
    /// The id is already known to the registry as a connection: it has
    /// subscriptions, or virtual sockets point at it. Turning it into a
    /// virtual socket would silently reroute those, and could close a loop
    /// (A -> B while B -> A), so ids must be fresh.
    VirtualSocketIdInUse {
        /// The id that was to be created.
        id: SubscriberId,
    },
    /// A virtual socket cannot target itself. (Longer loops are impossible:
    /// a new id must be fresh, so nothing can already point at it.)
    VirtualSocketCycle {
        /// The id that was to be created.
        id: SubscriberId,
    },
}

/// Every error code with a one-line description, in declaration order.
///
/// The binding layer and `docs/errors.md` are generated from / checked against
/// this table; a unit test keeps it in sync with [`Error::code`].
pub const ALL_ERROR_CODES: &[(&str, &str)] = &[
    (
        "ERR_VIRTUAL_SOCKET_UNKNOWN",
        "the id does not name a live virtual socket",
    ),
    (
        "ERR_VIRTUAL_SOCKET_TARGET_MISMATCH",
        "the virtual socket does not point at the expected target; nothing was deleted",
    ),
    (
        "ERR_VIRTUAL_SOCKET_EXISTS",
        "a virtual socket with this id already exists",
    ),
    (
        "ERR_VIRTUAL_SOCKET_ID_IN_USE",
        "the id is already in use as a connection (it has subscriptions or virtual sockets pointing at it)",
    ),
    (
        "ERR_VIRTUAL_SOCKET_CYCLE",
        "a virtual socket cannot target itself",
    ),
];

impl Error {
    /// The stable, machine-readable code (`ERR_*`), listed in
    /// [`ALL_ERROR_CODES`].
    pub fn code(&self) -> &'static str {
        match self {
            Error::VirtualSocketUnknown { .. } => "ERR_VIRTUAL_SOCKET_UNKNOWN",
            Error::VirtualSocketTargetMismatch { .. } => "ERR_VIRTUAL_SOCKET_TARGET_MISMATCH",
            Error::VirtualSocketExists { .. } => "ERR_VIRTUAL_SOCKET_EXISTS",
            Error::VirtualSocketIdInUse { .. } => "ERR_VIRTUAL_SOCKET_ID_IN_USE",
            Error::VirtualSocketCycle { .. } => "ERR_VIRTUAL_SOCKET_CYCLE",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::VirtualSocketUnknown { id } => {
                write!(f, "virtual socket {id} does not exist")
            }
            Error::VirtualSocketTargetMismatch {
                id,
                expected,
                actual,
            } => write!(
                f,
                "virtual socket {id} targets {actual}, not the expected {expected}"
            ),
            Error::VirtualSocketExists { id } => {
                write!(f, "virtual socket {id} already exists")
            }
            Error::VirtualSocketIdInUse { id } => write!(
                f,
                "id {id} is already in use as a connection and cannot become a virtual socket"
            ),
            Error::VirtualSocketCycle { id } => {
                write!(f, "virtual socket {id} cannot target itself")
            }
        }?;
        write!(f, " ({})", self.code())
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_of_each() -> Vec<Error> {
        vec![
            Error::VirtualSocketUnknown { id: 1 },
            Error::VirtualSocketTargetMismatch {
                id: 1,
                expected: 2,
                actual: 3,
            },
            Error::VirtualSocketExists { id: 1 },
            Error::VirtualSocketIdInUse { id: 1 },
            Error::VirtualSocketCycle { id: 1 },
        ]
    }

    #[test]
    fn catalogue_matches_variants_in_order() {
        let codes: Vec<&str> = one_of_each().iter().map(Error::code).collect();
        let listed: Vec<&str> = ALL_ERROR_CODES.iter().map(|(c, _)| *c).collect();
        assert_eq!(codes, listed);
    }

    #[test]
    fn codes_are_unique_prefixed_and_described() {
        let mut seen = std::collections::HashSet::new();
        for (code, description) in ALL_ERROR_CODES {
            assert!(code.starts_with("ERR_"), "{code}");
            assert!(!description.is_empty(), "{code}");
            assert!(seen.insert(code), "duplicate {code}");
        }
    }

    #[test]
    fn display_names_the_code() {
        for e in one_of_each() {
            assert!(e.to_string().ends_with(&format!("({})", e.code())));
        }
        assert_eq!(
            Error::VirtualSocketTargetMismatch {
                id: 1,
                expected: 2,
                actual: 3
            }
            .to_string(),
            "virtual socket 1 targets 3, not the expected 2 (ERR_VIRTUAL_SOCKET_TARGET_MISMATCH)"
        );
    }
}
