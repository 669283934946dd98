// The chat page's script (a module, served as /chat.js: the page's
// Content-Security-Policy allows no inline script). Names are checked with
// the server's own rules (names.mjs). Everything the server sends is
// rendered with textContent: user text is never parsed as HTML.
import { MAX_NAME, normalizeName, normalizeRoom } from './names.mjs';

const $ = (id) => document.getElementById(id);
const MAX_TEXT = 2000;

let socket = null;
let me = null;                // { id, name, room, worker } once welcomed
let lastError = '';           // the last {type:'error'} from the server
const members = new Map();    // id -> name
const gone = new Set();       // ids that left; ids are never reused
let lastSpeaker = null;       // to group consecutive messages
// What the room sent before our welcome (its fan-out may overtake the
// welcome when the server reads the member list from Redis): handled
// right after the welcome, so the list is built first and the joins it
// already has are not announced twice.
let early = [];

// ---- join form -------------------------------------------------------

const NAME_ERRORS = {
  empty: 'Please enter a name.',
  invisible: 'A name needs visible characters.',
  'too-long': `A name is at most ${MAX_NAME} characters.`,
  control: 'A name cannot contain control characters.',
};

/** The name and room to join, or the error to show on the form. */
function validate(rawName, rawRoom) {
  const { name, error } = normalizeName(rawName);
  if (error) return { error: NAME_ERRORS[error] };
  const room = normalizeRoom(rawRoom);
  if (room === null) return { error: 'A room is 1–32 characters: letters a–z, digits, - and _.' };
  return { name, room };
}

function showJoin(error = '') {
  $('chat').hidden = true;
  $('leave').hidden = true;
  $('join').hidden = false;
  $('room-title').textContent = '';
  document.title = 'Switchboard chat';
  $('join-error').textContent = error;
  $('join-error').hidden = !error;
  (error ? $('name') : ($('name').value ? $('room') : $('name'))).focus();
}

$('join-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const { name, room, error } = validate($('name').value, $('room').value);
  if (error) {
    showJoin(error);
    return;
  }
  try { localStorage.setItem('switchboard-chat-name', name); } catch {}
  history.replaceState(null, '', `#${room}`);
  $('log').replaceChildren();
  connect(name, room);
});

// ---- connection ------------------------------------------------------

function setStatus(state, text) {
  $('status').dataset.state = state;
  $('status-text').textContent = text;
}

function connect(name, room) {
  if (socket) socket.close(1000, 'reconnecting');
  members.clear();
  renderMembers();
  me = null;
  lastError = '';
  lastSpeaker = null;
  early = [];
  $('join').hidden = true;
  $('chat').hidden = false;
  $('banner').hidden = true;
  $('leave').hidden = false;
  $('room-title').textContent = `#${room}`;
  $('text').placeholder = `Message #${room}`;
  document.querySelector('aside').classList.remove('offline');
  document.title = `#${room} · Switchboard chat`;
  setComposer(false);
  setStatus('connecting', 'Connecting…');

  const ws = open(name, room, $('transport').value);
  socket = ws;
  let opened = false;
  $('transport-used').hidden = true;
  ws.onopen = () => {
    opened = true;
    // What carries the chat: the setting may be "automatic".
    $('transport-used').textContent = ws.label ?? 'WebSocket';
    $('transport-used').hidden = false;
  };
  ws.onmessage = (event) => {
    if (ws !== socket) return;
    let message;
    try { message = JSON.parse(event.data); } catch { return; }
    handle(message);
  };
  ws.onclose = (event) => {
    if (ws !== socket) return;   // replaced by a newer connection
    socket = null;
    setComposer(false);
    const reason = closeReason(event, opened);
    setStatus('closed', 'Disconnected');
    if (!me) {
      // Never joined: back to the form, with what went wrong.
      showJoin(reason);
      return;
    }
    me = null;
    // The list is no longer kept up to date: grey it out until a rejoin.
    document.querySelector('aside').classList.add('offline');
    notice(`Disconnected: ${reason}`, true);
    $('banner-text').textContent = `Disconnected: ${reason}`;
    $('banner').hidden = false;
  };
}

/**
 * A connection to the chat over `transport`: a WebSocket to /chat, or a
 * SockJS session of /sockjs/chat (sockjs-client, loaded by the page) on one
 * transport or, for "sockjs", whichever works. Both have the WebSocket API.
 */
function open(name, room, transport) {
  const query = new URLSearchParams({ name, room });
  if (transport === 'websocket') {
    const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
    return new WebSocket(`${scheme}://${location.host}/chat?${query}`);
  }
  if (transport === 'switchboard' || transport === 'switchboard-sockjs') {
    return openSwitchboard(name, room, transport === 'switchboard-sockjs');
  }
  const options = {};
  if (transport !== 'sockjs') options.transports = [transport === 'websocket-sockjs' ? 'websocket' : transport];
  const sock = new window.SockJS(`/sockjs/chat?${query}`, null, options);
  Object.defineProperty(sock, 'label', { get: () => `SockJS · ${sock.transport}` });
  return sock;
}

