// The browser bundle (scripts/bundle-client.mjs) as `app.clientBundle()`
// serves it over real HTTP: one ES module with nothing left to resolve,
// and declarations at the same path with `.d.ts` that stand alone: a
// TypeScript file importing the module by its path type-checks against
// them, with browser types only. (tests/browser/client-bundle.test.mjs
// runs the module in Chromium.)
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Server } from 'switchboard';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const dist = path.join(root, 'packages', 'client', 'dist', 'browser');
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');

async function serve(setup) {
  const server = new Server({ workers: 0 });
  setup(server);
  const [address] = await server.listen(0);
  return { server, base: `http://127.0.0.1:${address.port}` };
}

test('the module and its declarations are served at the path and at .d.ts', async (t) => {
  const { server, base } = await serve((app) => app.clientBundle());
  t.after(() => server.close());

  const script = await fetch(`${base}/switchboard/client.js`);
  assert.equal(script.status, 200);
  assert.equal(script.headers.get('content-type'), 'text/javascript; charset=utf-8');
  assert.equal(script.headers.get('x-typescript-types'), '/switchboard/client.d.ts');
  assert.equal(script.headers.get('x-content-type-options'), 'nosniff');
  const js = await script.text();
  assert.equal(js, readFileSync(path.join(dist, 'switchboard-client.js'), 'utf8'));
  // Nothing for the browser to resolve: no static or dynamic import left.
  assert.doesNotMatch(js, /\bimport\s*(?:[\w*{][^;]*?\bfrom\s*)?["']/);
  assert.doesNotMatch(js, /\bimport\(/);
  for (const name of ['Client', 'connect', 'Subscription', 'jsonCodec', 'RpcError']) {
    assert.match(js, new RegExp(`export\\s*\\{[^}]*\\bas ${name}\\b`), `exports ${name}`);
  }

  const types = await fetch(`${base}/switchboard/client.d.ts`);
  assert.equal(types.status, 200);
  assert.equal(types.headers.get('content-type'), 'application/typescript; charset=utf-8');
  const declarations = await types.text();
  const code = declarations.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
  assert.doesNotMatch(code, /^\s*import\s|\sfrom\s+['"]|\bimport\(/m, 'switchboard-rpc is inlined, nothing is imported');
  assert.match(declarations, /export declare class Subscription</);
});

test('the declarations type-check an application that imports the module by its path', async (t) => {
  const { server, base } = await serve((app) => app.clientBundle('/js/sb.js', { headers: { 'Cache-Control': 'public, max-age=60' } }));
  t.after(() => server.close());
  const script = await fetch(`${base}/js/sb.js`);
  assert.equal(script.headers.get('cache-control'), 'public, max-age=60');
  assert.equal(script.headers.get('x-typescript-types'), '/js/sb.d.ts');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sb-bundle-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(path.join(dir, 'sb.js'), await script.text());
  writeFileSync(path.join(dir, 'sb.d.ts'), await (await fetch(`${base}/js/sb.d.ts`)).text());
  writeFileSync(
    path.join(dir, 'page.ts'),
    `import { connect, defineAction, type Publication, RpcError } from './sb.js';
const client = await connect('wss://example.com/rpc');
const prices = client.subscribe(defineAction<{ price: number }>('prices'));
for await (const publication of prices) {
  const price: number = publication.value.price;
  void price;
}
client.subscribe<string>('news', (item: string, publication: Publication<string>) => void (item + publication.channel));
prices.on('gap', ({ missedFrom, missedUntil }) => void (missedUntil - missedFrom));
const error: RpcError = new RpcError('ERR_X', 'x');
void error;
for await (const { value } of prices) {
  // @ts-expect-error: the value is typed by the template
  const wrong: string = value;
  void wrong;
}
export {};
`,
  );
  writeFileSync(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { target: 'ES2022', module: 'ES2022', moduleResolution: 'bundler', lib: ['ES2022', 'DOM'], types: [], strict: true, noEmit: true, skipLibCheck: false },
      files: ['page.ts'],
    }),
  );
  const result = spawnSync(process.execPath, [tsc, '-p', dir], { encoding: 'utf8' });
  assert.equal(result.status, 0, result.stdout + result.stderr);
});

test('a path that is not a .js path is refused', () => {
  const server = new Server({ workers: 0 });
  for (const bad of ['switchboard/client.js', '/client.mjs', '/.js']) {
    assert.throws(() => server.clientBundle(bad), (error) => error.code === 'ERR_INVALID_OPTION', bad);
  }
});
