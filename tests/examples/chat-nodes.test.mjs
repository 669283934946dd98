// The chat demo (examples/chat) as several nodes, started as its header
// says: three processes with one REDIS_URL serve the same rooms. Members
// on every node are listed (welcome, GET /api/rooms/<room>) and announced
// (the room's presence events, mapped as the page maps them, without
// duplicates), names are unique across nodes, messages cross nodes, and a
// killed node's members leave everyone's list within a few seconds
// (server.mjs's presenceTtl, 3 s). Both paths: WebSocket `/chat` and the
// Switchboard client's `chat.join`.
import test from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { connect, jsonCodec } from 'switchboard-client/node';
import { startExample } from '../helpers/examples.mjs';
import { startRedis } from '../helpers/redis.mjs';
import { until } from '../scale-out/helpers.mjs';

/** How long a killed node's members may take to leave: presenceTtl (3 s), a third of it to the next sweep, slack. */
const LEAVE_WITHIN_MS = 8000;

async function startNode(t, redis) {
  const started = await startExample('examples/chat/server.mjs', {
    env: { PORT: '0', HOST: '127.0.0.1', WORKERS: '1', REDIS_URL: redis.url, NATS_URL: '' },
    ready: /open (http:\/\/\S+?)\/? \(1 workers, node (\d+), rooms shared through redis:\/\/[^)]+\)/,
  });
  t.after(() => started.child.kill('SIGKILL'));
  return { child: started.child, base: started.match[1], node: Number(started.match[2]) };
}

/**
 * A member as the page (public/chat.js) sees the room: the welcome's list,
 * then joins and leaves, the room's presence events mapped onto them,
 * whatever came before the welcome held until it, ids that left ignored.
 */
class Page {
  messages = [];
  welcome = null;
  members = new Map();
  gone = new Set();
  /** What the page announced (`join:<name>`, `leave:<name>`), in order, and for which ids. */
  notices = [];
  noticed = [];
  early = [];

  receive(raw) {
    this.messages.push(raw);
    let message = raw;
    if (raw.type === undefined && (raw.event === 'join' || raw.event === 'leave')) {
      message = { type: raw.event, id: raw.id, name: raw.info?.name };
    }
    if (!this.welcome && message.type !== 'welcome' && message.type !== 'error') {
      this.early.push(message);
      return;
    }
    switch (message.type) {
      case 'welcome':
        this.welcome = message;
        for (const m of message.members) if (!this.gone.has(m.id)) this.members.set(m.id, m.name);
        for (const m of this.early.splice(0)) this.receive(m);
        break;
      case 'join':
        if (this.gone.has(message.id) || this.members.has(message.id)) break;
        this.members.set(message.id, message.name);
        this.notices.push(`join:${message.name}`);
        this.noticed.push(`join:${message.id}`);
        break;
      case 'leave':
        this.gone.add(message.id);
        if (this.members.delete(message.id)) {
          this.notices.push(`leave:${message.name}`);
          this.noticed.push(`leave:${message.id}`);
        }
        break;
    }
  }

  names() {
    return [...this.members.values()].sort();
  }

  said() {
    return this.messages.filter((m) => m.type === 'say').map((m) => `${m.name}:${m.text}`);
  }
}

