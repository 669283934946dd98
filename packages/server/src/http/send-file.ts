/**
 * What `res.file`, `res.download` and `res.attachment` need besides the
 * response itself: their options, checked at the call (a wrong option is
 * a programming error and throws at once), the order the native side
 * receives, and the `Content-Disposition` value of RFC 6266.
 *
 * The file is never read here: the connection's I/O thread opens and
 * sends it (`crates/runtime/src/session/http/serve.rs`), deciding 304,
 * 206 and 416 as it does for `app.static`.
 */
import path from 'node:path';
import { SwitchboardError } from '../errors.js';
import {
  FILE_DOTFILES,
  FILE_GET,
  FILE_IMMUTABLE,
  FILE_NO_ETAG,
  FILE_NO_LAST_MODIFIED,
  FILE_NO_PRECOMPRESSED,
} from './flags.js';
import type { HttpError } from './http-error.js';

/** `res.file(path, options)` and `res.download(path, filename, options)`. */
export interface FileOptions {
  /**
   * The directory `path` is relative to. The path must then stay inside
   * it, its real path included: `..`, `.`, empty names, backslashes, NUL
   * and (unless `dotfiles: 'allow'`) names starting with `.` are refused,
   * and a symbolic link out of the root is not followed. Without `root`,
   * `path` must be absolute (the same names are refused in it).
   */
  root?: string;
  /** `Cache-Control: public, max-age=<maxAge>` in seconds; 0 (the default) sends `no-cache`. Ignored when the handler set `Cache-Control`. */
  maxAge?: number;
  /** Adds `immutable` to a non-zero `maxAge`. Default false. */
  immutable?: boolean;
  /** Send `Last-Modified` and honour `If-Modified-Since` / `If-Unmodified-Since`. Default true. */
  lastModified?: boolean;
  /** Send a strong `ETag` and honour `If-None-Match` / `If-Match` / `If-Range`. Default true. */
  etag?: boolean;
  /** `'ignore'` (default): a name starting with `.` is not found; `'allow'`: served. */
  dotfiles?: 'ignore' | 'allow';
  /** Serve `<file>.br` / `<file>.gz` to clients that accept the coding. Default true. */
  precompressed?: boolean;
}

/**
 * Called once the file was sent (no argument), or with the error when it
 * was not (404 `ERR_HTTP_NOT_FOUND`, 400 `ERR_HTTP_BAD_REQUEST`; 499
 * `ERR_HTTP_CLIENT_GONE` when the client left first). On an error the
 * response is still the handler's to send: answer it, or pass the error
 * on with `next(error)`.
 */
export type FileCallback = (error?: HttpError) => void;

/**
 * The payload the `onSend` hooks see for a file: the file is sent by the
 * core, so there are no bytes to show. A hook may set headers, or return
 * a string or bytes to send instead of the file.
 */
export class FilePayload {
  constructor(
    /** The path as the handler gave it. */
    readonly path: string,
  ) {}
}

/** What crosses to the native side with `httpFile`. */
export interface FileOrder {
  readonly path: string;
  readonly root: string | undefined;
  /** `FILE_*` bits of the options; the request's are added at the call. */
  flags: number;
  readonly maxAge: number;
  /** The request's header lines as received. */
  requestHeaders: Buffer;
}

const OPTION_NAMES = new Set(['root', 'maxAge', 'immutable', 'lastModified', 'etag', 'dotfiles', 'precompressed']);

function invalid(message: string): SwitchboardError {
  return new SwitchboardError('ERR_INVALID_OPTION', message);
}

/** Check `path` and `options`; throws `ERR_INVALID_OPTION`. */
export function fileOrder(filePath: unknown, options: FileOptions | undefined, method: string): FileOrder {
  if (typeof filePath !== 'string' || filePath === '') throw invalid('res.file(path): path must be a non-empty string');
  const given = options ?? {};
  if (given === null || typeof given !== 'object') throw invalid('res.file(path, options): options must be an object');
  for (const name of Object.keys(given)) {
    if (!OPTION_NAMES.has(name)) throw invalid(`res.file: unknown option ${JSON.stringify(name)}`);
  }
  const { root, maxAge = 0, immutable = false, lastModified = true, etag = true, dotfiles = 'ignore', precompressed = true } = given;
  if (root !== undefined && (typeof root !== 'string' || !path.isAbsolute(root))) throw invalid('res.file: root must be an absolute path');
  if (root === undefined && !path.isAbsolute(filePath)) throw invalid('res.file: path must be absolute, or relative to the root option');
  if (!Number.isInteger(maxAge) || maxAge < 0 || maxAge > 0xffffffff) throw invalid('res.file: maxAge must be a whole number of seconds');
  for (const [name, value] of [
    ['immutable', immutable],
    ['lastModified', lastModified],
    ['etag', etag],
    ['precompressed', precompressed],
  ] as const) {
    if (typeof value !== 'boolean') throw invalid(`res.file: ${name} must be a boolean`);
  }
  if (dotfiles !== 'ignore' && dotfiles !== 'allow') throw invalid("res.file: dotfiles must be 'ignore' or 'allow'");
  let flags = method === 'GET' ? FILE_GET : 0;
  if (immutable) flags |= FILE_IMMUTABLE;
  if (!etag) flags |= FILE_NO_ETAG;
  if (!lastModified) flags |= FILE_NO_LAST_MODIFIED;
  if (dotfiles === 'allow') flags |= FILE_DOTFILES;
  if (!precompressed) flags |= FILE_NO_PRECOMPRESSED;
  return { path: filePath, root, flags, maxAge, requestHeaders: EMPTY };
}

const EMPTY = Buffer.alloc(0);

/** RFC 5987 attr-char: what `filename*` may carry unescaped. */
const ATTR_CHAR = /[^A-Za-z0-9!#$&+\-.^_`|~]/g;
/** What a quoted `filename` fallback keeps: printable ASCII but `"` and `\`. */
const NOT_QUOTABLE = /[^\x20-\x21\x23-\x5b\x5d-\x7e]/g;

/**
 * `attachment; filename="…"` (RFC 6266), with `filename*=UTF-8''…` (RFC
 * 5987) when the name is not plain ASCII: the quoted name is then an ASCII
 * fallback (`?` for what it cannot carry) for the rare client that reads
 * only it. Only the name's last path segment is used.
 */
export function contentDisposition(filename: string | undefined, type: 'attachment' | 'inline' = 'attachment'): string {
  if (filename === undefined) return type;
  const name = path.basename(filename);
  const fallback = name.replace(NOT_QUOTABLE, '?');
  if (fallback === name) return `${type}; filename="${name}"`;
  const encoded = Buffer.from(name, 'utf8')
    .toString('latin1')
    .replace(ATTR_CHAR, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
  return `${type}; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}

/**
 * The names a path may hold (`http/files.rs`'s `safe_relative`, for
 * `inject()`): `null` when refused, `'malformed'` for a NUL.
 */
export function checkNames(names: string, dotfiles: boolean): boolean | 'malformed' {
  if (names.includes('\0')) return 'malformed';
  if (names.includes('\\')) return false;
  const trimmed = names.endsWith('/') ? names.slice(0, -1) : names;
  if (trimmed === '') return true;
  for (const name of trimmed.split('/')) {
    if (name === '' || name === '.' || name === '..' || (!dotfiles && name.startsWith('.'))) return false;
  }
  return true;
}
