/**
 * The head of a response: its status and header fields, with the rules a
 * handler's headers must follow (names that are tokens, values without
 * control characters, no framing header the native side writes itself),
 * cookies, and the header block as it crosses to the native side. The
 * body, its framing and its order are `response.ts`'s.
 */
import { SwitchboardError } from '../errors.js';
import { serializeCookie, type CookieKeyring, type CookieOptions } from './cookies.js';

/** Headers the native side writes itself, which a handler may not set. */
const FRAMING = new Set(['transfer-encoding', 'date', 'keep-alive', 'upgrade', 'trailer', 'te']);

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Tab, visible ASCII and obs-text: no CR, LF, NUL or other controls. */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

export const CONTENT_TYPES: Readonly<Record<string, string>> = {
  json: 'application/json; charset=utf-8',
  html: 'text/html; charset=utf-8',
  text: 'text/plain; charset=utf-8',
  bin: 'application/octet-stream',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  xml: 'application/xml',
  form: 'application/x-www-form-urlencoded',
};

/**
 * The header block of a response whose only header is one of these
 * content types, encoded once: most responses have just that, and bytes
 * cross to the native side without a string conversion.
 */
const CONTENT_TYPE_LINES = new Map<string, Buffer>(
  [...Object.values(CONTENT_TYPES), 'text/plain'].map((type) => [type, Buffer.from(`Content-Type: ${type}\r\n`, 'latin1')]),
);
const NO_HEADERS = Buffer.alloc(0);

/** One header of a response other than `Content-Type`. */
interface Field {
  lower: string;
  name: string;
  value: string | string[];
}

export abstract class ResponseHead {
  /** The status the head will carry. Default 200. */
  statusCode = 200;
  /** `Content-Type` (the header nearly every response has) has its own slot. */
  protected contentType: string | undefined;
  /** Its header line, encoded, when it is one of the known types. */
  protected contentTypeLine: Buffer | undefined;
  /** The other headers, in the order set. */
  protected fields: Field[] | undefined;
  /** A `Content-Length` the handler set: the length of a streamed body. */
  protected declaredLength: number | undefined;
  /** `Connection: close` was set: the connection closes after this response. */
  protected closeAfter = false;
  /** @internal The app's cookie secrets (`app.cookieSecrets`), set by the connection. */
  keyring: CookieKeyring | undefined;

