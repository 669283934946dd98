// A real redis-server for the scale-out tests: installed by the project's
// own setup script (Debian's package, once per test process), started on a
// free port of 127.0.0.1 in a temporary directory with persistence off,
// stopped (and restartable on the same port) by the test.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort, kill, runSetup, spawnAnswering } from './service.mjs';

const run = promisify(execFile);
let installed = false;

/** Runs scripts/setup-redis.sh (a no-op once redis-server is there). */
export function ensureRedis() {
  if (installed) return;
  runSetup('setup-redis.sh');
  installed = true;
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
    this.process = await spawnAnswering(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir, '--loglevel', 'warning'],
      { name: 'redis-server', port: this.port, answers: async () => (await this.cli('PING')) === 'PONG' },
    );
  }

  /** Stop it (SIGKILL: a crash, not a goodbye) and wait for the exit. */
  async stop() {
    await kill(this.process);
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
