// The app module of the Switchboard HTTP benchmark server
// (switchboard-http.mjs), loaded in every worker thread: the endpoints of
// ../SCENARIOS.md, "HTTP", written with Switchboard's HTTP API as its
// documentation shows it, nothing tuned beyond what a user would write.
//
//   GET  /hello        text/plain `Hello, World!`
//   GET  /json         application/json, serialized per request (res.json)
//   GET  /user/:id     text/plain, the id
//   POST /echo         application/octet-stream, the body back (bodyLimit 1 MiB)
//   GET  /static/*     the files of STATIC_DIR, served natively by the core
import { defineApp } from 'switchboard';

const HELLO = 'Hello, World!';
const BODY_LIMIT = 1024 * 1024;

export default defineApp((app) => {
  app.get('/hello', (req, res) => {
    res.type('text/plain').send(HELLO);
  });

  app.get('/json', (req, res) => {
    res.json({ message: HELLO });
  });

  app.get('/user/:id', (req, res) => {
    res.type('text/plain').send(req.params.id);
  });

  app.post('/echo', { bodyLimit: BODY_LIMIT }, async (req, res) => {
    res.type('application/octet-stream').send(await req.buffer());
  });

  // Files served natively by the core: the I/O threads read and send them,
  // no JavaScript runs per request (docs/http.md, "Static files").
  app.static('/static', { root: process.env.STATIC_DIR });
});
