// A Redis Cluster as an engine of the shared scenarios (engines.mjs,
// node-scenarios.mjs): one three-master cluster per test file, started on
// first use (a cluster takes seconds to form) and stopped by `stopCluster`
// (the file's `after`); each test has a prefix of its own.
import { cli, startCluster, startClusterNode } from './helpers.mjs';

/** The slot of every node name, `<prefix>{\xFF}...`: CRC16 of the byte 0xFF (nodes.rs's unit test holds it). */
export const NODES_SLOT = 7920;

let started;
const cleanups = [];
let runs = 0;

/** Stop the file's cluster (give it to `after`). */
export async function stopCluster() {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
}

/** What a Lua script run on every master returns, joined (each master answers for its own keys). */
async function onEveryMaster(cluster, ...args) {
  const masters = await cluster.masters();
  return Promise.all(masters.map(({ port }) => cli(port, ...args)));
}

export const cluster = {
  start: () => {
    started ??= startCluster({ after: (fn) => cleanups.push(fn) }, { masters: 3 });
    return started;
  },
  startNode: startClusterNode,
  freshPrefix: () => `sbcl${process.pid}x${++runs}:`,
  /** The sharded channel of `channel`: its name is the hash tag; a presence events channel's is its watched channel's. */
  redisName: (prefix, channel) => (channel.startsWith('$presence:') ? `${prefix}{${channel.slice('$presence:'.length)}}$presence` : `${prefix}{${channel}}`),
  subscribers: (server, name) => server.shardNumsub(name),
  async nodeKeys(server, prefix) {
    const script = "local out = {} for _, k in ipairs(redis.call('KEYS', ARGV[1] .. '{\\255}node:*')) do table.insert(out, string.sub(k, #ARGV[1] + 9)) end return out";
    const texts = await onEveryMaster(server, 'EVAL', script, '0', prefix);
    return texts.flatMap((text) => (text === '' ? [] : text.split('\n').map(Number))).sort((x, y) => x - y);
  },
  async nodeKeyTtl(server, prefix, n) {
    // Only the slot's master has it (another would refuse the access).
    const script = "local k = ARGV[1] .. '{\\255}node:' .. ARGV[2] if #redis.call('KEYS', k) == 0 then return -2 end return redis.call('PTTL', k)";
    const texts = await onEveryMaster(server, 'EVAL', script, '0', prefix, String(n));
    return Math.max(...texts.map(Number));
  },
  /** A channel served by the master of the nodes' slot: its publishes and the node messages share a connection each way. */
  async orderedChannel(server) {
    const home = await server.owner(NODES_SLOT);
    for (let i = 0; ; i++) {
      const name = `room${i}`;
      if ((await server.owner(await server.slot(name))).port === home.port) return name;
    }
  },
};
