#!/usr/bin/env node
// The two commands of the README, and the build they share:
//   npm run demo   installs, builds, starts the chat demo
//   npm test       installs, builds, runs every test (Rust, Node, interop, conformance)
//   npm run build  installs and builds (native addon + TypeScript)
// Each step is idempotent and quick when nothing changed.
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, renameSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const cache = process.env.SB_CACHE ?? path.join(os.homedir(), '.cache', 'switchboard');
// A target directory outside the clone: fresh clones (CI) reuse compiled crates.
const targetDir = process.env.CARGO_TARGET_DIR ?? path.join(cache, 'target');
const env = { ...process.env, CARGO_TARGET_DIR: targetDir };

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit', env, ...options });
  if (result.error) throw result.error;
  return result.status ?? 1;
}

function must(command, args, options) {
  const status = run(command, args, options);
  if (status !== 0) {
    console.error(`\n${command} ${args.join(' ')} failed with exit code ${status}`);
    process.exit(status);
  }
}

function step(title) {
  console.log(`\n\u001b[1m== ${title}\u001b[0m`);
}

function ensureDependencies() {
  // npm writes node_modules/.package-lock.json on every install: it is older
  // than package-lock.json (or package.json) exactly when they changed since.
  const marker = path.join(root, 'node_modules', '.package-lock.json');
  const newer = (file) => existsSync(file) && statSync(file).mtimeMs > statSync(marker).mtimeMs;
  const stale = !existsSync(marker) || newer(path.join(root, 'package-lock.json')) || newer(path.join(root, 'package.json'));
  if (!stale) return;
  step('npm ci');
  // `npm ci` installs exactly the committed lockfile and never rewrites it,
  // so every clone gets the same packages and a clean `git status`. (An
  // `npm install` here used to add other platforms' optional packages to the
  // lockfile and re-resolve versions.) The lockfile lists the optional
  // packages of every platform; npm fetches only this platform's.
  const status = run('npm', ['ci', '--no-audit', '--no-fund']);
  if (status !== 0) {
    console.error(
      '\nnpm ci failed. If package.json changed, run `npm install` and commit the package-lock.json it writes.',
    );
    process.exit(status);
  }
}

/** The host's target triple: the napi CLI builds with `--target`, and cargo test does too so both share compiled crates. */
function hostTriple() {
  const result = spawnSync('rustc', ['-vV'], { encoding: 'utf8' });
  const host = /^host: (\S+)$/m.exec(result.stdout ?? '');
  if (!host) throw new Error('cannot read the host triple from `rustc -vV`');
  return host[1];
}

function buildNative() {
  step('native addon (napi build --release)');
  // Build into a scratch directory, then rename into place: a process that
  // has the old addon loaded keeps its (unlinked) file, where overwriting it
  // in place would corrupt that process.
  const scratch = path.join(targetDir, 'napi-out');
  mkdirSync(scratch, { recursive: true });
  must('npx', [
    '--no-install', 'napi', 'build', '--release', '--platform',
    '--target', hostTriple(),
    '--manifest-path', 'crates/node/Cargo.toml',
    '--package-json-path', 'crates/node/package.json',
    '--output-dir', scratch,
    '--no-js', '--dts', 'index.d.ts',
  ]);
  const outDir = path.join(root, 'packages', 'server', 'native');
  mkdirSync(outDir, { recursive: true });
  for (const name of readdirSync(scratch).filter((n) => n.endsWith('.node'))) {
    const target = path.join(outDir, name);
    copyFileSync(path.join(scratch, name), `${target}.tmp`);
    renameSync(`${target}.tmp`, target);
  }
  // The generated declarations are committed; a test checks they match.
  copyFileSync(path.join(scratch, 'index.d.ts'), path.join(root, 'crates', 'node', 'index.d.ts'));
}

function buildTypeScript() {
  step('TypeScript');
  // The protocol package first: the server may import it.
  must('npx', ['--no-install', 'tsc', '-p', 'packages/rpc/tsconfig.json']);
  must('npx', ['--no-install', 'tsc', '-b', 'packages/client']);
  // The browser client as one ES module, which `app.clientBundle()` serves.
  must('node', ['scripts/bundle-client.mjs']);
  must('npx', ['--no-install', 'tsc', '-p', 'packages/server/tsconfig.json']);
  must('node', ['scripts/write-cjs-entry.mjs']);
}

function build() {
  ensureDependencies();
  buildNative();
  buildTypeScript();
}

function testFiles(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...testFiles(full));
    else if (entry.name.endsWith('.test.mjs')) out.push(full);
  }
  return out.sort();
}

/** Run a test command, streaming its output while keeping a copy to count results. */
async function runCaptured(title, command, args, parse) {
  step(title);
  const child = spawn(command, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  child.stdout.on('data', (chunk) => {
    process.stdout.write(chunk);
    text += chunk;
  });
  child.stderr.on('data', (chunk) => {
    process.stderr.write(chunk);
    text += chunk;
  });
  const status = await new Promise((resolve) => child.on('close', (code) => resolve(code ?? 1)));
  const counts = parse(text);
  if (status !== 0 && counts.failed === 0) counts.failed = 1;
  return counts;
}

function cargoCounts(text) {
  let passed = 0;
  let failed = 0;
  for (const m of text.matchAll(/test result: \w+\. (\d+) passed; (\d+) failed/g)) {
    passed += Number(m[1]);
    failed += Number(m[2]);
  }
  return { passed, failed };
}

function nodeCounts(text) {
  const pass = [...text.matchAll(/^ℹ pass (\d+)$/gm)].at(-1);
  const fail = [...text.matchAll(/^ℹ fail (\d+)$/gm)].at(-1);
  const cancelled = [...text.matchAll(/^ℹ cancelled (\d+)$/gm)].at(-1);
  return { passed: Number(pass?.[1] ?? 0), failed: Number(fail?.[1] ?? 0) + Number(cancelled?.[1] ?? 0) };
}

/** Format and lint gates: a failure stops the run before the tests. */
function lint() {
  step('cargo fmt --check');
  must('cargo', ['fmt', '--all', '--check']);
  step('cargo clippy -D warnings');
  must('cargo', ['clippy', '--workspace', '--all-targets', '--locked', '--target', hostTriple(), '--', '-D', 'warnings']);
}

async function test() {
  build();
  lint();
  const totals = { passed: 0, failed: 0 };
  const add = (c) => {
    totals.passed += c.passed;
    totals.failed += c.failed;
  };
  add(
    await runCaptured(
      'Rust tests (cargo test --workspace)',
      'cargo',
      ['test', '--workspace', '--release', '--locked', '--target', hostTriple()],
      cargoCounts,
    ),
  );
  step('Python environment for interop and conformance');
  must('bash', ['scripts/setup-python.sh']);
  const files = testFiles(path.join(root, 'tests')).map((f) => path.relative(root, f));
  add(
    await runCaptured(
      'Node tests (node --test)',
      'node',
      ['--test', '--test-concurrency=1', '--test-reporter=spec', ...files],
      nodeCounts,
    ),
  );
  console.log(`\ntests: ${totals.passed} passed, ${totals.failed} failed`);
  process.exit(totals.failed === 0 && totals.passed > 0 ? 0 : 1);
}

const command = process.argv[2];
switch (command) {
  case 'build':
    build();
    break;
  case 'test':
    await test();
    break;
  case 'demo': {
    build();
    step('demo');
    process.exit(run('node', ['examples/chat/server.mjs']));
    break;
  }
  default:
    console.error('usage: node scripts/run.mjs build|test|demo');
    process.exit(2);
}
