// Nodes through NATS (docs/scale-out.md, "Nodes with NATS"): node numbers
// claimed with nothing but core NATS (a roll-call, then a claim others may
// object to), heartbeats on a subject every node shares, and operations by
// id carried on each node's own subject. The scenarios shared with Redis
// are in node-scenarios.mjs; the claim itself is watched here on the wire,
// through a bare NATS client that plays the other nodes.
import test from 'node:test';
import assert from 'node:assert/strict';
import { natsWire } from '../helpers/nats-wire.mjs';
import { nats } from './engines.mjs';
import { until } from './helpers.mjs';
import * as scenarios from './node-scenarios.mjs';

const { stats } = scenarios;

/** NATS: node subjects are `<prefix>%%node.<n>` and `<prefix>%%nodes`; nothing is stored. */
const engine = {
  ...nats,
  nodeKeys: null,
  // The client queues each subscription apart: no channel keeps its order
  // with the node messages (docs/scale-out.md).
  orderedChannel: async () => null,
  /** NATS does not say how many got it. */
  publishRaw: async (t, server, prefix, to, payload) => {
    const wire = await natsWire(t, server);
    wire.publish(to === 'all' ? `${prefix}%%nodes` : `${prefix}%%node.${to}`, payload);
    await wire.flush();
    return null;
  },
};

const ROLL_CALL = 1;
const CLAIM = 2;
const HELD = 3;
const OBJECTION = 4;
const SEEN = 5;

/** A claim note (crates/broker/src/nats/claim.rs): version, kind, number u16, token u64, little-endian. */
function note(kind, number, token = 0n) {
  const out = Buffer.alloc(12);
  out[0] = 1;
  out[1] = kind;
  out.writeUInt16LE(number, 2);
  out.writeBigUInt64LE(token, 4);
  return out;
}

const read = (bytes) => ({ kind: bytes[1], number: bytes.readUInt16LE(2), token: bytes.readBigUInt64LE(4) });

/** The numbers of a "seen" note: after version and kind, a bit per number (16 u64, little-endian). */
function seenNumbers(bytes) {
  assert.equal(bytes[1], SEEN);
  const out = [];
  for (let n = 1; n <= 1023; n++) if (bytes[2 + (n >> 3)] & (1 << (n & 7))) out.push(n);
  return out;
}

/** One node (nodeTtl 1 s) and a bare client with an inbox, playing another node; `ask` publishes on the claim subject with that inbox. */
async function nodeAndWire(t) {
  const server = await engine.start(t);
  const prefix = engine.freshPrefix();
  const node = await engine.startNode(t, server, { prefix, nodeTtl: 1 });
  const n = (await stats(node)).brokerNode;
  const wire = await natsWire(t, server);
  const inbox = wire.subscribe(`${prefix}%%inbox.test`);
  await wire.flush();
  const ask = (payload) => wire.publish(`${prefix}%%claim`, payload, `${prefix}%%inbox.test`);
  return { prefix, node, n, wire, inbox, ask };
}

test('NATS: three nodes started at once claim distinct numbers, know each other, and subscribe their node subjects', async (t) => {
  const { server, prefix, numbers } = await scenarios.claimAndKnow(t, engine);
  const subscribed = Object.values(await server.subscriptions()).flat();
  for (const n of numbers) assert.ok(subscribed.includes(`${prefix}%%node.${n}`), `node ${n}'s own subject`);
  for (const shared of ['nodes', 'claim']) {
    assert.equal(subscribed.filter((s) => s === `${prefix}%%${shared}`).length, 3, `every node on ${shared}`);
  }
});

test('NATS: cross-node direct sends: send, subscribe, unsubscribe and close by id', (t) => scenarios.directSends(t, engine));

test('NATS: publishTo across nodes: channels and ids of every node, each recipient once', (t) => scenarios.publishToAcrossNodes(t, engine));

test('NATS: cross-node publish to a personal channel reaches the user on every node', (t) => scenarios.perUserAddressing(t, engine));

test('NATS: a node that leaves gracefully is dropped at once; a killed one after nodeTtl', (t) => scenarios.leaveAndKill(t, engine));

test('NATS: malformed node messages are counted and ignored; NATS down refuses sends to other nodes', (t) => scenarios.malformedAndDown(t, engine));

test('NATS: a newcomer claims a number nobody answered the roll-call with', async (t) => {
  const server = await engine.start(t);
  const prefix = engine.freshPrefix();
  // Plays 1,022 live nodes: every number but 77 is answered as held.
  const wire = await natsWire(t, server);
  const free = 77;
  wire.subscribe(`${prefix}%%claim`, ({ payload, reply }) => {
    if (payload[1] !== ROLL_CALL || !reply) return;
    for (let n = 1; n <= 1023; n++) if (n !== free) wire.publish(reply, note(HELD, n, BigInt(n)));
  });
  await wire.flush();
  const node = await engine.startNode(t, server, { prefix });
  assert.equal((await stats(node)).brokerNode, free);
});

