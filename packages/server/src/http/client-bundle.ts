/**
 * `app.clientBundle(path)`: the browser client (switchboard-client's core
 * with switchboard-rpc inside, one ES module built by
 * scripts/bundle-client.mjs) and its declarations, served as two fixed
 * responses: answered by the core on its I/O threads like any fixed route,
 * with no JavaScript per request. A page needs no build step:
 *
 * ```html
 * <script type="module">
 *   import { connect } from '/switchboard/client.js';
 * </script>
 * ```
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SwitchboardError } from '../errors.js';
import type { NativeStaticRoute } from '../native.js';
import { nativeStaticRoute } from '../options.js';

export interface ClientBundleOptions {
  /**
   * Extra response headers of both responses (a `Cache-Control` replaces
   * the default `no-cache`, say `public, max-age=3600` for a page that can
   * wait an hour for a new client after a deploy).
   */
  headers?: Readonly<Record<string, string>>;
}

/** The bundle's files, read once per thread: every worker registers the same routes. */
let files: { script: Buffer; declarations: Buffer } | undefined;

function bundleFiles(): { script: Buffer; declarations: Buffer } {
  if (files !== undefined) return files;
  let script: Buffer;
  let declarations: Buffer;
  try {
    // The package's own export, so an installed switchboard-client is found wherever npm put it.
    const scriptPath = fileURLToPath(import.meta.resolve('switchboard-client/browser'));
    script = readFileSync(scriptPath);
    declarations = readFileSync(scriptPath.replace(/\.js$/, '.d.ts'));
  } catch (error) {
    throw new SwitchboardError('ERR_CLIENT_BUNDLE_MISSING', 'the browser bundle of switchboard-client is not built (npm run build)', { cause: error });
  }
  files = { script, declarations };
  return files;
}

/** The fixed routes of `app.clientBundle(path, options)`: the module at `path` (`….js`), its declarations at `….d.ts`. */
export function clientBundleRoutes(path: string, options: ClientBundleOptions = {}): NativeStaticRoute[] {
  if (typeof path !== 'string' || !path.startsWith('/') || !path.endsWith('.js') || path.length < 5) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `app.clientBundle(path): a path starting with "/" and ending in ".js", got ${JSON.stringify(path)}`);
  }
  const { script, declarations } = bundleFiles();
  const typesPath = `${path.slice(0, -3)}.d.ts`;
  const headers = { 'X-Content-Type-Options': 'nosniff', ...options.headers };
  return [
    nativeStaticRoute(path, {
      body: script,
      contentType: 'text/javascript; charset=utf-8',
      // Deno's convention: tools that fetch modules by URL find the types there.
      headers: { 'X-TypeScript-Types': typesPath, ...headers },
    }),
    nativeStaticRoute(typesPath, { body: declarations, contentType: 'application/typescript; charset=utf-8', headers }),
  ];
}