/** Join `room` as `name` over WebSocket; resolves once welcomed or closed. `onOpen(ws)` runs before the welcome. */
function join(t, base, name, room, onOpen) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/chat?${new URLSearchParams({ name, room })}`);
    t.after(() => ws.terminate());
    const page = new Page();
    page.ws = ws;
    const timer = setTimeout(() => reject(new Error(`no welcome for ${name}`)), 10_000);
    ws.on('open', () => onOpen?.(ws));
    ws.on('message', (data) => {
      page.receive(JSON.parse(data.toString()));
      if (page.welcome) {
        clearTimeout(timer);
        resolve(page);
      }
    });
    ws.on('close', (code, reason) => {
      clearTimeout(timer);
      page.closed = { code, reason: reason.toString() };
      resolve(page);
    });
    ws.on('error', () => {});
  });
}

/** Join `room` as `name` with Switchboard's client (`chat.join`), as the page's "Switchboard client" transport does. */
async function joinWithClient(t, base, name, room) {
  const client = await connect(`${base.replace(/^http/, 'ws')}/rpc/websocket`, { codecs: [jsonCodec], reconnect: false });
  t.after(() => client.close({ timeoutMs: 0 }));
  const page = new Page();
  page.client = client;
  client.handle(`room:${room}`, (message) => page.receive(message));
  client.handle(`$presence:room:${room}`, (message) => page.receive(message));
  try {
    page.receive(await client.call('chat.join', { name, room }));
  } catch (error) {
    page.error = error;
  }
  return page;
}

async function roomNames(base, room) {
  const res = await fetch(`${base}/api/rooms/${room}`);
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(body.room, room);
  return body.members.map((m) => m.name).sort();
}

test('the chat demo on three nodes with one REDIS_URL: one member list, unique names, messages across nodes, a killed node\'s members leave', { timeout: 90_000 }, async (t) => {
  const redis = await startRedis(t);
  const [a, b, c] = await Promise.all([startNode(t, redis), startNode(t, redis), startNode(t, redis)]);
  assert.equal(new Set([a.node, b.node, c.node]).size, 3, 'three node numbers');
  const room = 'lobby';

  // Ada on A, alone; Bob on B lists her, and she hears of him.
  const ada = await join(t, a.base, 'ada', room);
  assert.equal(ada.welcome?.node, a.node, JSON.stringify(ada.closed));
  assert.deepEqual(ada.names(), ['ada']);
  const bob = await join(t, b.base, 'bob', room);
  assert.equal(bob.welcome?.node, b.node, JSON.stringify(bob.closed));
  assert.deepEqual(bob.names(), ['ada', 'bob']);
  await until(() => ada.members.has(bob.welcome.id), 'Ada to hear of Bob');
  await until(
    () => ada.messages.some((m) => m.event === 'join' && m.id === bob.welcome.id && m.info?.name === 'bob'),
    "Bob's presence join at Ada's",
  );

  // Carol with the Switchboard client on C: everyone listed, and announced.
  const carol = await joinWithClient(t, c.base, 'carol', room);
  assert.equal(carol.error, undefined, carol.error?.message);
  assert.equal(carol.welcome.node, c.node);
  assert.deepEqual(carol.names(), ['ada', 'bob', 'carol']);
  await until(() => ada.names().length === 3 && bob.names().length === 3, 'Ada and Bob to hear of Carol');
  assert.deepEqual(ada.names(), ['ada', 'bob', 'carol']);
  assert.deepEqual(bob.names(), ['ada', 'bob', 'carol']);

  // Names are unique across nodes, on both paths.
  for (const [name, node] of [['ada', b], ['bob', a], ['carol', a], ['bob', c]]) {
    const twin = await join(t, node.base, name, room);
    assert.equal(twin.closed?.code, 4009, `${name} on node ${node.node} is refused`);
    assert.match(twin.messages.find((m) => m.type === 'error')?.message ?? '', new RegExp(`the name "${name}" is taken`));
  }
  const clientTwin = await joinWithClient(t, a.base, 'bob', room);
  assert.equal(clientTwin.error?.code, 'ERR_NAME_TAKEN');
  // Elsewhere the name is free.
  const elsewhere = await join(t, b.base, 'ada', 'elsewhere');
  assert.ok(elsewhere.welcome, 'ada in another room');
  assert.deepEqual(elsewhere.names(), ['ada']);

  // Every node lists everyone, without joining.
  for (const node of [a, b, c]) assert.deepEqual(await roomNames(node.base, room), ['ada', 'bob', 'carol'], `GET on node ${node.node}`);

  // Messages cross nodes, from both paths.
  ada.ws.send(JSON.stringify({ type: 'say', text: 'hello from A' }));
  await carol.client.call('chat.say', 'hi from C');
  for (const page of [ada, bob, carol]) {
    await until(() => page.said().length === 2, `both messages at ${page.welcome.name}'s`);
    assert.deepEqual(page.said().sort(), ['ada:hello from A', 'carol:hi from C']);
  }

  // A message sent before the welcome waits for it: Dan (on A) speaks as
  // soon as the socket opens; his own page gets the welcome first, Bob
  // (on B) hears him join before he speaks.
  const dan = await join(t, a.base, 'dan', room, (ws) => ws.send(JSON.stringify({ type: 'say', text: 'early' })));
  assert.ok(dan.welcome);
  await until(() => dan.said().includes('dan:early'), "Dan's early message, echoed");
  const danIndex = (page, predicate) => page.messages.findIndex(predicate);
  assert.ok(danIndex(dan, (m) => m.type === 'welcome') < danIndex(dan, (m) => m.type === 'say'), 'welcome, then the message');
  await until(() => bob.said().includes('dan:early'), "Dan's early message at Bob's");
  assert.ok(
    danIndex(bob, (m) => m.type === 'join' && m.id === dan.welcome.id) < danIndex(bob, (m) => m.type === 'say' && m.name === 'dan'),
    "Bob hears Dan join before he speaks",
  );
  await until(() => ada.names().length === 4 && carol.names().length === 4, 'Dan on every page');

  // Node B dies: Bob leaves every page, announced once, within a few seconds.
  const killed = Date.now();
  b.child.kill('SIGKILL');
  await until(() => !ada.members.has(bob.welcome.id) && !carol.members.has(bob.welcome.id), "Bob's leave", LEAVE_WITHIN_MS);
  t.diagnostic(`Bob left the pages ${Date.now() - killed} ms after node B was killed`);
  for (const page of [ada, carol]) {
    assert.deepEqual(page.names(), ['ada', 'carol', 'dan']);
    assert.ok(page.messages.some((m) => m.event === 'leave' && m.id === bob.welcome.id), 'a presence leave');
  }
  for (const node of [a, c]) assert.deepEqual(await roomNames(node.base, room), ['ada', 'carol', 'dan']);
  // Bob's name is free again.
  const bobAgain = await join(t, a.base, 'bob', room);
  assert.ok(bobAgain.welcome, JSON.stringify(bobAgain.closed));
  assert.deepEqual(bobAgain.names(), ['ada', 'bob', 'carol', 'dan']);
  await until(() => ada.members.has(bobAgain.welcome.id), 'Ada to hear of the new Bob');

  // Nothing was announced twice, though joins come both as the app's
  // messages and as presence events.
  for (const page of [ada, carol]) {
    assert.equal(new Set(page.noticed).size, page.noticed.length, `${page.welcome.name}'s notices: ${page.notices}`);
  }
  assert.deepEqual(ada.notices, ['join:bob', 'join:carol', 'join:dan', 'leave:bob', 'join:bob']);

  // A member leaving a live node leaves at once.
  dan.ws.close();
  await until(() => !ada.members.has(dan.welcome.id) && !carol.members.has(dan.welcome.id), "Dan's leave", 3000);
});
