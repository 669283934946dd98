// The page of the client's browser tests and the client's ES modules, as
// they are built (packages/*/dist), served from an origin of their own: a
// page imports them through an import map, with no bundler.
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { once } from 'node:events';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The import map that resolves the client's bare specifiers on that origin. */
export const IMPORT_MAP = { imports: { 'switchboard-client': '/client/index.js', 'switchboard-rpc': '/protocol/index.js', msgpackr: '/msgpackr/index.js' } };

/** Serves `page` on `/` and the three packages' ES modules; resolves once listening. */
export async function startStaticServer(page) {
  const mounts = {
    '/client/': path.join(root, 'packages', 'client', 'dist'),
    '/protocol/': path.join(root, 'packages', 'rpc', 'dist'),
    '/msgpackr/': path.join(root, 'node_modules', 'msgpackr'),
  };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    if (url.pathname === '/') {
      res.writeHead(200, { 'content-type': 'text/html' }).end(page);
      return;
    }
    for (const [prefix, dir] of Object.entries(mounts)) {
      if (!url.pathname.startsWith(prefix)) continue;
      const file = path.join(dir, url.pathname.slice(prefix.length));
      if (!file.startsWith(dir) || !existsSync(file)) break;
      res.writeHead(200, { 'content-type': 'text/javascript' }).end(readFileSync(file));
      return;
    }
    res.writeHead(404).end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return server;
}

