// A real redis-server for the scale-out tests: installed by the project's
// own setup script (Debian's package, once per test process), started on a
// free port of 127.0.0.1 in a temporary directory with persistence off,
// stopped (and restartable on the same port) by the test.
import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const run = promisify(execFile);
let installed = false;

/** Runs scripts/setup-redis.sh (a no-op once redis-server is there). */
export function ensureRedis() {
  if (installed) return;
  const setup = spawnSync('bash', [path.join(root, 'scripts', 'setup-redis.sh')], {
    cwd: root,
    encoding: 'utf8',
    timeout: 10 * 60_000,
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  assert.equal(setup.status, 0, `scripts/setup-redis.sh failed:\n${setup.stdout}\n${setup.stderr}${setup.error ?? ''}`);
  installed = true;
}

/** A port nobody listens on right now. */
async function freePort() {
  const probe = net.createServer();
  await new Promise((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

export class RedisServer {
  constructor(port, dir) {
    this.port = port;
    this.dir = dir;
    this.url = `redis://127.0.0.1:${port}`;
    this.process = null;
  }

  /** Start (or start again, on the same port) and wait until it answers. */
  async start() {
    this.process = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir, '--loglevel', 'warning'],
      { stdio: 'ignore' },
    );
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        if ((await this.cli('PING')) === 'PONG') return;
      } catch {}
      assert.ok(Date.now() < deadline, `redis-server did not answer on port ${this.port}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Stop it (SIGKILL: a crash, not a goodbye) and wait for the exit. */
  async stop() {
    const child = this.process;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    child.kill('SIGCONT'); // a paused one dies only once it runs
    await exited;
    this.process = null;
  }

  /** Freeze it (SIGSTOP): connections stay open and nothing is answered. */
  pause() {
    this.process.kill('SIGSTOP');
  }

  resume() {
    this.process.kill('SIGCONT');
  }

  /** One command through redis-cli; the reply as text, trimmed. */
  async cli(...args) {
    const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(this.port), ...args], { timeout: 5000 });
    return stdout.trim();
  }

  /** How many subscribers (nodes) Redis has for each of `channels`. */
  async numsub(...channels) {
    const lines = (await this.cli('PUBSUB', 'NUMSUB', ...channels)).split('\n');
    const out = {};
    for (let i = 0; i + 1 < lines.length; i += 2) out[lines[i]] = Number(lines[i + 1]);
    return out;
  }

  /** The channels subscribed in Redis that match `pattern`, sorted. */
  async channels(pattern) {
    const text = await this.cli('PUBSUB', 'CHANNELS', pattern);
    return text === '' ? [] : text.split('\n').sort();
  }
}

/** Install if needed, start a Redis on a free port; `t.after` stops it. */
export async function startRedis(t) {
  ensureRedis();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'switchboard-redis-'));
  const redis = new RedisServer(await freePort(), dir);
  await redis.start();
  t.after(async () => {
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return redis;
}
