//! Which master serves which slot: the answer of `CLUSTER SLOTS`, as a
//! table. Pure (the reply is parsed from a `redis::Value`).

use crate::slot::SLOTS;

/// No master is known for the slot.
pub(crate) const NONE: u16 = u16::MAX;

/// The cluster's masters and the slot each serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SlotMap {
    /// Slot to index in `nodes` (or `NONE`).
    owners: Vec<u16>,
    /// Masters as `host:port`, in order of first appearance.
    pub(crate) nodes: Vec<String>,
}

impl Default for SlotMap {
    fn default() -> Self {
        Self {
            owners: vec![NONE; usize::from(SLOTS)],
            nodes: Vec::new(),
        }
    }
}

impl SlotMap {
    /// Parse a `CLUSTER SLOTS` reply; `asked` is the host the question
    /// went to, used where Redis leaves a master's host empty ("the host
    /// you are talking to").
    pub(crate) fn parse(reply: &redis::Value, asked: &str) -> Option<Self> {
        let redis::Value::Array(ranges) = reply else {
            return None;
        };
        let mut map = SlotMap::default();
        for range in ranges {
            let redis::Value::Array(fields) = range else {
                return None;
            };
            let (Some(start), Some(end), Some(master)) =
                (int(fields.first()?), int(fields.get(1)?), fields.get(2))
            else {
                return None;
            };
            let redis::Value::Array(master) = master else {
                return None;
            };
            let host = match master.first()? {
                redis::Value::BulkString(h) => String::from_utf8(h.clone()).ok()?,
                redis::Value::SimpleString(h) => h.clone(),
                _ => return None,
            };
            let host = if host.is_empty() || host == "?" {
                asked.to_string()
            } else {
                host
            };
            let port = int(master.get(1)?)?;
            let addr = format!("{host}:{port}");
            if !(0..i64::from(SLOTS)).contains(&start) || !(start..i64::from(SLOTS)).contains(&end)
            {
                return None;
            }
            let index = map.index_of(&addr);
            for slot in start..=end {
                map.owners[slot as usize] = index;
            }
        }
        Some(map)
    }

    fn index_of(&mut self, addr: &str) -> u16 {
        match self.nodes.iter().position(|n| n == addr) {
            Some(i) => i as u16,
            None => {
                self.nodes.push(addr.to_string());
                (self.nodes.len() - 1) as u16
            }
        }
    }

    /// The master of `slot`, as an index in `nodes`.
    pub(crate) fn owner(&self, slot: u16) -> Option<usize> {
        match self.owners.get(usize::from(slot)) {
            Some(&NONE) | None => None,
            Some(&i) => Some(usize::from(i)),
        }
    }

    /// The master of `slot`, as `host:port`.
    pub(crate) fn owner_addr(&self, slot: u16) -> Option<&str> {
        self.owner(slot).map(|i| self.nodes[i].as_str())
    }

    /// `slot` has moved to `addr` (a `MOVED` reply): noted at once, until
    /// the next `CLUSTER SLOTS` says the rest.
    pub(crate) fn moved(&mut self, slot: u16, addr: &str) {
        if slot < SLOTS {
            let index = self.index_of(addr);
            self.owners[usize::from(slot)] = index;
        }
    }

    /// Every slot has a master (`cluster_state:ok` as this node sees it).
    pub(crate) fn complete(&self) -> bool {
        self.owners.iter().all(|&o| o != NONE)
    }
}

fn int(value: &redis::Value) -> Option<i64> {
    match value {
        redis::Value::Int(i) => Some(*i),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::Value;

    fn node(host: &str, port: i64) -> Value {
        Value::Array(vec![
            Value::BulkString(host.as_bytes().to_vec()),
            Value::Int(port),
            Value::BulkString(b"0123abcd".to_vec()),
        ])
    }

    fn range(start: i64, end: i64, master: Value, replica: Option<Value>) -> Value {
        let mut fields = vec![Value::Int(start), Value::Int(end), master];
        fields.extend(replica);
        Value::Array(fields)
    }

    #[test]
    fn parses_cluster_slots() {
        let reply = Value::Array(vec![
            range(
                0,
                5460,
                node("127.0.0.1", 7000),
                Some(node("127.0.0.1", 7003)),
            ),
            range(5461, 10922, node("", 7001), None),
            range(10923, 16383, node("127.0.0.1", 7002), None),
        ]);
        let map = SlotMap::parse(&reply, "10.1.1.1").unwrap();
        assert_eq!(
            map.nodes,
            ["127.0.0.1:7000", "10.1.1.1:7001", "127.0.0.1:7002"]
        );
        assert!(map.complete());
        assert_eq!(map.owner_addr(0), Some("127.0.0.1:7000"));
        assert_eq!(map.owner_addr(5461), Some("10.1.1.1:7001"));
        assert_eq!(map.owner_addr(16383), Some("127.0.0.1:7002"));
    }

    #[test]
    fn gaps_and_moves() {
        let reply = Value::Array(vec![range(0, 99, node("h", 1), None)]);
        let mut map = SlotMap::parse(&reply, "h").unwrap();
        assert!(!map.complete());
        assert_eq!(map.owner(100), None);
        map.moved(100, "h:2");
        assert_eq!(map.owner_addr(100), Some("h:2"));
        assert_eq!(map.owner_addr(99), Some("h:1"));
    }

    #[test]
    fn refuses_nonsense() {
        assert_eq!(SlotMap::parse(&Value::Int(1), "h"), None);
        let bad = Value::Array(vec![range(5, 16384, node("h", 1), None)]);
        assert_eq!(SlotMap::parse(&bad, "h"), None);
        let backwards = Value::Array(vec![range(5, 4, node("h", 1), None)]);
        assert_eq!(SlotMap::parse(&backwards, "h"), None);
    }
}
