// Headless Chromium for the browser tests: installed by the project's own
// setup script (Debian's `chromium`, once per test process) and launched
// with the flags DESIGN.md gives for this machine.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
let installed = false;

/** Runs scripts/setup-browser.sh (a no-op once Chromium is there). */
export function ensureChromium() {
  if (installed) return;
  const setup = spawnSync('bash', [path.join(root, 'scripts', 'setup-browser.sh')], {
    cwd: root,
    encoding: 'utf8',
    timeout: 10 * 60_000,
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  assert.equal(setup.status, 0, `scripts/setup-browser.sh failed:\n${setup.stdout}\n${setup.stderr}${setup.error ?? ''}`);
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing after setup`);
  installed = true;
}

/** Installs if needed, then launches headless Chromium. */
export async function launchChromium() {
  ensureChromium();
  return chromium.launch({
    executablePath: CHROMIUM,
    timeout: 30_000,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}
