//! Which Redis carries a channel, when there are several.
//!
//! Two topologies (docs/scale-out.md, "Topologies"):
//! - **Sharded** ([`Topology::Sharded`]): independent standalone Redis
//!   servers; this node picks a channel's server itself, by rendezvous
//!   (highest random weight) hashing of the channel's name against each
//!   server's name ([`Rendezvous`]). One server is the special case of
//!   today's single Redis.
//! - **Cluster** ([`Topology::Cluster`]): a Redis Cluster with sharded
//!   pub/sub; the cluster picks: a channel lives in its key slot
//!   (`crate::slot`), and the slot's master carries it.
//!
//! Rendezvous rather than a ring: no virtual nodes to tune, an even spread
//! with a handful of servers, and the same answer whatever the order of the
//! list; adding or removing a server moves only the channels that land on
//! (or were on) that server. Every node must give the same set of server
//! names, since the names are what is hashed.

/// The Redis servers of a broker, as configured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Topology {
    /// Standalone servers (one or more), `redis://` URLs; a channel is
    /// carried by exactly one of them.
    Sharded(Vec<String>),
    /// A Redis Cluster (Redis 7: `SSUBSCRIBE`/`SPUBLISH`), given by seed
    /// URLs; the rest of the cluster is discovered from them.
    Cluster(Vec<String>),
    /// NATS: one server, or several of one NATS cluster (`nats://` URLs);
    /// the client holds one connection, to one of them, and moves to
    /// another when it fails. NATS routes; this node picks nothing.
    Nats(Vec<String>),
}

/// Rendezvous hashing over a fixed list of server names. Pure.
#[derive(Clone)]
pub struct Rendezvous {
    /// Each server's name, hashed once.
    seeds: Vec<u64>,
}

impl Rendezvous {
    pub fn new<S: AsRef<str>>(servers: &[S]) -> Self {
        Self {
            seeds: servers
                .iter()
                .map(|s| fnv1a(FNV_OFFSET, s.as_ref().as_bytes()))
                .collect(),
        }
    }

    /// The index (in the list given to `new`) of the server that carries
    /// `channel`: the one with the highest weight for it (a tie, one chance
    /// in 2^64, goes to the first in list order).
    pub fn pick(&self, channel: &str) -> usize {
        if self.seeds.len() <= 1 {
            return 0;
        }
        let mut best = (0, 0u64);
        for (i, &seed) in self.seeds.iter().enumerate() {
            let weight = weight(seed, channel.as_bytes());
            if i == 0 || weight > best.1 {
                best = (i, weight);
            }
        }
        best.0
    }
}

/// The weight of a channel on a server: FNV-1a 64 of the channel's bytes
/// continued from the server name's hash, then the SplitMix64 finaliser
/// (FNV alone mixes its last bytes poorly). Fixed forever: every node, of
/// every version, must compute the same (docs/scale-out.md).
fn weight(seed: u64, channel: &[u8]) -> u64 {
    mix(fnv1a(seed ^ 0xff, channel))
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

fn fnv1a(mut hash: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    hash
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn servers(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("redis://10.0.0.{i}:6379")).collect()
    }

    #[test]
    fn one_server_takes_everything() {
        let r = Rendezvous::new(&["redis://a"]);
        assert_eq!(r.pick("room"), 0);
        assert_eq!(r.pick(""), 0);
    }

    #[test]
    fn fixed_answers() {
        // The function is part of the format between nodes: a change here
        // would split the channels of a mixed-version deployment.
        let r = Rendezvous::new(&servers(3));
        let picks: Vec<usize> = ["room", "news", "chat:1", "chat:2", ""]
            .iter()
            .map(|c| r.pick(c))
            .collect();
        assert_eq!(picks, PICKS);
    }
    const PICKS: [usize; 5] = [0, 0, 0, 1, 1];

    #[test]
    fn spreads_evenly() {
        let r = Rendezvous::new(&servers(4));
        let mut counts = [0usize; 4];
        for i in 0..40_000 {
            counts[r.pick(&format!("channel:{i}"))] += 1;
        }
        for count in counts {
            assert!((9_000..11_000).contains(&count), "{counts:?}");
        }
    }

    #[test]
    fn the_order_of_the_list_does_not_matter() {
        let list = servers(5);
        let mut reversed = list.clone();
        reversed.reverse();
        let (a, b) = (Rendezvous::new(&list), Rendezvous::new(&reversed));
        for i in 0..2_000 {
            let c = format!("c{i}");
            assert_eq!(list[a.pick(&c)], reversed[b.pick(&c)]);
        }
    }

    #[test]
    fn removing_a_server_moves_only_its_channels() {
        let list = servers(4);
        let fewer: Vec<String> = list
            .iter()
            .filter(|s| !s.ends_with(".2:6379"))
            .cloned()
            .collect();
        let (a, b) = (Rendezvous::new(&list), Rendezvous::new(&fewer));
        let mut moved = 0;
        for i in 0..4_000 {
            let c = format!("c{i}");
            let (before, after) = (&list[a.pick(&c)], &fewer[b.pick(&c)]);
            if before != after {
                assert!(before.ends_with(".2:6379"), "{c} moved from {before}");
                moved += 1;
            }
        }
        assert!((800..1_200).contains(&moved), "{moved}");
    }
}
