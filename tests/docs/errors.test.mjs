// docs/errors.md and the code agree: the file is exactly what the catalogues
// generate, and every ERR_ code used in the sources is in a catalogue.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { errorCatalog } from '../../scripts/error-catalog.mjs';
import { render } from '../../scripts/errors-doc.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

function sources(dir, extensions) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!['fuzz', 'target', 'node_modules', 'dist', 'tests'].includes(entry.name)) out.push(...sources(full, extensions));
    } else if (extensions.some((e) => entry.name.endsWith(e))) {
      out.push(full);
    }
  }
  return out;
}

test('docs/errors.md is generated from the catalogues', async () => {
  const expected = render(await errorCatalog());
  const actual = readFileSync(path.join(root, 'docs', 'errors.md'), 'utf8');
  assert.equal(actual, expected, 'docs/errors.md is stale: run `node scripts/errors-doc.mjs`');
});

test('every ERR_ code in the sources is catalogued', async () => {
  const known = new Set((await errorCatalog()).map((e) => e.code));
  const files = [
    ...sources(path.join(root, 'crates'), ['.rs']),
    ...['server', 'protocol', 'client']
      .map((name) => path.join(root, 'packages', name, 'src'))
      .filter((dir) => existsSync(dir))
      .flatMap((dir) => sources(dir, ['.ts'])),
  ];
  const missing = new Map();
  for (const file of files) {
    // Test modules assert on code prefixes and made-up codes; skip them.
    const text = readFileSync(file, 'utf8').split(/#\[cfg\(test\)\]/)[0];
    for (const [code] of text.matchAll(/\bERR_[A-Z0-9_]*[A-Z0-9]\b/g)) {
      if (code === 'ERR_INTERNAL') continue;
      if (!known.has(code)) missing.set(code, path.relative(root, file));
    }
  }
  assert.deepEqual([...missing.entries()], [], 'codes used in the sources but missing from every catalogue');
});

test('every catalogued code has a close code, an HTTP status or is thrown', async () => {
  for (const e of await errorCatalog()) {
    if (e.kind === 'close') assert.ok(e.value >= 1000 && e.value < 5000, e.code);
    else if (e.kind === 'http') assert.ok(e.value >= 400 && e.value < 600, e.code);
    else assert.equal(e.kind, 'throw', e.code);
    assert.ok(e.description.length > 10, `${e.code} needs a description`);
  }
});
