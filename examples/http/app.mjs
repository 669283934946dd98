// The HTTP example's app, loaded in every worker thread (see server.mjs):
// a small REST API with routers, middleware, validation, login with a
// session and a signed cookie, uploads and a server-sent events feed, on
// the same port (and process) as any WebSocket route would be.
//
//   GET  /                     a plain-text greeting
//   GET  /api/notes            the notes (?tag= filters)
//   POST /api/notes            {"text","tag"?} (validated), signed in only
//   GET  /api/notes/:id        one note, 404 when unknown
//   DELETE /api/notes/:id      signed in only
//   POST /login                {"name"} -> a session, and a signed `name` cookie
//   POST /logout
//   GET  /me                   who the session says you are
//   POST /upload               multipart/form-data: each file's name, size and SHA-256
//   GET  /feed                 server-sent events: a tick a second, and every new note
//   GET  /app/                 a page using all of the above (public/), served natively
//
// State (the notes, the sessions) lives in this worker's memory: run with
// WORKERS=1 (the default of server.mjs), or keep it in a shared store
// (Redis) when requests may reach several workers.
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { HttpError, MemoryStore, Router, cors, defineApp, session } from 'switchboard';

const notes = new Map();
let nextId = 1;
const feeds = new Set();

const noteSchema = {
  type: 'object',
  required: ['text'],
  additionalProperties: false,
  properties: {
    text: { type: 'string', minLength: 1, maxLength: 500 },
    tag: { type: 'string', pattern: '^[a-z0-9-]{1,20}$' },
  },
};

/** The page's files load from its own origin only: no inline script or style. */
const PAGE_HEADERS = {
  'Content-Security-Policy': "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
};

function signedIn(req) {
  const name = req.session.get('name');
  if (!name) throw new HttpError(401, 'ERR_SIGN_IN', 'sign in first (POST /login)');
  return name;
}

function broadcast(event) {
  for (const stream of feeds) stream.send(event);
}

export default defineApp((app) => {
  app.cookieSecrets = [process.env.COOKIE_SECRET ?? 'example-secret-that-is-at-least-32-bytes-long'];
  app.use(session({ store: new MemoryStore(), ttl: 60 * 60 * 1000 }));
  app.addHook('onResponse', (req, res) => {
    if (process.env.LOG === '1') console.log(`${req.method} ${req.url} ${res.statusCode}`);
  });

  app.get('/', (req, res) => res.send('Switchboard HTTP example: try GET /api/notes, or open /app/\n'));
  // The page and its script and style, from the I/O threads: ETag and
  // Last-Modified validators, 304s, ranges, never a worker's time.
  app.static('/app', { root: fileURLToPath(new URL('./public', import.meta.url)), headers: PAGE_HEADERS });

  const api = new Router();
  api.use(cors({ origin: true, credentials: true }));
  api.get('/notes', { schema: { query: { type: 'object', properties: { tag: { type: 'string' } } } } }, (req) => {
    const tag = req.query.tag;
    return [...notes.values()].filter((note) => tag === undefined || note.tag === tag);
  });
  api.post('/notes', { schema: { body: noteSchema }, bodyLimit: 16 * 1024 }, (req, res) => {
    const author = signedIn(req);
    const note = { id: nextId++, text: req.body.text, tag: req.body.tag, author, at: Date.now() };
    notes.set(note.id, note);
    broadcast({ event: 'note', id: String(note.id), data: note });
    res.status(201).header('Location', `/api/notes/${note.id}`).json(note);
  });
  api.get('/notes/:id', { schema: { params: { type: 'object', properties: { id: { type: 'integer', minimum: 1 } } } } }, (req) => {
    const note = notes.get(Number(req.params.id));
    if (!note) throw new HttpError(404, 'ERR_NO_NOTE', `no note ${req.params.id}`);
    return note;
  });
  api.delete('/notes/:id', (req, res) => {
    signedIn(req);
    if (!notes.delete(Number(req.params.id))) throw new HttpError(404, 'ERR_NO_NOTE', `no note ${req.params.id}`);
    res.status(204).end();
  });
  app.use('/api', api);

  app.post('/login', { schema: { body: { type: 'object', required: ['name'], properties: { name: { type: 'string', pattern: '^[A-Za-z0-9_]{1,32}$' } } } } }, (req, res) => {
    // A new session id at sign-in: a session fixed by someone else is left behind.
    req.session.regenerate();
    req.session.set('name', req.body.name);
    res.cookie('name', req.body.name, { signed: true, httpOnly: true, sameSite: 'lax', path: '/' });
    res.json({ name: req.body.name });
  });
  app.post('/logout', (req, res) => {
    req.session.destroy();
    res.clearCookie('name', { path: '/' });
    res.status(204).end();
  });
  app.get('/me', (req) => ({ name: req.session.get('name') ?? null, cookie: req.signedCookies.name ?? null }));

  app.post('/upload', { bodyLimit: 256 * 1024 * 1024 }, async (req, res) => {
    const files = [];
    for await (const part of req.multipart({ fileSize: 200 * 1024 * 1024 })) {
      if (part.kind !== 'file') continue;
      const hash = createHash('sha256');
      let size = 0;
      for await (const piece of part.stream) {
        hash.update(piece);
        size += piece.length;
      }
      files.push({ field: part.name, filename: part.filename, size, sha256: hash.digest('hex') });
    }
    res.json({ files });
  });

  app.get('/feed', (req, res) => {
    const stream = res.sse({ heartbeat: 15_000 });
    feeds.add(stream);
    const tick = setInterval(() => stream.send({ event: 'tick', data: new Date().toISOString() }), 1000);
    stream.on('close', () => {
      clearInterval(tick);
      feeds.delete(stream);
    });
  });
});