/**
 * The chat over Switchboard's own client (served at /switchboard/client.js):
 * the protocol over WebSocket, falling back to SockJS when WebSocket is
 * blocked (or at once with `sockjsOnly`). Wrapped in the WebSocket API the
 * rest of this page uses: the join call's reply is the `welcome`, the
 * room's channel comes as one-way messages named after it, `send` is a
 * `chat.say` call.
 */
function openSwitchboard(name, room, sockjsOnly) {
  const socket = { readyState: 0, label: '', onopen: null, onmessage: null, onclose: null };
  const deliver = (message) => socket.onmessage?.({ data: JSON.stringify(message) });
  let client = null;
  const finish = (code, reason) => {
    if (socket.readyState === 3) return;
    socket.readyState = 3;
    client?.close({ timeoutMs: 0 });
    socket.onclose?.({ code, reason });
  };
  socket.close = (code = 1000, reason = '') => finish(code, reason);
  socket.send = (json) => {
    const { text } = JSON.parse(json);
    client?.call('chat.say', text).catch((error) => deliver({ type: 'error', message: error.message }));
  };
  (async () => {
    const { connect, jsonCodec } = await import('/switchboard/client.js');
    const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
    client = await connect(`${scheme}://${location.host}/rpc/websocket`, {
      fallback: `${location.origin}/rpc`,
      transports: sockjsOnly ? ['sockjs'] : ['websocket', 'sockjs'],
      // The room's messages are JSON text published to a channel.
      codecs: [jsonCodec],
      reconnect: false,
    });
    if (socket.readyState === 3) return client.close({ timeoutMs: 0 });
    client.on('closed', () => finish(1006, ''));
    client.handle(`room:${room}`, (message) => deliver(message));
    // With several nodes, the room's joins and leaves as Redis presence
    // sees them (nothing comes here on a single node).
    client.handle(`$presence:room:${room}`, (message) => deliver(message));
    socket.readyState = 1;
    socket.label = `Switchboard · ${client.transport}`;
    socket.onopen?.();
    deliver(await client.call('chat.join', { name, room }));
  })().catch((error) => {
    deliver({ type: 'error', message: error.message });
    // A refused join closes as `/chat` refuses it; a failure to connect is
    // a lost connection.
    if (error.code === 'ERR_NAME_TAKEN') finish(4009, 'name taken');
    else if (socket.readyState === 1) finish(4000, error.message);
    else finish(1006, '');
  });
  return socket;
}

function closeReason(event, opened) {
  if (!opened) {
    // The browser hides the HTTP status of a refused handshake.
    return 'Could not connect: the server refused the name or room, or is not reachable.';
  }
  if (event.code === 4009) return lastError ? capitalize(lastError) + '.' : 'That name is taken in this room.';
  if (event.code === 1001) return 'The server is shutting down.';
  if (event.code === 1013) return 'The member list is unavailable (the server cannot reach Redis): try again later.';
  if (event.code === 1006) return 'The connection was lost.';
  if (event.code === 1000 && !event.reason) return 'The connection was closed.';
  return `${event.reason || 'closed'} (code ${event.code}).`;
}

