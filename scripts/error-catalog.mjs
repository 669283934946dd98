// All error codes: the native catalogue plus the TypeScript one, sorted.
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export async function errorCatalog() {
  const addon = createRequire(import.meta.url)(
    path.join(root, 'packages', 'server', 'native', `switchboard.${process.platform}-${process.arch}.node`),
  );
  const { ERROR_CODES } = await import('switchboard');
  const byCode = new Map();
  for (const e of addon.errorCatalog()) byCode.set(e.code, e);
  for (const [code, e] of Object.entries(ERROR_CODES)) byCode.set(code, { code, ...e });
  return [...byCode.values()].sort((a, b) => a.code.localeCompare(b.code));
}
