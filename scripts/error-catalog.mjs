// All error codes: the native catalogue plus the TypeScript one, sorted.
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export async function errorCatalog() {
  const dir = path.join(root, 'packages', 'server', 'native');
  const file = readdirSync(dir).find((n) => n.startsWith(`switchboard.${process.platform}-${process.arch}`) && n.endsWith('.node'));
  const addon = createRequire(import.meta.url)(path.join(dir, file));
  const { ERROR_CODES } = await import('switchboard');
  const byCode = new Map();
  for (const e of addon.errorCatalog()) byCode.set(e.code, e);
  // Errors of calls and streams (switchboard-rpc), on both ends.
  const { RPC_ERROR_DESCRIPTIONS } = await import('switchboard-rpc');
  const { CLIENT_ERROR_DESCRIPTIONS } = await import('switchboard-client');
  for (const [code, description] of Object.entries({ ...RPC_ERROR_DESCRIPTIONS, ...CLIENT_ERROR_DESCRIPTIONS })) {
    if (!byCode.has(code)) byCode.set(code, { code, kind: 'throw', value: 0, description });
  }
  for (const [code, e] of Object.entries(ERROR_CODES)) byCode.set(code, { code, ...e });
  return [...byCode.values()].sort((a, b) => a.code.localeCompare(b.code));
}