function capitalize(s) {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/**
 * A presence event of the room (`{"event":"join"|"leave","id","info"}`,
 * sent by servers that share rooms through Redis) as the page's own
 * `join` or `leave`; null for anything else. The events carry no time:
 * they are shown as they arrive.
 */
function fromPresence(message) {
  if (message.type !== undefined || (message.event !== 'join' && message.event !== 'leave')) return null;
  const name = message.info?.name;
  if (typeof message.id !== 'number' || typeof name !== 'string') return null;
  return { type: message.event, id: message.id, name, at: Date.now() };
}

let lastJoin = null;
function handle(message) {
  message = fromPresence(message) ?? message;
  if (!me && message.type !== 'welcome' && message.type !== 'error') {
    early.push(message);
    return;
  }
  switch (message.type) {
    case 'welcome': {
      me = { id: message.id, name: message.name, room: message.room, worker: message.worker };
      lastJoin = { name: message.name, room: message.room };
      for (const member of message.members) {
        if (!gone.has(member.id)) members.set(member.id, member.name);
      }
      renderMembers();
      const where = message.node ? `node ${message.node} · worker ${message.worker}` : `worker ${message.worker}`;
      setStatus('connected', `Connected as ${message.name} · ${where}`);
      $('status').title = `connection ${message.id}, handled by worker thread ${message.worker}${message.node ? ` of node ${message.node}` : ''}`;
      notice(`You joined #${message.room}`, false, message.at);
      setComposer(true);
      const held = early;
      early = [];
      for (const m of held) handle(m);
      break;
    }
    case 'join':
      if (gone.has(message.id) || members.has(message.id)) break;
      members.set(message.id, message.name);
      renderMembers();
      notice(`${message.name} joined`, false, message.at);
      break;
    case 'leave':
      gone.add(message.id);
      if (members.delete(message.id)) {
        renderMembers();
        notice(`${message.name} left`, false, message.at);
      }
      break;
    case 'say':
      say(message);
      break;
    case 'error':
      lastError = String(message.message);
      notice(`Server: ${lastError}`, true);
      break;
  }
}

// ---- rendering -------------------------------------------------------

function colorOf(name) {
  let hash = 0;
  for (const ch of name) hash = (hash * 31 + ch.codePointAt(0)) >>> 0;
  return `hsl(${hash % 360} 55% 48%)`;
}

function avatar(name) {
  const el = document.createElement('span');
  el.className = 'avatar';
  el.style.background = colorOf(name);
  el.textContent = [...name][0] ?? '?';
  el.setAttribute('aria-hidden', 'true');
  return el;
}

function timeOf(at) {
  const el = document.createElement('time');
  const date = new Date(typeof at === 'number' ? at : Date.now());
  el.dateTime = date.toISOString();
  el.textContent = date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  el.title = date.toLocaleString();
  return el;
}

function renderMembers() {
  const sorted = [...members].sort((a, b) => a[1].localeCompare(b[1]) || a[0] - b[0]);
  const items = sorted.map(([id, name]) => {
    const li = document.createElement('li');
    li.dataset.id = String(id);
    const who = document.createElement('span');
    who.className = 'who';
    who.textContent = name;
    li.append(avatar(name), who);
    if (me && id === me.id) {
      const you = document.createElement('span');
      you.className = 'you';
      you.textContent = '(you)';
      li.append(you);
    }
    return li;
  });
  $('members').replaceChildren(...items);
  $('member-count').textContent = String(members.size);
}

function append(li) {
  const log = $('log');
  const atBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 60;
  log.append(li);
  if (atBottom) log.scrollTop = log.scrollHeight;
}

function notice(text, isError = false, at) {
  const li = document.createElement('li');
  li.className = isError ? 'notice error' : 'notice';
  li.append(document.createTextNode(`${text} · `), timeOf(at));
  append(li);
  lastSpeaker = null;
}

function say(message) {
  const li = document.createElement('li');
  li.className = 'msg';
  li.dataset.id = String(message.id);
  if (me && message.id === me.id) li.classList.add('mine');
  if (lastSpeaker === message.id) li.classList.add('cont');
  lastSpeaker = message.id;
  const meta = document.createElement('div');
  meta.className = 'meta';
  const name = document.createElement('span');
  name.className = 'name';
  name.textContent = message.name;
  meta.append(name, timeOf(message.at));
  const text = document.createElement('div');
  text.className = 'text';
  text.textContent = message.text;
  li.append(avatar(message.name), meta, text);
  append(li);
}

// ---- composer --------------------------------------------------------

function setComposer(enabled) {
  $('text').disabled = !enabled;
  $('composer').querySelector('button').disabled = !enabled;
  if (enabled) $('text').focus();
}

function send() {
  const text = $('text').value.trim();
  // (SockJS's readyState numbers are the WebSocket's.)
  if (!text || !socket || socket.readyState !== WebSocket.OPEN) return;
  socket.send(JSON.stringify({ type: 'say', text }));
  $('text').value = '';
  resize();
}

function resize() {
  const area = $('text');
  area.style.height = 'auto';
  area.style.height = `${Math.min(area.scrollHeight + 2, 160)}px`;
  const left = MAX_TEXT - area.value.length;
  $('counter').hidden = left > 200;
  $('counter').textContent = String(left);
}

$('composer').addEventListener('submit', (event) => {
  event.preventDefault();
  send();
});
$('text').addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    send();
  }
});
$('text').addEventListener('input', resize);

$('leave').addEventListener('click', () => {
  const ws = socket;
  socket = null;
  me = null;
  ws?.close(1000, 'bye');
  setStatus('idle', 'Not connected');
  showJoin();
});
$('rejoin').addEventListener('click', () => {
  if (lastJoin) connect(lastJoin.name, lastJoin.room);
});
$('change').addEventListener('click', () => {
  setStatus('idle', 'Not connected');
  showJoin();
});

// ---- start -----------------------------------------------------------

try { $('name').value = localStorage.getItem('switchboard-chat-name') ?? ''; } catch {}
// `?transport=xhr-polling` (any value of the setting) preselects it.
const transportFromLink = new URLSearchParams(location.search).get('transport');
if ([...$('transport').options].some((option) => option.value === transportFromLink)) {
  $('transport').value = transportFromLink;
}
let roomFromLink = '';
try { roomFromLink = decodeURIComponent(location.hash.slice(1)); } catch {}
$('room').value = roomFromLink || 'lobby';
showJoin();
