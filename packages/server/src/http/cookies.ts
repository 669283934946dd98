/**
 * Cookies: the `Cookie` request header parsed (RFC 6265 §5.4, leniently:
 * a malformed pair is skipped, never thrown on), `Set-Cookie` lines
 * serialized (RFC 6265 §4.1, strictly: what a browser would drop or
 * misread is refused when the line is made), and signed values checked
 * against a ring of secrets, newest first, so secrets can be rotated.
 *
 * No I/O and no clock: `Expires` is a date the caller gives.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { SwitchboardError } from '../errors.js';

/** Attributes of a `Set-Cookie` line (`res.cookie(name, value, options)`). */
export interface CookieOptions {
  /** `Domain`: the host and its subdomains receive the cookie. Default: none (this host only). */
  domain?: string;
  /** `Path`. Default: none (the browser uses the request path's directory). */
  path?: string;
  /** `Expires`: when the browser drops the cookie. Default: none (a session cookie). */
  expires?: Date;
  /** `Max-Age` in seconds (wins over `expires` in browsers); 0 or less deletes the cookie. Default: none. */
  maxAge?: number;
  /** `Secure`: sent over HTTPS only. Default false. */
  secure?: boolean;
  /** `HttpOnly`: hidden from `document.cookie`. Default false. */
  httpOnly?: boolean;
  /** `SameSite`. `'none'` needs `secure: true`. Default: none (browsers treat it as `Lax`). */
  sameSite?: 'strict' | 'lax' | 'none' | 'Strict' | 'Lax' | 'None';
  /** `Partitioned` (CHIPS): kept per top-level site. Needs `secure: true`. Default false. */
  partitioned?: boolean;
  /** `Priority` (Chrome's eviction order). Default: none. */
  priority?: 'low' | 'medium' | 'high' | 'Low' | 'Medium' | 'High';
  /** Sign the value with the newest of `app.cookieSecrets` (read it back with `req.signedCookies`). Default false. */
  signed?: boolean;
}

/** What `req.unsign(name)` found: the value, and whether an older secret signed it. */
export interface UnsignedCookie {
  value: string;
  /**
   * Signed with a secret other than the newest: still accepted, but send
   * it again (`res.cookie(name, value, { signed: true, ... })`) so that the
   * old secret can be retired.
   */
  stale: boolean;
}

/** A secret, or the secrets, of `app.cookieSecrets`. */
export type CookieSecrets = string | Buffer | readonly (string | Buffer)[];

/** RFC 9110 token: a cookie name. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/**
 * cookie-octet (RFC 6265 §4.1.1) without `%`: a value made of these is
 * sent as is; anything else is percent-encoded. `%` is left out so that a
 * literal `%41` is encoded too, and the parser's decoding gives back what
 * was set.
 */