  /** Set the status (100-999). */
  status(code: number): this {
    if (!Number.isInteger(code) || code < 100 || code > 999) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `a status must be an integer 100..999, got ${String(code)}`);
    }
    this.statusCode = code;
    return this;
  }

  /** Set a header, replacing any of the same name. */
  header(name: string, value: string | number | readonly string[]): this {
    const lower = this.checkName(name);
    if (lower === 'connection') {
      // Only `close` means anything from a handler; the native side
      // writes the header for the connection's fate.
      if (String(value).toLowerCase().includes('close')) this.closeAfter = true;
      return this;
    }
    const checked = checkValue(name, value);
    if (lower === 'content-type') {
      this.contentType = Array.isArray(checked) ? checked.join(', ') : (checked as string);
      this.contentTypeLine = CONTENT_TYPE_LINES.get(this.contentType);
    } else if (lower === 'content-length') {
      const length = Number(Array.isArray(checked) ? checked[0] : checked);
      if (!Number.isSafeInteger(length) || length < 0) {
        throw new SwitchboardError('ERR_HTTP_INVALID_HEADER', `Content-Length must be a whole number of bytes, got ${String(value)}`);
      }
      this.declaredLength = length;
    } else {
      const field = this.field(lower);
      if (field) {
        field.name = name;
        field.value = checked;
      } else {
        (this.fields ??= []).push({ lower, name, value: checked });
      }
    }
    return this;
  }

  /** Add a header line, keeping those of the same name (`Set-Cookie`). */
  append(name: string, value: string | number | readonly string[]): this {
    const lower = this.checkName(name);
    const previous = this.field(lower);
    if (!previous) return this.header(name, value);
    previous.value = ([] as string[]).concat(previous.value, checkValue(name, value));
    return this;
  }

  getHeader(name: string): string | string[] | undefined {
    const lower = name.toLowerCase();
    if (lower === 'content-type') return this.contentType;
    if (lower === 'content-length') return this.declaredLength === undefined ? undefined : String(this.declaredLength);
    return this.field(lower)?.value;
  }

  hasHeader(name: string): boolean {
    return this.getHeader(name) !== undefined;
  }

  removeHeader(name: string): this {
    const lower = name.toLowerCase();
    if (lower === 'content-type') this.contentType = this.contentTypeLine = undefined;
    else if (lower === 'content-length') this.declaredLength = undefined;
    else if (this.fields) this.fields = this.fields.filter((f) => f.lower !== lower);
    return this;
  }

  protected field(lower: string): Field | undefined {
    const fields = this.fields;
    if (!fields) return undefined;
    for (const field of fields) if (field.lower === lower) return field;
    return undefined;
  }

  /**
   * Add a `Set-Cookie` line (`docs/http.md#cookies`). With `signed: true`
   * the value is signed with the newest of `app.cookieSecrets`. Throws
   * `ERR_INVALID_OPTION` for a cookie a browser would drop (`SameSite=None`
   * without `secure`, a bad name...), `ERR_COOKIE_NO_SECRET` when signing
   * without secrets.
   */
  cookie(name: string, value: string, options: CookieOptions = {}): this {
    let sent = value;
    if (options.signed) {
      if (!this.keyring) throw new SwitchboardError('ERR_COOKIE_NO_SECRET', `cookie ${name} is to be signed, but app.cookieSecrets is not set`);
      sent = this.keyring.sign(name, value);
    }
    return this.append('Set-Cookie', serializeCookie(name, sent, options));
  }

  /**
   * Tell the browser to drop cookie `name`: an empty value that expired at
   * the epoch, with `Max-Age=0`. Give the `path` and `domain` the cookie
   * was set with (a cookie is known by name, path and domain).
   */
  clearCookie(name: string, options: Omit<CookieOptions, 'expires' | 'maxAge' | 'signed'> = {}): this {
    return this.append('Set-Cookie', serializeCookie(name, '', { ...options, expires: new Date(0), maxAge: 0 }));
  }

  /** Set `Content-Type`: a MIME type, or `json`, `html`, `text`, `bin`, `js`, `css`, `xml`, `form`. */
  type(value: string): this {
    const type = CONTENT_TYPES[value] ?? value;
    const line = CONTENT_TYPE_LINES.get(type);
    if (line === undefined) return this.header('Content-Type', value);
    // A type of the table needs no checking.
    this.checkStage('Content-Type');
    this.contentType = type;
    this.contentTypeLine = line;
    return this;
  }

  /** Add `Accept-Encoding` to `Vary`, unless it is there (or `*` is). */
  protected varyOnEncoding(): void {
    const vary = this.field('vary');
    if (vary === undefined) {
      (this.fields ??= []).push({ lower: 'vary', name: 'Vary', value: 'Accept-Encoding' });
      return;
    }
    const lines = typeof vary.value === 'string' ? [vary.value] : vary.value;
    for (const line of lines) {
      for (const item of line.split(',')) {
        const name = item.trim().toLowerCase();
        if (name === 'accept-encoding' || name === '*') return;
      }
    }
    if (typeof vary.value !== 'string') vary.value = [...vary.value, 'Accept-Encoding'];
    else vary.value = vary.value.trim() === '' ? 'Accept-Encoding' : `${vary.value}, Accept-Encoding`;
  }

  /**
   * The header lines (`Content-Length` is the native side's to write, from
   * the body or the declared length): the encoded block of a lone known
   * content type, else a string.
   */
  protected headerLines(): string | Buffer {
    const type = this.contentType;
    const fields = this.fields;
    if (!fields) {
      if (type === undefined) return NO_HEADERS;
      if (this.contentTypeLine) return this.contentTypeLine;
    }
    let lines = type === undefined ? '' : `Content-Type: ${type}\r\n`;
    if (fields) {
      for (const { name, value } of fields) {
        if (typeof value === 'string') lines += `${name}: ${value}\r\n`;
        else for (const v of value) lines += `${name}: ${v}\r\n`;
      }
    }
    return lines;
  }

  protected setKnownType(key: keyof typeof CONTENT_TYPES & string): void {
    this.contentType = CONTENT_TYPES[key];
    this.contentTypeLine = CONTENT_TYPE_LINES.get(this.contentType!);
  }

  /** A header changed: report it when the head is out already (the change is then lost). */
  protected abstract checkStage(name: string): void;

  private checkName(name: string): string {
    this.checkStage(name);
    if (typeof name !== 'string' || !TOKEN.test(name)) {
      throw new SwitchboardError('ERR_HTTP_INVALID_HEADER', `not a header name: ${JSON.stringify(name)}`);
    }
    const lower = name.toLowerCase();
    if (FRAMING.has(lower)) {
      throw new SwitchboardError('ERR_HTTP_INVALID_HEADER', `${name} is written by the server itself`);
    }
    return lower;
  }
}

function checkValue(name: string, value: string | number | readonly string[]): string | string[] {
  const values = Array.isArray(value) ? value.map(String) : [String(value)];
  for (const v of values) {
    if (!FIELD_VALUE.test(v)) {
      throw new SwitchboardError('ERR_HTTP_INVALID_HEADER', `the value of ${name} has a control character (CR, LF, NUL...)`);
    }
  }
  return Array.isArray(value) ? values : values[0]!;
}
