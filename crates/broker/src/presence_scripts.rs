//! The presence scripts (`presence.rs`): join, leave, sweep and evict,
//! each touching one channel's two keys and publishing its events on the
//! channel's events channel from inside, so state and events change as
//! one. On standalone servers they publish with `PUBLISH`; in a cluster
//! with `SPUBLISH`, the events channel sharing the keys' slot
//! (`BrokerConfig::redis_channel`), so each script stays in one slot.

use std::sync::LazyLock;

/// Join (or refresh) a member. KEYS: the hash, the sorted set. ARGV: the
/// events' Redis channel, their message head (`wire::head`), the member's
/// id, its info, the TTL (ms). Publishes a join only for a member that was
/// not there (a refresh, or an info update, is silent). The keys live ten
/// TTLs: members expire one by one, swept with their leaves published; the
/// keys' own expiry only collects a channel everybody abandoned.
const JOIN: &str = r#"
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local new = redis.call('HSET', KEYS[1], ARGV[3], ARGV[4])
redis.call('ZADD', KEYS[2], now + ARGV[5], ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[5] * 10)
redis.call('PEXPIRE', KEYS[2], ARGV[5] * 10)
if new == 1 then
  redis.call('PUBLISH', ARGV[1], ARGV[2] .. '{"event":"join","id":' .. ARGV[3] .. ',"info":' .. ARGV[4] .. '}')
end
return new
"#;

/// Remove a member. KEYS as `JOIN`; ARGV: the events' Redis channel, the
/// head, the id. Publishes the leave only if it was there.
const LEAVE: &str = r#"
local info = redis.call('HGET', KEYS[1], ARGV[3])
redis.call('ZREM', KEYS[2], ARGV[3])
if info then
  redis.call('HDEL', KEYS[1], ARGV[3])
  redis.call('PUBLISH', ARGV[1], ARGV[2] .. '{"event":"leave","id":' .. ARGV[3] .. ',"info":' .. info .. '}')
end
return info and 1 or 0
"#;

/// Remove the expired members (publishing their leaves) and return the
/// others as `[id, info, id, info, ...]`. KEYS as `JOIN`; ARGV: the events'
/// Redis channel, the head.
const SWEEP: &str = r#"
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)) do
  local info = redis.call('HGET', KEYS[1], id)
  redis.call('ZREM', KEYS[2], id)
  if info then
    redis.call('HDEL', KEYS[1], id)
    redis.call('PUBLISH', ARGV[1], ARGV[2] .. '{"event":"leave","id":' .. id .. ',"info":' .. info .. '}')
  end
end
return redis.call('HGETALL', KEYS[1])
"#;

/// Remove the members of nodes known gone (their heartbeats stopped, or
/// they said goodbye), publishing their leaves, before their entries
/// expire. KEYS as `JOIN`; ARGV: the events' Redis channel, the head, then
/// the gone nodes' numbers. A member's node is in its id's high bits
/// (`switchboard_runtime::ids`: the id divided by 2^LOCAL_BITS, exact in
/// Lua's doubles since ids stay below 2^53).
const EVICT: &str = r#"
local gone = {}
for i = 3, #ARGV do gone[tonumber(ARGV[i])] = true end
local evicted = 0
for _, id in ipairs(redis.call('HKEYS', KEYS[1])) do
  local node = math.floor(tonumber(id) / NODE_UNIT) % NODE_COUNT
  if gone[node] then
    local info = redis.call('HGET', KEYS[1], id)
    redis.call('HDEL', KEYS[1], id)
    redis.call('ZREM', KEYS[2], id)
    redis.call('PUBLISH', ARGV[1], ARGV[2] .. '{"event":"leave","id":' .. id .. ',"info":' .. info .. '}')
    evicted = evicted + 1
  end
end
return evicted
"#;

/// `EVICT` with the id layout's constants written in.
static EVICT_CODE: LazyLock<String> = LazyLock::new(|| {
    use switchboard_runtime::ids::{LOCAL_BITS, NODE_BITS};
    EVICT
        .replace("NODE_UNIT", &(1u64 << LOCAL_BITS).to_string())
        .replace("NODE_COUNT", &(1u64 << NODE_BITS).to_string())
});

/// The four scripts for one way of publishing.
pub(crate) struct Scripts {
    pub(crate) join: redis::Script,
    pub(crate) leave: redis::Script,
    pub(crate) sweep: redis::Script,
    pub(crate) evict: redis::Script,
    /// Their code, loaded on every new connection (`Reader::connection`)
    /// or where a master answers `-NOSCRIPT` (in a cluster).
    sources: [String; 4],
}

impl Scripts {
    fn new(publish: &str) -> Self {
        let sources = [JOIN, LEAVE, SWEEP, EVICT_CODE.as_str()]
            .map(|code| code.replace("redis.call('PUBLISH'", &format!("redis.call('{publish}'")));
        let [join, leave, sweep, evict] = sources.each_ref().map(|code| redis::Script::new(code));
        Self {
            join,
            leave,
            sweep,
            evict,
            sources,
        }
    }

    pub(crate) fn sources(&'static self) -> Vec<&'static str> {
        self.sources.iter().map(String::as_str).collect()
    }
}

static CLASSIC: LazyLock<Scripts> = LazyLock::new(|| Scripts::new("PUBLISH"));
static SHARDED: LazyLock<Scripts> = LazyLock::new(|| Scripts::new("SPUBLISH"));

/// The scripts for standalone servers (`PUBLISH`), or for a cluster
/// (`sharded`: `SPUBLISH`).
pub(crate) fn scripts(sharded: bool) -> &'static Scripts {
    match sharded {
        true => &SHARDED,
        false => &CLASSIC,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_publishes_sharded() {
        for code in scripts(true).sources() {
            assert!(code.contains("redis.call('SPUBLISH', ARGV[1]"), "{code}");
            assert!(!code.contains("'PUBLISH'"));
        }
        for code in scripts(false).sources() {
            assert!(code.contains("redis.call('PUBLISH', ARGV[1]"), "{code}");
        }
        assert!(!scripts(false).sources()[3].contains("NODE_UNIT"));
        assert_ne!(
            scripts(true).join.get_hash(),
            scripts(false).join.get_hash()
        );
    }
}