const PLAIN_VALUE = /^[\x21\x23-\x24\x26-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]*$/;
/** av-octet: any CHAR but controls and `;` (Path). */
const PATH_VALUE = /^[\x20-\x3a\x3c-\x7e]+$/;
/** A host name or IPv4 address, with the leading dot RFC 2109 had (browsers ignore it). */
const DOMAIN_VALUE = /^\.?[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*$/;

const SAME_SITE: Readonly<Record<string, string>> = { strict: 'Strict', lax: 'Lax', none: 'None' };
const PRIORITY: Readonly<Record<string, string>> = { low: 'Low', medium: 'Medium', high: 'High' };

/** The marker of a signed value, as Express's cookie-parser writes it. */
const SIGNED_PREFIX = 's:';
/** HMAC-SHA256 is 32 bytes, 43 characters of unpadded base64url. */
const MAC_BYTES = 32;
const MAC_CHARS = 43;
/** The shortest secret: the size of the MAC's own output, as RFC 2104 §3 advises for a key. */
export const MIN_SECRET_BYTES = 32;

/**
 * The cookies of a `Cookie` header, name to value: pairs split at `;`,
 * names and values trimmed, a value in double quotes unquoted and
 * percent-decoded (a malformed escape stays as sent). A pair without `=`
 * or with an empty name is skipped; for a repeated name the first wins
 * (browsers send the most specific path first, RFC 6265 §5.4 step 2).
 * The object has no prototype: a cookie named `__proto__` is a cookie.
 */
export function parseCookies(header: string | undefined): Record<string, string> {
  const cookies = Object.create(null) as Record<string, string>;
  if (!header) return cookies;
  let start = 0;
  while (start < header.length) {
    let end = header.indexOf(';', start);
    if (end < 0) end = header.length;
    const equals = header.indexOf('=', start);
    if (equals > start && equals < end) {
      const name = header.slice(start, equals).trim();
      if (name !== '' && !(name in cookies)) {
        let value = header.slice(equals + 1, end).trim();
        if (value.length >= 2 && value.charCodeAt(0) === 0x22 && value.charCodeAt(value.length - 1) === 0x22) value = value.slice(1, -1);
        cookies[name] = value.includes('%') ? safeDecode(value) : value;
      }
    }
    start = end + 1;
  }
  return cookies;
}

/**
 * One `Set-Cookie` value. The name must be a token; a value with
 * characters outside cookie-octet (or with `%`) is percent-encoded.
 * Throws `ERR_INVALID_OPTION` for what a browser would reject or misread:
 * `SameSite=None` or `Partitioned` without `Secure`, a `__Secure-` cookie
 * without `Secure`, a `__Host-` cookie without `Secure` and `Path=/` or
 * with a `Domain`, a bad domain, path, date or Max-Age.
 */
export function serializeCookie(name: string, value: string, options: CookieOptions = {}): string {
  if (typeof name !== 'string' || !TOKEN.test(name)) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `a cookie name must be a token, got ${JSON.stringify(name)}`);
  }
  if (typeof value !== 'string') {
    throw new SwitchboardError('ERR_INVALID_OPTION', `the value of cookie ${name} must be a string, got ${typeof value}`);
  }
  let line = `${name}=${PLAIN_VALUE.test(value) ? value : encodeURIComponent(value)}`;
  const { domain, path, expires, maxAge, secure, httpOnly, sameSite, partitioned, priority } = options;
  if (domain !== undefined) {
    if (typeof domain !== 'string' || !DOMAIN_VALUE.test(domain)) throw invalid(name, `domain ${JSON.stringify(domain)}`);
    line += `; Domain=${domain}`;
  }
  if (path !== undefined) {
    if (typeof path !== 'string' || !PATH_VALUE.test(path)) throw invalid(name, `path ${JSON.stringify(path)}`);
    line += `; Path=${path}`;
  }
  if (expires !== undefined) {
    if (!(expires instanceof Date) || Number.isNaN(expires.getTime())) throw invalid(name, 'expires (not a valid Date)');
    line += `; Expires=${expires.toUTCString()}`;
  }
  if (maxAge !== undefined) {
    if (typeof maxAge !== 'number' || !Number.isFinite(maxAge)) throw invalid(name, `maxAge ${String(maxAge)} (seconds)`);
    line += `; Max-Age=${Math.floor(maxAge)}`;
  }
  if (secure) line += '; Secure';
  if (httpOnly) line += '; HttpOnly';
  if (sameSite !== undefined) {
    const word = typeof sameSite === 'string' ? SAME_SITE[sameSite.toLowerCase()] : undefined;
    if (word === undefined) throw invalid(name, `sameSite ${JSON.stringify(sameSite)} (strict, lax or none)`);
    // Browsers drop a SameSite=None cookie that is not Secure.
    if (word === 'None' && !secure) throw invalid(name, 'sameSite "none" without secure: true (browsers drop such a cookie)');
    line += `; SameSite=${word}`;
  }
  if (partitioned) {
    if (!secure) throw invalid(name, 'partitioned without secure: true (browsers drop such a cookie)');
    line += '; Partitioned';
  }
  if (priority !== undefined) {
    const word = typeof priority === 'string' ? PRIORITY[priority.toLowerCase()] : undefined;
    if (word === undefined) throw invalid(name, `priority ${JSON.stringify(priority)} (low, medium or high)`);
    line += `; Priority=${word}`;
  }
  // The prefixes of RFC 6265bis §4.1.3: browsers drop a cookie that breaks their rule.
  if ((name.startsWith('__Secure-') || name.startsWith('__Host-')) && !secure) {
    throw invalid(name, 'a __Secure- or __Host- cookie without secure: true');
  }
  if (name.startsWith('__Host-') && (domain !== undefined || path !== '/')) {
    throw invalid(name, 'a __Host- cookie needs path "/" and no domain');
  }
  return line;
}

