/**
 * `app.static(prefix, options)`: a directory whose files the native core
 * serves on its I/O threads, never through JavaScript (docs/http.md,
 * "Static files"). Here the options are checked and the directory resolved
 * once, at registration; the serving is `crates/runtime/src/session/http/files.rs`.
 */
import { realpathSync, statSync } from 'node:fs';
import type { NativeStaticDir } from '../native.js';
import { SwitchboardError } from '../errors.js';
import { checkedHeaders, FILE_HEADERS } from '../options.js';

/** Options of `app.static(prefix, options)`. */
export interface StaticOptions {
  /** The directory to serve. It must exist; it is resolved to its real path when registered. */
  root: string;
  /** The file served for a directory (`/static/docs/`); `false` (or `''`): a directory is not found. Default `'index.html'`. */
  index?: string | false;
  /** `Cache-Control: public, max-age=<maxAge>`, in seconds; 0 sends `no-cache` (revalidate every time). Default 0. */
  maxAge?: number;
  /** Add `immutable` to a non-zero `maxAge`, for fingerprinted file names. Default false. */
  immutable?: boolean;
  /** Serve `<file>.br` / `<file>.gz` to clients that accept the coding, when it exists and is not older than the file. Default true. */
  precompressed?: boolean;
  /** `'ignore'`: a name starting with `.` is not found (404); `'allow'`: served. Default `'ignore'`. */
  dotfiles?: 'ignore' | 'allow';
  /** A missing file goes on to the other routes for its path instead of a 404. Default false. */
  fallthrough?: boolean;
  /**
   * Extra headers on every answer about a file (200, 206, 304), such as
   * `Content-Security-Policy`. Not the ones the file server writes itself
   * (`Cache-Control`, `ETag`, `Last-Modified`, `Content-Type`, ...). Default none.
   */
  headers?: Readonly<Record<string, string>>;
}

const KNOWN = new Set(['root', 'index', 'maxAge', 'immutable', 'precompressed', 'dotfiles', 'fallthrough', 'headers']);
/** A static path segment the route table takes: no parameter, wildcard, query, fragment, space or control character. */
const SEGMENT = /^[^/:*?#\s\x00-\x1f\x7f]+$/;

function fail(prefix: string, message: string): never {
  throw new SwitchboardError('ERR_INVALID_OPTION', `app.static(${JSON.stringify(prefix)}): ${message}`);
}

/** The prefix without its trailing slash (`/` stays `/`). */
function normalPrefix(prefix: unknown): string {
  if (typeof prefix !== 'string' || !prefix.startsWith('/')) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `app.static: the prefix must start with "/", got ${JSON.stringify(prefix)}`);
  }
  const trimmed = prefix.length > 1 && prefix.endsWith('/') ? prefix.slice(0, -1) : prefix;
  if (trimmed !== '/' && !trimmed.slice(1).split('/').every((segment) => SEGMENT.test(segment))) {
    fail(prefix, 'the prefix must be plain path segments (no parameters, wildcards, empty segments or spaces)');
  }
  return trimmed;
}

/** The directory as the native layer takes it, checked; the root resolved to its real path. */
export function nativeStaticDir(prefix: string, options: StaticOptions): NativeStaticDir {
  const normal = normalPrefix(prefix);
  if (options === null || typeof options !== 'object') fail(prefix, 'options must be an object with a root');
  for (const key of Object.keys(options)) {
    if (!KNOWN.has(key)) fail(prefix, `unknown option ${JSON.stringify(key)}`);
  }
  if (typeof options.root !== 'string' || options.root === '') fail(prefix, 'root must be a directory path');
  let root: string;
  try {
    root = realpathSync(options.root);
  } catch {
    fail(prefix, `root ${JSON.stringify(options.root)} does not exist`);
  }
  if (!statSync(root).isDirectory()) fail(prefix, `root ${JSON.stringify(options.root)} is not a directory`);
  const dir: NativeStaticDir = { prefix: normal, root };
  const { index, maxAge, immutable, precompressed, dotfiles, fallthrough, headers } = options;
  if (index !== undefined) {
    if (index === false || index === '') dir.index = '';
    else if (typeof index !== 'string' || /[/\\\0]/.test(index) || index === '.' || index === '..') {
      fail(prefix, `index must be a file name or false, got ${JSON.stringify(index)}`);
    } else dir.index = index;
  }
  if (maxAge !== undefined) {
    if (!Number.isInteger(maxAge) || maxAge < 0 || maxAge > 0xffff_ffff) {
      fail(prefix, `maxAge must be a whole number of seconds >= 0, got ${String(maxAge)}`);
    }
    dir.maxAge = maxAge;
  }
  for (const [name, value] of [
    ['immutable', immutable],
    ['precompressed', precompressed],
    ['fallthrough', fallthrough],
  ] as const) {
    if (value !== undefined && typeof value !== 'boolean') fail(prefix, `${name} must be a boolean`);
    if (value !== undefined) dir[name] = value;
  }
  if (dotfiles !== undefined) {
    if (dotfiles !== 'ignore' && dotfiles !== 'allow') fail(prefix, `dotfiles must be 'ignore' or 'allow', got ${JSON.stringify(dotfiles)}`);
    dir.dotfiles = dotfiles;
  }
  if (headers !== undefined) dir.headers = checkedHeaders(`app.static(${JSON.stringify(prefix)})`, headers, FILE_HEADERS);
  return dir;
}
