// Nodes and direct sends on a Redis Cluster (docs/scale-out.md, "Nodes"):
// the scenarios of nodes.test.mjs (node-scenarios.mjs) on three
// Switchboard processes and a real three-master cluster, where the node
// keys and channels live in one slot, `<prefix>{\xFF}...`, at its master.
import test, { after } from 'node:test';
import assert from 'node:assert/strict';
import * as scenarios from './node-scenarios.mjs';
import { cluster, NODES_SLOT, stopCluster } from './cluster-engine.mjs';
import { cli, sleep, startCluster, startClusterNode, syncedReplica, until } from './helpers.mjs';

const { sorted, stats, wsWithId } = scenarios;

after(stopCluster);

const slow = { timeout: 60_000 };

test('cluster: three nodes claim distinct numbers, know each other, and their connection ids carry them', slow, (t) => scenarios.claimAndKnow(t, cluster));

test('cluster: send, subscribe, unsubscribe and close by id reach connections on other nodes; a send and a publish on the nodes\' master keep their order', slow, (t) => scenarios.directSends(t, cluster));

test('cluster: publishTo across nodes, each recipient once', slow, (t) => scenarios.publishToAcrossNodes(t, cluster));

test('cluster: per-user addressing', slow, (t) => scenarios.perUserAddressing(t, cluster));

test('cluster: a node that leaves gracefully frees its number; a killed one expires', slow, (t) => scenarios.leaveAndKill(t, cluster));

// (The malformed-messages scenario is not run here: it stops its broker,
// and this file's cluster is shared by its tests.)

test('cluster: the nodes\' slot moves to another master, then that master fails over: numbers and keys kept, heartbeats and direct sends go on', { timeout: 120_000 }, async (t) => {
  const server = await startCluster(t, { masters: 3, replicas: 1 });
  const prefix = cluster.freshPrefix();
  const nodes = await Promise.all([0, 1].map(() => startClusterNode(t, server, { prefix, nodeTtl: 2 })));
  const [a, b] = nodes;
  const numbers = sorted(await Promise.all(nodes.map(async (node) => (await stats(node)).brokerNode)));
  const onB = await wsWithId(t, b);
  let n = 0;
  // A direct send from A until one reaches B: tolerates the moments the
  // nodes' master is changing (a refused or lost send is tried again).
  const sendArrives = (what) => until(async () => {
    const text = `${what} ${++n}`;
    if ((await a.request('send', { conn: onB.id, text })).error) return false;
    await sleep(50);
    return onB.received.includes(text);
  }, what, 20_000);
  await sendArrives('before');

  // A migration with its keys (as `redis-cli --cluster reshard` does):
  // the heartbeats and the node channels follow the slot.
  const from = await server.owner(NODES_SLOT);
  const to = (await server.masters()).find((m) => m.port !== from.port);
  await server.migrate(NODES_SLOT, to, { keys: true, during: () => sleep(300) });
  assert.equal((await server.owner(NODES_SLOT)).port, to.port);
  await sendArrives('after the move');
  const keysAt = async (port) => (await cli(port, 'EVAL', "return #redis.call('KEYS', ARGV[1] .. '{\\255}node:*')", '0', prefix)) === '2';
  await until(() => keysAt(to.port), 'both keys at the new master', 5000);
  await sleep(1500);
  assert.ok(await keysAt(to.port), 'kept alive there (nodeTtl 2 s)');

  // The new master fails over to its replica, which has the keys.
  const replicaPort = await syncedReplica(server, to);
  assert.equal(await cli(replicaPort, 'CLUSTER', 'FAILOVER'), 'OK');
  await until(async () => (await server.owner(NODES_SLOT))?.port === replicaPort, 'the replica to be master', 20_000);
  await sendArrives('after the failover');
  // (Asked of every master: until the demoted one shows as a replica, its
  // copies count too.)
  await until(async () => JSON.stringify(await cluster.nodeKeys(server, prefix)) === JSON.stringify(numbers), 'the keys, once each');
  for (const node of nodes) {
    const seen = await stats(node);
    assert.ok(numbers.includes(seen.brokerNode), 'each node kept its number');
    await until(async () => JSON.stringify((await stats(node)).brokerNodes) === JSON.stringify(numbers), 'each to hear the other after it all', 5000);
    assert.equal((await stats(node)).brokerNodeConflicts, 0);
  }
});