function invalid(name: string, what: string): SwitchboardError {
  return new SwitchboardError('ERR_INVALID_OPTION', `cookie ${name}: invalid ${what}`);
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/**
 * The app's cookie secrets (`app.cookieSecrets`): the first signs, every
 * one verifies. One keyring per app, shared by its requests and
 * responses, so setting new secrets takes effect at the next request.
 */
export class CookieKeyring {
  private keys: readonly Buffer[] = [];

  /** Whether a secret is set. */
  get ready(): boolean {
    return this.keys.length > 0;
  }

  /** Replace the secrets (newest first). Each is a string or Buffer of at least 32 bytes. */
  set(secrets: CookieSecrets): void {
    const list = (Array.isArray(secrets) ? secrets : [secrets]) as readonly unknown[];
    if (list.length === 0) throw new SwitchboardError('ERR_INVALID_OPTION', 'cookieSecrets needs at least one secret');
    this.keys = list.map((secret, index) => {
      const key = typeof secret === 'string' ? Buffer.from(secret, 'utf8') : Buffer.isBuffer(secret) ? Buffer.from(secret) : undefined;
      if (key === undefined) throw new SwitchboardError('ERR_INVALID_OPTION', `cookieSecrets[${index}] must be a string or a Buffer`);
      if (key.length < MIN_SECRET_BYTES) {
        throw new SwitchboardError('ERR_INVALID_OPTION', `cookieSecrets[${index}] has ${key.length} bytes; a secret needs at least ${MIN_SECRET_BYTES}`);
      }
      return key;
    });
  }

  /**
   * `s:<value>.<mac>`, the MAC being HMAC-SHA256 with the newest secret,
   * unpadded base64url. The MAC covers the name as well as the value, so
   * a signed value cannot be replayed under another cookie's name (a
   * signed `theme` value passed off as `sid`).
   */
  sign(name: string, value: string): string {
    const key = this.keys[0];
    if (key === undefined) {
      throw new SwitchboardError('ERR_COOKIE_NO_SECRET', `cookie ${name} is to be signed, but app.cookieSecrets is not set`);
    }
    return `${SIGNED_PREFIX}${value}.${mac(key, name, value).toString('base64url')}`;
  }

  /**
   * The value of a signed cookie if one of the secrets signed it (compared
   * in constant time), else undefined: an unsigned value, a malformed one,
   * a bad MAC, no secrets.
   */
  verify(name: string, signed: string): UnsignedCookie | undefined {
    if (this.keys.length === 0 || !signed.startsWith(SIGNED_PREFIX)) return undefined;
    const dot = signed.lastIndexOf('.');
    if (dot < SIGNED_PREFIX.length || signed.length - dot - 1 !== MAC_CHARS) return undefined;
    const given = Buffer.from(signed.slice(dot + 1), 'base64url');
    // base64url decoding skips what is not of its alphabet: check the size.
    if (given.length !== MAC_BYTES) return undefined;
    const value = signed.slice(SIGNED_PREFIX.length, dot);
    for (let i = 0; i < this.keys.length; i++) {
      if (timingSafeEqual(mac(this.keys[i]!, name, value), given)) return { value, stale: i > 0 };
    }
    return undefined;
  }
}

function mac(key: Buffer, name: string, value: string): Buffer {
  return createHmac('sha256', key).update(`${name}=${value}`, 'utf8').digest();
}
