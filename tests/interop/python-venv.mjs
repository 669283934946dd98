// The Python virtualenv (kosoku, websockets) the conformance and interop
// tests drive, made or reused by scripts/setup-python.sh.

import path from 'node:path';
import { repoRoot, runProcess, describeExit } from './start-server.mjs';

// A cold install downloads two wheels; a warm check takes well under a second.
const SETUP_TIMEOUT_MS = 10 * 60_000;

let pending;

/**
 * Runs scripts/setup-python.sh once per process and returns the venv's
 * python and bin directory. Throws with the script's output if it fails.
 *
 * @returns {Promise<{python: string, bin: string}>}
 */
export function ensureVenv() {
  pending ??= setup();
  return pending;
}

async function setup() {
  const script = path.join(repoRoot, 'scripts', 'setup-python.sh');
  const result = await runProcess('bash', [script], { timeoutMs: SETUP_TIMEOUT_MS });
  if (result.timedOut || result.code !== 0) {
    const why = result.timedOut ? `timed out after ${SETUP_TIMEOUT_MS} ms` : describeExit(result);
    throw new Error(`scripts/setup-python.sh failed (${why}):\n${result.output}`);
  }
  const python = result.stdout.trim().split('\n').pop();
  return { python, bin: path.dirname(python) };
}