test('NATS: a newcomer gives way to an objection and claims another number', async (t) => {
  const server = await engine.start(t);
  const prefix = engine.freshPrefix();
  const claims = [];
  const wire = await natsWire(t, server);
  wire.subscribe(`${prefix}%%claim`, ({ payload, reply }) => {
    const { kind, number } = read(payload);
    if (kind !== CLAIM) return;
    claims.push(number);
    // The first claim is objected to, as a holder of that number would.
    if (claims.length === 1) wire.publish(reply, note(OBJECTION, number));
  });
  await wire.flush();
  const node = await engine.startNode(t, server, { prefix });
  const n = (await stats(node)).brokerNode;
  assert.equal(claims.length, 2, `one claim objected, one unopposed: ${claims}`);
  assert.notEqual(n, claims[0]);
  assert.equal(n, claims[1]);
});

test('NATS: a node answers roll-calls, objects to claims of its number, and counts another holder as a conflict', async (t) => {
  const { prefix, node, n, wire, inbox, ask } = await nodeAndWire(t);
  ask(note(ROLL_CALL, 0, 5n));
  await until(() => inbox.length === 1, 'the answer to the roll-call');
  const held = read(inbox[0].payload);
  assert.deepEqual([held.kind, held.number], [HELD, n]);

  ask(note(CLAIM, n, 1n));
  await until(() => inbox.length === 2, 'the objection');
  assert.deepEqual(read(inbox[1].payload), { kind: OBJECTION, number: n, token: 0n });
  // A claim of another number is left alone.
  ask(note(CLAIM, (n % 1023) + 1, 1n));
  await wire.flush();

  // Another token holding the number (a healed partition): counted, kept.
  assert.equal((await stats(node)).brokerNodeConflicts, 0);
  wire.publish(`${prefix}%%claim`, note(HELD, n, held.token + 1n));
  await until(async () => (await stats(node)).brokerNodeConflicts === 1, 'the conflict to be counted');
  assert.equal((await stats(node)).brokerNode, n);
  assert.equal(inbox.length, 2, 'nothing said about another number');
});

test('NATS: a node started while NATS is down claims its number once NATS is there', async (t) => {
  const server = await engine.start(t);
  const prefix = engine.freshPrefix();
  const early = await engine.startNode(t, server, { prefix });
  await server.stop();
  // listen() gave up waiting (connectTimeout) and the node has no number yet.
  const late = await engine.startNode(t, server, { prefix });
  assert.equal((await stats(late)).brokerNode, 0);
  await server.start();
  const n = await until(async () => (await stats(late)).brokerNode, 'the claim after NATS came back', 10_000);
  await until(async () => (await stats(early)).brokerNodes.includes(n), 'the first node to hear of it', 5000);
  assert.notEqual(n, (await stats(early)).brokerNode);
});

test('NATS: a roll-call is answered with the nodes heard from within nodeTtl too, so a vanished node keeps its number that long', async (t) => {
  const { prefix, node, n, wire, inbox, ask } = await nodeAndWire(t);
  // A node 1000 (or n + 1) that beats once, as node_wire's "alive", then vanishes.
  const ghost = n === 1000 ? 1001 : 1000;
  wire.publish(`${prefix}%%nodes`, Buffer.from([1, 16, ghost & 0xff, ghost >> 8]));
  await until(async () => (await stats(node)).brokerNodes.includes(ghost), 'the node to hear the ghost');
  const rollCall = async () => {
    const before = inbox.length;
    ask(note(ROLL_CALL, 0, 5n));
    await wire.flush();
    await until(() => inbox.length > before, 'answers');
    await new Promise((resolve) => setTimeout(resolve, 100));
    const answers = inbox.slice(before).map((m) => m.payload);
    return {
      held: answers.filter((a) => a[1] === HELD).map((a) => read(a).number),
      seen: answers.filter((a) => a[1] === SEEN).map(seenNumbers),
    };
  };
  // Its own number as held; the ghost's as seen, in one note.
  assert.deepEqual(await rollCall(), { held: [n], seen: [[ghost]] });
  // Past nodeTtl the ghost is gone from the view, and its number free.
  await until(async () => !(await stats(node)).brokerNodes.includes(ghost), 'the ghost to drop out', 3000);
  assert.deepEqual(await rollCall(), { held: [n], seen: [] });
});
