/**
 * `res.file` under `inject()`: no I/O thread to hand the file to, so it is
 * read here, with the core's rules where a test can see them (the same
 * refused paths, the root's real path, `Content-Type`, the strong `ETag`,
 * `Last-Modified`, `Cache-Control`, 304 to an `If-None-Match` that
 * matches). Not here: ranges (the whole file is sent, which RFC 9110
 * §14.2 allows) and precompressed siblings (an injected request is
 * answered as a client without `Accept-Encoding`).
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { native } from '../native.js';
import { FILE_DOTFILES, FILE_NO_ETAG, FILE_NO_LAST_MODIFIED, RESPOND_HEAD } from './flags.js';
import { checkNames, type FileOrder } from './send-file.js';

export type InjectedFile = { sent: true; status: number; lines: string; body: Buffer } | { sent: false; status: 400 | 404 };

const has = (lines: string, name: string): boolean => new RegExp(`^${name}:`, 'im').test(lines);

/** What the core would answer `order` with (see the module's comment). */
export async function injectFile(status: number, handlerLines: string, order: FileOrder): Promise<InjectedFile> {
  const dotfiles = (order.flags & FILE_DOTFILES) !== 0;
  const names = order.root === undefined ? order.path.slice(1) : order.path;
  const checked = checkNames(names, dotfiles);
  if (checked === 'malformed') return { sent: false, status: 400 };
  if (!checked) return { sent: false, status: 404 };
  let real: string;
  let stat: import('node:fs').BigIntStats;
  let body: Buffer;
  try {
    real = await fs.realpath(order.root === undefined ? order.path : path.join(order.root, order.path));
    if (order.root !== undefined) {
      const root = await fs.realpath(order.root);
      if (real !== root && !real.startsWith(root.endsWith(path.sep) ? root : root + path.sep)) return { sent: false, status: 404 };
    }
    stat = await fs.stat(real, { bigint: true });
    if (!stat.isFile()) return { sent: false, status: 404 };
    body = await fs.readFile(real);
  } catch {
    return { sent: false, status: 404 };
  }
  const etag = `"${body.length.toString(16)}-${stat.mtimeNs.toString(16)}"`;
  let lines = handlerLines;
  const ownEtag = (order.flags & FILE_NO_ETAG) === 0 && !has(lines, 'etag');
  if (ownEtag) lines += `ETag: ${etag}\r\n`;
  if ((order.flags & FILE_NO_LAST_MODIFIED) === 0 && !has(lines, 'last-modified')) {
    lines += `Last-Modified: ${new Date(Number(stat.mtimeNs / 1_000_000_000n) * 1000).toUTCString()}\r\n`;
  }
  if (!has(lines, 'cache-control')) lines += `Cache-Control: ${order.maxAge === 0 ? 'no-cache' : `public, max-age=${order.maxAge}`}\r\n`;
  const ifNoneMatch = /^if-none-match:(.*)$/im.exec(order.requestHeaders.toString('latin1'))?.[1];
  const matches =
    status === 200 &&
    ifNoneMatch !== undefined &&
    ifNoneMatch.split(',').some((tag) => {
      const t = tag.trim();
      return t === '*' || (ownEtag && t.replace(/^W\//, '') === etag);
    });
  if (matches) return { sent: true, status: 304, lines: lines.replace(/^content-(?!location)[^:]*:.*\r\n/gim, ''), body: Buffer.alloc(0) };
  if (!has(lines, 'content-type')) lines += `Content-Type: ${native.contentTypeOf(real)}\r\n`;
  if (status === 200) lines += 'Accept-Ranges: bytes\r\n';
  return { sent: true, status, lines, body: (order.flags & RESPOND_HEAD) !== 0 ? Buffer.alloc(0) : body };
}
