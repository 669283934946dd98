// The session store on a Redis Cluster (docs/scale-out.md, "Sessions"):
// each session's key at its slot's master, found there by every server,
// through a slot migration (ASK, then MOVED) and a failover. Real
// three-master clusters; two servers in this process.
import test from 'node:test';
import assert from 'node:assert/strict';
import { cli, piped, startCluster, syncedReplica, until } from './helpers.mjs';
import { Client, startSessionServer } from './session-helpers.mjs';

let runs = 0;
const freshPrefix = () => `sbclsess${process.pid}x${++runs}:`;

/** A server on `cluster` with the session routes. */
function startOn(t, cluster, prefix, options) {
  return startSessionServer(t, { cluster: cluster.urls, prefix, connectTimeout: 0.5, maxReconnectDelay: 0.2 }, options);
}

/** One command at the master of `key`'s slot; the reply. */
async function atOwner(cluster, key, ...args) {
  const { port } = await cluster.owner(await cluster.slot(key));
  return cli(port, ...args);
}

test('cluster: sessions spread over the masters, each at its slot\'s master; every server reads, touches and destroys them there', { timeout: 60_000 }, async (t) => {
  const cluster = await startCluster(t, { masters: 3 });
  const prefix = freshPrefix();
  const one = await startOn(t, cluster, prefix);
  const two = await startOn(t, cluster, prefix, { ttl: 5000 });
  const masters = new Set();
  const clients = [];
  for (let i = 0; i < 12; i++) {
    const client = new Client();
    const made = await client.json(one.base, '/visit', 'POST');
    const key = `${prefix}session:${made.id}`;
    // Written after the head went out: wait for it to land, at its master.
    await until(async () => (await atOwner(cluster, key, 'GET', key)) === '{"visits":1}', 'the session at its master');
    masters.add((await cluster.owner(await cluster.slot(key))).port);
    const seen = await client.json(two.base, '/visit', 'POST');
    assert.deepEqual({ id: seen.id, isNew: seen.isNew, visits: seen.visits }, { id: made.id, isNew: false, visits: 2 }, 'the other server reads and writes it');
    clients.push({ client, key });
  }
  assert.ok(masters.size >= 2, `spread over the masters: ${[...masters]}`);

  // A session of the first server (TTL 60 s) read by the second, whose
  // rolling TTL is 5 s: the touch (PEXPIRE) lands where the key lives.
  const client = new Client();
  const made = await client.json(one.base, '/visit', 'POST');
  const key = `${prefix}session:${made.id}`;
  await until(async () => Number(await atOwner(cluster, key, 'PTTL', key)) > 5000, 'the session, for 60 s');
  assert.equal((await client.json(two.base, '/whoami')).visits, 1);
  await until(async () => {
    const pttl = Number(await atOwner(cluster, key, 'PTTL', key));
    return pttl > 0 && pttl <= 5000;
  }, 'the touch at the master');

  await client.json(one.base, '/logout', 'POST');
  await until(async () => (await atOwner(cluster, key, 'EXISTS', key)) === '0', 'the DEL at the master');
  assert.equal((await new Client().json(two.base, '/whoami')).isNew, true);
  assert.deepEqual(one.reports, []);
  assert.deepEqual(two.reports, []);
});

test('cluster: a session\'s slot migrates (ASK while its key moves, MOVED after) and its master fails over: the session is found each time', { timeout: 120_000 }, async (t) => {
  const cluster = await startCluster(t, { masters: 3, replicas: 1 });
  const prefix = freshPrefix();
  const one = await startOn(t, cluster, prefix);
  const two = await startOn(t, cluster, prefix);
  const client = new Client();
  let visits = 0;
  let key;
  /** A visit through `server`, once its save is in Redis (it is written after the response). */
  const visit = async (server) => {
    const seen = await client.json(server.base, '/visit', 'POST');
    assert.equal(seen.visits, ++visits, 'each visit saw the one before');
    key = `${prefix}session:${seen.id}`;
    await until(async () => (await atOwner(cluster, key, 'GET', key)) === `{"visits":${visits}}`, 'the save');
    return seen;
  };
  const made = await visit(one);
  // Both servers have used it: their connections are to the master.
  assert.equal((await client.json(two.base, '/whoami')).visits, 1);

  // The slot moves with its key; between the key's move and the slot's
  // hand-over the old master answers ASK, then MOVED.
  const slot = await cluster.slot(key);
  const from = await cluster.owner(slot);
  const to = (await cluster.masters()).find((m) => m.port !== from.port);
  const during = [];
  await cluster.migrate(slot, to, {
    keys: true,
    during: async () => {
      // The key is at `to`, the slot still `from`'s: ASK.
      const seen = await client.json(one.base, '/visit', 'POST');
      during.push([seen.id, seen.visits]);
      // (The importing master answers for the slot only after ASKING.)
      const atTo = async () => (await piped(to.port, `ASKING\nGET ${JSON.stringify(key)}\n`)).split('\n')[1];
      await until(async () => (await atTo()) === `{"visits":${seen.visits}}`, 'the save at the new master');
    },
  });
  assert.deepEqual(during, [[made.id, ++visits]], 'read and written at the new master mid-migration (ASK)');
  assert.equal((await cluster.owner(slot)).port, to.port);
  for (const server of [two, one]) {
    assert.equal((await visit(server)).id, made.id, 'found after the move (MOVED)');
  }
  assert.equal(await cli(to.port, 'GET', key), `{"visits":${visits}}`);

  // The new master fails over to its replica (which has the session:
  // WAIT until the replica acknowledged the last write).
  const replicaPort = await syncedReplica(cluster, to);
  assert.equal(await cli(to.port, 'WAIT', '1', '2000'), '1');
  assert.equal(await cli(replicaPort, 'CLUSTER', 'FAILOVER'), 'OK');
  await until(async () => (await cluster.owner(slot))?.port === replicaPort, 'the replica to be master', 20_000);
  // Requests in flight as the master changes may fail (500, reported);
  // then the servers find the session at the new master.
  for (const server of [one, two]) {
    const seen = await until(async () => {
      const response = await client.fetch(server.base, '/whoami');
      const body = await response.text();
      return response.status === 200 && JSON.parse(body);
    }, 'the session after the failover', 10_000);
    assert.deepEqual([seen.id, seen.visits], [made.id, visits]);
  }
  await visit(two);
  assert.equal(await cli(replicaPort, 'GET', key), `{"visits":${visits}}`, 'written at the new master');
});
