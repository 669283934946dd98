// Start an example as its README says (plain `node`), and wait until its
// output shows it is serving: the examples print their address or a
// `LISTENING <port>` line once they accept connections.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** How long an example may take to start. */
const START_TIMEOUT_MS = 20_000;

/**
 * Run `script` (a path from the repository root) with `env` added to this
 * process's environment (or instead of it, with `inheritEnv: false`), until
 * its stdout and stderr together match `ready`. Resolves with the child,
 * the match, and `output()`: everything it printed so far.
 */
export async function startExample(script, { env = {}, inheritEnv = true, ready }) {
  const child = spawn(process.execPath, [script], {
    cwd: root,
    env: inheritEnv ? { ...process.env, ...env } : env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk) => (output += chunk));
  const log = () => `\n--- ${script} output ---\n${output.trim()}\n---------------------`;
  const deadline = Date.now() + START_TIMEOUT_MS;
  let match;
  while (!(match = ready.exec(output))) {
    if (child.exitCode !== null) throw new Error(`${script} exited with ${child.exitCode}${log()}`);
    if (Date.now() > deadline) throw new Error(`${script} did not start in ${START_TIMEOUT_MS / 1000} s${log()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return { child, match, output: () => output, log };
}
