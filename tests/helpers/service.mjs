// Real programs the tests run beside Switchboard (redis-server,
// nats-server, Chromium): installed by the project's own setup scripts,
// started on free ports of 127.0.0.1, waited for until they answer, and
// killed.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Runs `scripts/<script>` (each is a no-op once its program is there). */
export function runSetup(script) {
  const setup = spawnSync('bash', [path.join(root, 'scripts', script)], {
    cwd: root,
    encoding: 'utf8',
    timeout: 10 * 60_000,
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  assert.equal(setup.status, 0, `scripts/${script} failed:\n${setup.stdout}\n${setup.stderr}${setup.error ?? ''}`);
}

/** A port nobody listens on right now. */
export async function freePort() {
  const probe = net.createServer();
  await new Promise((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/**
 * Spawn `command` and wait (10 s at most) until `answers()` resolves true;
 * the child (killed if it never answers). `name` and `port` say who did
 * not answer.
 */
export async function spawnAnswering(command, args, { name, port, answers }) {
  const child = spawn(command, args, { stdio: 'ignore' });
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      if (await answers()) return child;
    } catch {}
    if (Date.now() >= deadline) {
      // Not left running behind a failed test.
      await kill(child);
      assert.fail(`${name} did not answer on port ${port}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Kill `child` (SIGKILL: a crash, not a goodbye) and wait for the exit. */
export async function kill(child) {
  if (!child || child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  child.kill('SIGCONT'); // a paused one dies only once it runs
  await exited;
}
