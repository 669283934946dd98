// The generated declarations of the addon are committed and current, and
// the TypeScript layer's view of the addon matches them.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

test('crates/node/index.d.ts matches what the build generated', () => {
  // The build (scripts/run.mjs) rewrites the file from the Rust sources; a
  // difference from the committed version means someone changed the
  // binding without committing the regenerated declarations.
  const result = spawnSync('git', ['diff', '--exit-code', '--', 'crates/node/index.d.ts'], { cwd: root, encoding: 'utf8' });
  assert.equal(result.status, 0, `generated declarations drifted:\n${result.stdout}`);
});

test('src/native.ts agrees with the generated declarations', () => {
  const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', 'packages/server/tsconfig.check.json'], { cwd: root, encoding: 'utf8' });
  assert.equal(result.status, 0, result.stdout + result.stderr);
});
