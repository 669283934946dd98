// The client's public types, compiled as a browser application sees them
// (DOM lib, no Node types): packages/client/type-checks/usage.check.ts.
// Also: the browser entry point's build never sees Node's types, and no
// `any` appears in the published declarations.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');

test('the public API type-checks in a browser context', () => {
  const result = spawnSync(process.execPath, [tsc, '-p', 'packages/client/tsconfig.check.json'], { cwd: root, encoding: 'utf8' });
  assert.equal(result.status, 0, result.stdout + result.stderr);
});

test('the declarations contain no `any`', () => {
  const dist = path.join(root, 'packages', 'client', 'dist');
  const files = readdirSync(dist, { recursive: true }).filter((f) => String(f).endsWith('.d.ts'));
  assert.ok(files.length > 5);
  for (const file of files) {
    // Comments mention "any" in English; code may not use the type.
    const code = readFileSync(path.join(dist, String(file)), 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
    assert.doesNotMatch(code, /\bany\b/, `${file} uses any`);
  }
});

test('the browser entry point does not import node: modules', () => {
  const dist = path.join(root, 'packages', 'client', 'dist');
  const nodeOnly = new Set(['node.js', path.join('transports', 'node.js'), path.join('node', 'files.js')]);
  for (const file of readdirSync(dist, { recursive: true }).map(String)) {
    if (!file.endsWith('.js') || nodeOnly.has(file)) continue;
    assert.doesNotMatch(readFileSync(path.join(dist, file), 'utf8'), /from ['"]node:/, file);
  }
});
