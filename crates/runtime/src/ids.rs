//! How a connection id names its node (docs/scale-out.md, "Node
//! numbers and connection ids"). Pure: no state, no I/O.
//!
//! Ids cross to JavaScript as numbers, so they stay exact there: at most
//! 2^53 - 1. They are 53 bits, split as
//!
//! ```text
//! 52..43  node number (10 bits): 0 without a broker, 1..=1023 with one
//! 42..0   local counter (43 bits), per node
//! ```
//!
//! Why 10 and 43: a deployment of more than a thousand nodes on one Redis
//! is past what one Redis's pub/sub carries anyway (DESIGN.md: ~650k
//! deliveries/s per instance), while 43 bits leave a node at least 2^42
//! (4.4 * 10^12) ids even from a random start (`LOCAL_START_RANGE`): at
//! 10,000 new connections a second, that is 14 years of churn before the
//! counter wraps (it then starts again at 1, skipping 0).
//!
//! Without a broker the node number is 0 and the counter starts at 1, so
//! ids are what they always were. With one, the counter starts at a random
//! point below 2^42: a node that restarts and claims the number it had
//! before does not hand its predecessor's ids (which an application may
//! still hold) to new connections.

/// Bits of the local counter.
pub const LOCAL_BITS: u32 = 43;
/// Bits of the node number.
pub const NODE_BITS: u32 = 10;
/// The largest node number; numbers run 1..=MAX_NODE (0: no broker, or
/// not claimed yet).
pub const MAX_NODE: u16 = (1 << NODE_BITS) - 1;
/// The local counter's mask.
pub const LOCAL_MASK: u64 = (1 << LOCAL_BITS) - 1;
/// A broker's node starts its counter below this (see above).
pub const LOCAL_START_RANGE: u64 = 1 << (LOCAL_BITS - 1);

/// The node an id was allocated on (0: a node without a number).
pub fn node_of(id: u64) -> u16 {
    ((id >> LOCAL_BITS) & u64::from(MAX_NODE)) as u16
}

/// The id of local number `local` on node `node`.
pub fn compose(node: u16, local: u64) -> u64 {
    (u64::from(node & MAX_NODE) << LOCAL_BITS) | (local & LOCAL_MASK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_stay_exact_javascript_numbers() {
        let largest = compose(MAX_NODE, LOCAL_MASK);
        assert_eq!(largest, (1 << 53) - 1);
        assert_eq!(node_of(largest), MAX_NODE);
        assert_eq!(compose(0, 7), 7);
        assert_eq!(node_of(7), 0);
        let id = compose(5, 123);
        assert_eq!((node_of(id), id & LOCAL_MASK), (5, 123));
        // The counter wraps inside its bits, never into the node's.
        assert_eq!(node_of(compose(5, LOCAL_MASK + 2)), 5);
    }
}
