/**
 * `app.static(prefix, options)`: a directory whose files the native core
 * serves on its I/O threads, never through JavaScript (docs/http.md,
 * "Static files"). Here the options are checked and the directory resolved
 * once, at registration; the serving is `crates/runtime/src/session/http/files.rs`.
 */
import { realpathSync, statSync } from 'node:fs';
import type { NativeStaticCache, NativeStaticDir } from '../native.js';
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
  /**
   * Files kept in memory and answered from it, no system call but the
   * write; `false`: every request opens and reads its file. Default on
   * with the defaults of {@link StaticCacheOptions}.
   */
  cache?: false | StaticCacheOptions;
}

/** What a static directory keeps in memory (docs/http.md, "Static files"). */
export interface StaticCacheOptions {
  /** Files up to this size are kept (each precompressed sibling too); larger ones stream from the disk. Default 1 MiB. */
  maxFileBytes?: number;
  /** All the directory's kept bytes together; past it files are served from the disk. Default 64 MiB. */
  maxBytes?: number;
  /** A kept file is checked against the disk when last checked longer ago than this, in ms (0: on every request). Default 1000. */
  revalidate?: number;
}

const KNOWN = new Set(['root', 'index', 'maxAge', 'immutable', 'precompressed', 'dotfiles', 'fallthrough', 'headers', 'cache']);
const CACHE_KNOWN = new Set(['maxFileBytes', 'maxBytes', 'revalidate']);
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
  const { index, maxAge, immutable, precompressed, dotfiles, fallthrough, headers, cache } = options;
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
  if (cache !== undefined) dir.cache = nativeCache(prefix, cache);
  return dir;
}

function nativeCache(prefix: string, cache: false | StaticCacheOptions): NativeStaticCache {
  if (cache === false) return { enabled: false };
  if (cache === null || typeof cache !== 'object') fail(prefix, 'cache must be false or an object');
  for (const key of Object.keys(cache)) {
    if (!CACHE_KNOWN.has(key)) fail(prefix, `unknown cache option ${JSON.stringify(key)}`);
  }
  const out: NativeStaticCache = { enabled: true };
  const whole = (name: string, value: number | undefined, max: number) => {
    if (value !== undefined && (!Number.isInteger(value) || value < 0 || value > max)) {
      fail(prefix, `cache.${name} must be a whole number in 0..${max}, got ${String(value)}`);
    }
    return value;
  };
  const maxFileBytes = whole('maxFileBytes', cache.maxFileBytes, Number.MAX_SAFE_INTEGER);
  if (maxFileBytes !== undefined) out.maxFileBytes = maxFileBytes;
  const maxBytes = whole('maxBytes', cache.maxBytes, Number.MAX_SAFE_INTEGER);
  if (maxBytes !== undefined) out.maxBytes = maxBytes;
  const revalidate = whole('revalidate', cache.revalidate, 0xffff_ffff);
  if (revalidate !== undefined) out.revalidateMs = revalidate;
  return out;
}
