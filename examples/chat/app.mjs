// The chat app, loaded in every worker thread (see server.mjs). It serves
// the page on `/` and speaks a small JSON protocol on the WebSocket `/chat`.
//
// Client -> server:  {"type":"say","text":"..."}            (text: 1..2000 chars)
// Server -> client:  {"type":"welcome","id","name","room","worker","node","members":[{"id","name"}],"at"}
//                    {"type":"join","id","name","at"}
//                    {"type":"leave","id","name","at"}
//                    {"type":"say","id","name","text","at"}  (to the whole room, sender included)
//                    {"type":"error","message"}
//                    with several nodes, also the room's presence events:
//                    {"event":"join"|"leave","id","info":{"name"}}
// Close codes:       4009 the name is taken in that room; 1008 too many bad
//                    messages; 1013 the member list is unavailable (Redis down).
//
// Names are normalised (public/names.mjs: invisible characters removed, NFKC,
// white space collapsed) before they are checked and compared, so "sam" and
// "sam" with a zero-width space are the same name, and the second is
// refused as taken. The page and its script, style and icon (public/) are
// static files the core serves, with a strict Content-Security-Policy (no
// inline script or style: they are files of their own) and
// `X-Content-Type-Options: nosniff`.
//
// Transports: the page talks to `/chat` over WebSocket, or, when a proxy
// breaks WebSocket (or the page's "Transport" setting says so), to the
// SockJS service `/sockjs/chat` with the same behaviour, over any SockJS
// transport (websocket, xhr-streaming, xhr-polling, eventsource,
// htmlfile, jsonp-polling). A SockJS session is a connection like the
// others: same handlers, same channels, same room. The page loads
// sockjs-client (1.6.1) from `/vendor/sockjs.min.js`, served from this
// repository's dependency.
//
// The page can also use Switchboard's own client (served by this server at
// /switchboard/client.js): the protocol over WebSocket at /rpc/websocket,
// falling back to SockJS at /rpc when WebSocket is blocked. The same rooms
// and channels; `chat.join` and `chat.say` are its calls, and the room's
// channel reaches it as one-way messages named after the channel.
//
// REST: GET /api/rooms/<room> answers {"room","members":[{"id","name"}]}
// from the same member list as the welcome (404 for a malformed room name;
// 503 when Redis does not answer), so a lobby page or a monitor sees who
// is in a room without joining it.
//
// Membership across workers
// -------------------------
// Connections of one room are pinned to different worker threads, so no
// worker has the whole room in a Map, and `ws.data` (the name) is only
// readable in the connection's own worker. Instead the member list is read
// from the native channel registry, which every worker shares:
//
//   room:<room>          every member; messages, joins and leaves go here.
//   user:<room>:<name>   one per member: its subscriber is the member, and
//                        its name carries the member's name, so any worker
//                        finds a member's name with `app.getTopics(id)`.
//                        It also makes names unique within a room.
//
// On open, a connection subscribes (user channel first, then the room),
// lists the room's subscribers with their names, sends that list to itself
// as `welcome`, then publishes `join` to the others. Why this is correct
// without locks: a member A that is already subscribed when the newcomer N
// lists the room is in N's list; a member subscribing later lists the room
// after N subscribed, so N is in its list, or it receives N's `join` (N
// publishes after subscribing). The native layer unsubscribes a closing
// connection before its `close` handler publishes `leave`, so anyone who
// listed it will also receive its `leave`. Connection ids are never reused:
// the page keeps the ids it saw leave and ignores them if a `welcome` that
// raced with the `leave` still lists them.
//
// Membership across nodes
// -----------------------
// With REDIS_URL (server.mjs), several processes serve the same rooms, and
// the registry only knows this node's connections. The member list then
// comes from Redis presence (docs/scale-out.md, "Presence"), which the
// server keeps for `room:*` and `user:*`: a connection's presence info is
// its name, set before it subscribes, so every node lists it with its
// name, and so does every `$presence:room:<room>` event. `open` (and
// `chat.join`) then:
//
//   1. subscribes the user channel and reads its presence: another member
//      there, on any node, holds the name (4009 / ERR_NAME_TAKEN);
//   2. subscribes `$presence:room:<room>` (the room's joins and leaves,
//      published by Redis itself), then the room, and reads the room's
//      presence for the welcome;
//   3. sends the welcome and publishes `join`, as without Redis.
//
// A server answers a presence read in turn with its own joins and leaves,
// once its subscriptions made before the read are in effect in Redis, so
// the read lists the connection itself, and every event published after
// it reaches this node: of two members, the one who reads second lists the
// other, and the other gets its join event. Leaves come the same way, also
// those of a node that died: its members are evicted once its node key
// expires (`nodeTtl`), or expire after `presenceTtl`; either way their
// leaves are published (and their names freed). The page maps the events
// onto its `join` and `leave` and drops duplicates by id: the app's own
// `join` and `leave` messages still go to the room (they carry the time).
//
// `open` is async then. The server holds a connection's later events
// (messages, close) until its `open` settles, so a `say` sent before the
// welcome is handled after it, in order, once the member has joined; the
// room's traffic, which is native fan-out, may reach the page before the
// welcome, and the page holds it until the welcome. `chat.say` waits for
// a `chat.join` still running on its connection (calls are concurrent).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { defineApp, nodeOf, RpcError, UpgradeRejection } from 'switchboard';
import { brokerFromEnv } from '../env.mjs';
import { MAX_NAME, normalizeName, normalizeRoom } from './public/names.mjs';

