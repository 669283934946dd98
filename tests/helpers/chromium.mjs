// Headless Chromium for the browser tests: installed by the project's own
// setup script (Debian's `chromium`, once per test process) and launched
// with the flags DESIGN.md gives for this machine.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { runSetup } from './service.mjs';

export const CHROMIUM = '/usr/bin/chromium';
let installed = false;

/** Runs scripts/setup-browser.sh (a no-op once Chromium is there). */
export function ensureChromium() {
  if (installed) return;
  runSetup('setup-browser.sh');
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
