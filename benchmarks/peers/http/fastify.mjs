// fastify as an HTTP benchmark server of the suite (contract:
// ../../SCENARIOS.md, "HTTP"), with @fastify/static for the files; both
// pinned in ../../package.json.
//
//   PORT=0 STATIC_DIR=/tmp/files node benchmarks/peers/http/fastify.mjs
//
// Settings a competent user would choose for a benchmark:
//   logger false              fastify's default, written out: a logger costs
//                             a JSON line per request.
//   keepAliveTimeout 10 min   as the node:http peer (the default 72 s is also
//                             far longer than any pause in a run).
//   bodyLimit 1 MiB           the default, written out (/echo sends 64 KiB).
//   /json with a response schema, so fastify serializes it with its compiled
//                             fast-json-stringify serializer (per request), as
//                             its documentation recommends.
//   /echo: a content-type parser for application/octet-stream that hands
//                             the body over as one Buffer (parseAs 'buffer').
//   /static/: @fastify/static with its defaults (ETag, Last-Modified,
//                             Cache-Control, streamed from disk by @fastify/send).
// Handlers are synchronous and answer with reply.send (no promise per request).
//
// Prints `LISTENING <port>` once listening; SIGTERM closes and exits 0.
import fastifyStatic from '@fastify/static';
import Fastify from 'fastify';
import { BODY_LIMIT, HELLO, announce, onStop, portFromEnv, staticDirFromEnv } from './common.mjs';

const port = portFromEnv();
const staticDir = staticDirFromEnv();

const app = Fastify({ logger: false, keepAliveTimeout: 10 * 60_000, bodyLimit: BODY_LIMIT });

app.get('/hello', (request, reply) => {
  reply.type('text/plain').send(HELLO);
});

app.get(
  '/json',
  {
    schema: {
      response: { 200: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] } },
    },
  },
  (request, reply) => {
    reply.send({ message: HELLO });
  },
);

app.get('/user/:id', (request, reply) => {
  reply.type('text/plain').send(request.params.id);
});

app.addContentTypeParser('application/octet-stream', { parseAs: 'buffer' }, (request, body, done) => done(null, body));
app.post('/echo', (request, reply) => {
  reply.type('application/octet-stream').send(request.body);
});

await app.register(fastifyStatic, { root: staticDir, prefix: '/static/' });

await app.listen({ port, host: '127.0.0.1' });
announce(app.server.address().port);
onStop(() => app.close());