/** The page and its files (served natively: validators, 304s, ranges). */
const PUBLIC = fileURLToPath(new URL('./public', import.meta.url));
/** sockjs-client's browser build, for the page's SockJS transports. */
const SOCKJS_CLIENT = readFileSync(createRequire(import.meta.url).resolve('sockjs-client/dist/sockjs.min.js'));

const MAX_TEXT = 2000;
const MAX_BAD_MESSAGES = 10;

/**
 * Several nodes share the rooms: server.mjs gave the server a broker from
 * this same environment (worker threads inherit it), with presence for
 * `room:*` and `user:*`. The member list then comes from presence.
 */
const SHARED = brokerFromEnv() !== undefined;

/**
 * The page loads only its own files and talks only to its own origin
 * ('self' covers ws:// on the same host and port): no inline script or
 * style, no plugins, no framing, no form posts, no <base>.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  // SockJS's htmlfile transport streams into a hidden iframe of our origin.
  "frame-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Sent with every file of the page. */
const HEADERS = {
  'Content-Security-Policy': CONTENT_SECURITY_POLICY,
  // Browsers use the Content-Type given, never one guessed from the bytes.
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

const roomChannel = (room) => `room:${room}`;
/** The room's joins and leaves on every node, published by Redis (with a broker). */
const roomEvents = (room) => `$presence:${roomChannel(room)}`;
const userPrefix = (room) => `user:${room}:`;
const userChannel = (room, name) => userPrefix(room) + name;

const NAME_ERRORS = {
  empty: 'name is required',
  invisible: 'name is required: it has no visible characters',
  'too-long': `name is longer than ${MAX_NAME} characters`,
  control: 'name contains control characters',
};

/** A name and room to join, normalised: `{ name, room }`, or `{ error }` saying what is wrong. */
function checkJoin(rawName, rawRoom) {
  const { name, error } = normalizeName(rawName);
  if (error) return { error: NAME_ERRORS[error] };
  const room = normalizeRoom(rawRoom);
  if (room === null) return { error: 'room must be 1-32 characters of a-z, 0-9, - and _' };
  return { name, room };
}

/** Validate the query of an upgrade; returns the user data or throws a 400. */
function parseJoin(searchParams) {
  const { name, room, error } = checkJoin(searchParams.get('name'), searchParams.get('room'));
  if (error) throw new UpgradeRejection(400, error);
  return { name, room, joined: false, badMessages: 0 };
}

export default defineApp((app) => {
  /** The name of member `id` of `room`, from its channels; undefined once it left. */
  function nameOf(id, room) {
    const prefix = userPrefix(room);
    const channel = app.getTopics(id).find((topic) => topic.startsWith(prefix));
    return channel?.slice(prefix.length);
  }

  function reply(ws, message) {
    ws.send(JSON.stringify({ type: 'error', message }));
  }

  /** Answer a malformed message; too many of them close the connection. */
  function badMessage(ws, message) {
    ws.data.badMessages += 1;
    reply(ws, message);
    if (ws.data.badMessages >= MAX_BAD_MESSAGES) ws.end(1008, 'too many bad messages');
  }

  // `/` is the page (public/index.html); its script, style and icon sit
  // beside it. More specific routes (the REST endpoint, the WebSocket
  // route) win over the directory's wildcard.
  app.static('/', { root: PUBLIC, headers: HEADERS });

  /** The members of `room`, from the channel registry every worker shares. */
  function membersOf(room) {
    const members = [];
    for (const id of app.subscribers(roomChannel(room))) {
      const name = nameOf(id, room);
      if (name !== undefined) members.push({ id, name });
    }
    return members;
  }

  /** Presence members as the page lists them: `{ id, name }`. */
  function named(presence) {
    const members = [];
    for (const { id, info } of presence) {
      if (typeof info?.name === 'string') members.push({ id, name: info.name });
    }
    return members;
  }

  /**
   * The presence of `channel`, which lists `id` (the read follows its
   * join); null if `id` left the channel meanwhile (its connection
   * closed). Rejects when Redis does not answer.
   */
  async function presenceWithMe(channel, id) {
    const presence = await app.presence(channel);
    return app.isSubscribed(id, channel) ? presence : null;
  }

  /**
   * Join `room` as `name` on every node, for `connection` (a WebSocket or
   * a protocol connection, its presence info set): the user channel claims
   * the name, the room's events then the room are subscribed. Resolves with the room's
   * members (the newcomer included), 'taken', or null if the connection
   * closed meanwhile; rejects when Redis does not answer.
   */
  async function joinShared(connection, name, room) {
    const me = userChannel(room, name);
    connection.subscribe(me);
    const holders = await presenceWithMe(me, connection.id);
    if (holders === null) return null;
    // Two newcomers racing for one name may both see each other and both
    // leave, as on one node; neither ends up a duplicate.
    if (holders.some((member) => member.id !== connection.id)) {
      connection.unsubscribe(me);
      return 'taken';
    }
    connection.subscribe(roomEvents(room));
    connection.subscribe(roomChannel(room));
    const presence = await presenceWithMe(roomChannel(room), connection.id);
    return presence && named(presence);
  }

  app.get('/api/rooms/:room', async (req, res) => {
    const room = normalizeRoom(req.params.room);
    if (room === null) return res.status(404).json({ error: { code: 'NO_SUCH_ROOM', message: 'room names are 1-32 characters of a-z, 0-9, - and _' } });
    let members;
    if (SHARED) {
      try {
        members = named(await app.presence(roomChannel(room)));
      } catch (error) {
        return res.status(503).json({ error: { code: error.code ?? 'UNAVAILABLE', message: 'the member list is unavailable' } });
      }
    } else {
      members = membersOf(room);
    }
    res.header('Cache-Control', 'no-store').json({ room, members });
  });

  app.get('/vendor/sockjs.min.js', {
    body: SOCKJS_CLIENT,
    contentType: 'application/javascript; charset=utf-8',
    headers: { ...HEADERS, 'Cache-Control': 'public, max-age=3600' },
  });

  /** The chat, whatever carries it: a WebSocket, or a SockJS session. */
  const chat = {
    // A chat message is at most 2000 UTF-16 units: 16 KiB is ample for its JSON.
    maxPayloadLength: 16 * 1024,

    upgrade(req) {
      return parseJoin(req.searchParams);
    },

    open(ws) {
      if (SHARED) return openShared(ws);
      const { name, room } = ws.data;
      const me = userChannel(room, name);
      ws.subscribe(me);
      // Someone else holds the name (two newcomers racing for one name may
      // both see each other and both leave; neither ends up a duplicate).
      if (app.subscribers(me).some((id) => id !== ws.id)) {
        reply(ws, `the name "${name}" is taken in room ${room}`);
        ws.end(4009, 'name taken');
        return;
      }
      ws.subscribe(roomChannel(room));
      // Our own name is found like the others': our user channel is in place.
      const members = membersOf(room);
      const at = Date.now();
      ws.send(JSON.stringify({ type: 'welcome', id: ws.id, name, room, worker: app.workerIndex, node: nodeOf(ws.id), members, at }));
      ws.publish(roomChannel(room), JSON.stringify({ type: 'join', id: ws.id, name, at }));
      ws.data.joined = true;
    },

    message(ws, data, isBinary) {
      if (!ws.data.joined) return;
      if (isBinary) return badMessage(ws, 'binary messages are not supported');
      let message;
      try {
        message = JSON.parse(data.toString('utf8'));
      } catch {
        return badMessage(ws, 'a message must be JSON');
      }
      if (message === null || message.type !== 'say' || typeof message.text !== 'string') {
        return badMessage(ws, 'expected {"type":"say","text":"..."}');
      }
      const text = message.text.trim();
      if (text.length === 0) return;
      if (text.length > MAX_TEXT) return badMessage(ws, `a message is at most ${MAX_TEXT} characters`);
      const { name, room } = ws.data;
      app.publish(roomChannel(room), JSON.stringify({ type: 'say', id: ws.id, name, text, at: Date.now() }));
    },

    close(ws) {
      // Subscriptions are already gone; only announce members that joined.
      if (!ws.data?.joined) return;
      const { name, room } = ws.data;
      app.publish(roomChannel(room), JSON.stringify({ type: 'leave', id: ws.id, name, at: Date.now() }));
    },
  };
  /**
   * `open` with several nodes ("Membership across nodes"): async, so the
   * connection's messages wait for it and find it joined.
   */
  async function openShared(ws) {
    const { name, room } = ws.data;
    app.setPresenceInfo(ws.id, { name });
    let members;
    try {
      members = await joinShared(ws, name, room);
    } catch (error) {
      reply(ws, 'the member list is unavailable, try again later');
      ws.end(1013, 'try again later');
      console.error(`chat: connection ${ws.id} could not join ${room}: ${error.message}`);
      return;
    }
    if (members === null) return; // closed meanwhile: nobody was told it joined
    if (members === 'taken') {
      reply(ws, `the name "${name}" is taken in room ${room}`);
      ws.end(4009, 'name taken');
      return;
    }
    const at = Date.now();
    ws.send(JSON.stringify({ type: 'welcome', id: ws.id, name, room, worker: app.workerIndex, node: nodeOf(ws.id), members, at }));
    ws.publish(roomChannel(room), JSON.stringify({ type: 'join', id: ws.id, name, at }));
    ws.data.joined = true;
  }

  // The chat for Switchboard's own client (the page's "Switchboard client"
  // transports): the protocol over WebSocket on `/rpc/websocket`, and over
  // SockJS on `/rpc`, where the client falls back when WebSocket is
  // blocked. The client bundle is served at `/switchboard/client.js`.
  app.clientBundle('/switchboard/client.js', { headers: HEADERS });
  app.sockjs('/rpc', { rpc: true, maxPayloadLength: 16 * 1024 });
  /** `chat.join` with several nodes: the same steps as `openShared`. */
  async function joinCallShared(connection, name, room) {
    app.setPresenceInfo(connection.id, { name });
    let members;
    try {
      members = await joinShared(connection, name, room);
    } catch (error) {
      throw new RpcError('ERR_MEMBERS_UNAVAILABLE', 'the member list is unavailable, try again later', { cause: error });
    }
    if (members === 'taken') throw new RpcError('ERR_NAME_TAKEN', `the name "${name}" is taken in room ${room}`);
    // Closed meanwhile (its onClose ran and found no room): tell nobody it joined.
    if (members === null || !connection.isOpen) throw new RpcError('ERR_NOT_JOINED', 'the connection closed');
    connection.data = { name, room };
    const at = Date.now();
    app.publish(roomChannel(room), JSON.stringify({ type: 'join', id: connection.id, name, at }), { exclude: connection.id });
    return { type: 'welcome', id: connection.id, name, room, worker: app.workerIndex, node: nodeOf(connection.id), members, at };
  }

  /** `chat.say` once joined: publish to the room. */
  function say(connection, text) {
    const { name, room } = connection.data ?? {};
    if (room === undefined) throw new RpcError('ERR_NOT_JOINED', 'join a room first');
    app.publish(roomChannel(room), JSON.stringify({ type: 'say', id: connection.id, name, text, at: Date.now() }));
  }

  app.rpc
    .action('chat.join', (call) => {
      const { name, room, error } = checkJoin(call.decode()?.name, call.decode()?.room);
      if (error) throw new RpcError('ERR_BAD_JOIN', error);
      const connection = call.connection;
      if (SHARED) {
        // Calls run concurrently: a `chat.say` meanwhile waits for this.
        const joining = joinCallShared(connection, name, room);
        connection.data = { joining };
        return joining;
      }
      const me = userChannel(room, name);
      connection.subscribe(me);
      if (app.subscribers(me).some((id) => id !== connection.id)) {
        connection.unsubscribe(me);
        throw new RpcError('ERR_NAME_TAKEN', `the name "${name}" is taken in room ${room}`);
      }
      connection.subscribe(roomChannel(room));
      connection.data = { name, room };
      const at = Date.now();
      // To everyone but us (our page has the welcome), after we subscribed:
      // the same order as `/chat`'s, with the same argument.
      app.publish(roomChannel(room), JSON.stringify({ type: 'join', id: connection.id, name, at }), { exclude: connection.id });
      return { type: 'welcome', id: connection.id, name, room, worker: app.workerIndex, node: nodeOf(connection.id), members: membersOf(room), at };
    })
    .action('chat.say', (call) => {
      const text = typeof call.decode() === 'string' ? call.decode().trim() : '';
      if (text.length === 0 || text.length > MAX_TEXT) throw new RpcError('ERR_BAD_MESSAGE', `a message is 1 to ${MAX_TEXT} characters`);
      const joining = call.connection.data?.joining;
      // After the join still running (whatever its outcome), in call order.
      if (joining) return joining.then(() => say(call.connection, text), () => say(call.connection, text));
      say(call.connection, text);
    })
    .onClose((connection) => {
      const { name, room } = connection.data ?? {};
      if (room === undefined) return;
      app.publish(roomChannel(room), JSON.stringify({ type: 'leave', id: connection.id, name, at: Date.now() }));
    });

  // The same handlers for SockJS clients on `/sockjs/chat`: sockjs-client
  // keeps the query on every transport's URL, so the upgrade hook reads
  // the name and room as it does for `/chat`.
  app.ws('/chat', { ...chat, sockjs: '/sockjs/chat' });
});
