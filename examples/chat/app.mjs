// The chat app, loaded in every worker thread (see server.mjs). It serves
// the page on `/` and speaks a small JSON protocol on the WebSocket `/chat`.
//
// Client -> server:  {"type":"say","text":"..."}            (text: 1..2000 chars)
// Server -> client:  {"type":"welcome","id","name","room","worker","members":[{"id","name"}],"at"}
//                    {"type":"join","id","name","at"}
//                    {"type":"leave","id","name","at"}
//                    {"type":"say","id","name","text","at"}  (to the whole room, sender included)
//                    {"type":"error","message"}
// Close codes:       4009 the name is taken in that room; 1008 too many bad messages.
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
import { readFileSync } from 'node:fs';
import { defineApp, UpgradeRejection } from 'switchboard';

const page = readFileSync(new URL('./index.html', import.meta.url));

const MAX_NAME = 32;
const MAX_TEXT = 2000;
const MAX_BAD_MESSAGES = 10;
const ROOM_PATTERN = /^[a-z0-9_-]{1,32}$/;
// Control characters and bidirectional overrides (name spoofing).
const FORBIDDEN_IN_NAME = /[\p{Cc}\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;

const roomChannel = (room) => `room:${room}`;
const userPrefix = (room) => `user:${room}:`;
const userChannel = (room, name) => userPrefix(room) + name;

/** Validate the query of an upgrade; returns the user data or throws a 400. */
function parseJoin(searchParams) {
  const name = (searchParams.get('name') ?? '').normalize('NFC').replace(/\s+/g, ' ').trim();
  const room = (searchParams.get('room') ?? '').trim().toLowerCase();
  const nameLength = [...name].length;
  if (nameLength === 0) throw new UpgradeRejection(400, 'name is required');
  if (nameLength > MAX_NAME) throw new UpgradeRejection(400, `name is longer than ${MAX_NAME} characters`);
  if (FORBIDDEN_IN_NAME.test(name)) throw new UpgradeRejection(400, 'name contains control characters');
  if (!ROOM_PATTERN.test(room)) {
    throw new UpgradeRejection(400, `room must be 1-${MAX_NAME} characters of a-z, 0-9, - and _`);
  }
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

  app.get('/', { body: page, contentType: 'text/html; charset=utf-8' });

  app.ws('/chat', {
    // A chat message is at most 2000 UTF-16 units: 16 KiB is ample for its JSON.
    maxPayloadLength: 16 * 1024,

    upgrade(req) {
      return parseJoin(req.searchParams);
    },

    open(ws) {
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
      const members = [];
      for (const id of app.subscribers(roomChannel(room))) {
        const memberName = id === ws.id ? name : nameOf(id, room);
        if (memberName !== undefined) members.push({ id, name: memberName });
      }
      const at = Date.now();
      ws.send(JSON.stringify({ type: 'welcome', id: ws.id, name, room, worker: app.workerIndex, members, at }));
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
  });
});
