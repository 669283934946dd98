/**
 * Sessions, in the spirit of @fastify/session: a random id in a signed
 * cookie, the data in a store behind an interface (`MemoryStore` here; the
 * Redis store of `app.sessionStore()` in `redis-store.ts`), loaded before the route's
 * handlers and written when the response's head goes out.
 *
 * The one subtle point is when to write. The cookie must be in the head,
 * so it is set synchronously in `res.beforeHead`, right before the head is
 * framed; the store write is asynchronous and starts there too, without
 * holding the response back (its failure is reported through
 * `handlerError`). A handler that needs the write done before it answers
 * (a login followed by a redirect to a page that reads the session, on a
 * store without ordering) awaits `req.session.save()`.
 */
import { randomBytes } from 'node:crypto';
import { SwitchboardError } from '../errors.js';
import { serializeCookie, type CookieOptions } from './cookies.js';
import type { Request } from './request.js';
import type { Response } from './response.js';
import type { Handler } from './router.js';

/** What a session holds: JSON-serializable values by key. */
export type SessionData = Record<string, unknown>;

/**
 * Where sessions live. Every method may be asynchronous; a rejection is
 * `ERR_SESSION_STORE`. `ttlMs` is how long the session lives from now,
 * unless touched or set again.
 */
export interface SessionStore {
  /** The data of a live session; undefined when unknown or expired. */
  get(id: string): Promise<SessionData | undefined> | SessionData | undefined;
  set(id: string, data: SessionData, ttlMs: number): Promise<void> | void;
  /** Extend a live session's life to `ttlMs` from now (rolling sessions); nothing for an unknown one. */
  touch(id: string, ttlMs: number): Promise<void> | void;
  destroy(id: string): Promise<void> | void;
}

/** Options of `new MemoryStore()`. */
export interface MemoryStoreOptions {
  /**
   * The most sessions held; saving one more evicts the least recently
   * saved or touched. Default 10,000: a bound on the memory a flood of
   * new visitors can take (a few MiB for small sessions).
   */
  maxSessions?: number;
  /** How often expired sessions are swept, in ms. Default 60,000 (they are also dropped when read). */
  sweepInterval?: number;
}

interface Entry {
  /** The data as JSON, as a networked store would hold it: what is read back is a copy, and what cannot be serialized fails at `set`. */
  json: string;
  expires: number;
}

/**
 * Sessions in the worker's memory: for development, tests and single-process
 * apps. Each worker thread has its own (a session is not shared between
 * workers, so `workers > 0` needs a shared store: `app.sessionStore()`). Entries expire by TTL,
 * checked when read and swept periodically by an unref'd timer (it keeps no
 * process alive); at most `maxSessions` are held.
 */
export class MemoryStore implements SessionStore {
  readonly maxSessions: number;
  private readonly sweepInterval: number;
  /** In order of the last save or touch, oldest first: the first is the one to evict. */
  private readonly entries = new Map<string, Entry>();
  private sweeper: NodeJS.Timeout | undefined;

  constructor(options: MemoryStoreOptions = {}) {
    const { maxSessions = 10_000, sweepInterval = 60_000 } = options;
    if (!Number.isInteger(maxSessions) || maxSessions < 1) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `maxSessions must be a whole number >= 1, got ${String(maxSessions)}`);
    }
    if (typeof sweepInterval !== 'number' || !(sweepInterval >= 1) || !Number.isFinite(sweepInterval)) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `sweepInterval must be a number of ms >= 1, got ${String(sweepInterval)}`);
    }
    this.maxSessions = maxSessions;
    this.sweepInterval = sweepInterval;
  }

  /** Sessions held (expired ones not yet swept included). */
  get size(): number {
    return this.entries.size;
  }

  async get(id: string): Promise<SessionData | undefined> {
    const entry = this.live(id, Date.now());
    return entry === undefined ? undefined : (JSON.parse(entry.json) as SessionData);
  }

  async set(id: string, data: SessionData, ttlMs: number): Promise<void> {
    const json = JSON.stringify(data);
    this.entries.delete(id);
    this.entries.set(id, { json, expires: Date.now() + ttlMs });
    while (this.entries.size > this.maxSessions) this.entries.delete(this.entries.keys().next().value!);
    this.sweeper ??= setInterval(() => this.sweep(), this.sweepInterval).unref();
  }

  async touch(id: string, ttlMs: number): Promise<void> {
    const now = Date.now();
    const entry = this.live(id, now);
    if (entry === undefined) return;
    entry.expires = now + ttlMs;
    this.entries.delete(id);
    this.entries.set(id, entry);
  }

  async destroy(id: string): Promise<void> {
    this.entries.delete(id);
  }

  /** Drop the expired sessions (the timer does it every `sweepInterval`). */
  sweep(now = Date.now()): void {
    for (const [id, entry] of this.entries) if (entry.expires <= now) this.entries.delete(id);
    if (this.entries.size === 0) this.close();
  }

  /** Stop the sweeping timer (it starts again with the next save). */
  close(): void {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  private live(id: string, now: number): Entry | undefined {
    const entry = this.entries.get(id);
    if (entry === undefined) return undefined;
    if (entry.expires > now) return entry;
    this.entries.delete(id);
    return undefined;
  }
}

/** The session cookie's attributes. */
export interface SessionCookieOptions {
  /** Default: none (this host only). */
  domain?: string;
  /** Default `'/'`. */
  path?: string;
  /** `'auto'`: `Secure` on TLS listeners (`req.protocol === 'https'`). Default `'auto'`. */
  secure?: boolean | 'auto';
  /** Default true: scripts need not read a session id. */
  httpOnly?: boolean;
  /** Default `'lax'`: not sent on cross-site subrequests and POSTs (a CSRF defence), sent on top-level navigation. */
  sameSite?: CookieOptions['sameSite'];
  /** Default false. */
  partitioned?: boolean;
  /** Default: none. */
  priority?: CookieOptions['priority'];
}

/** Options of `session()`. */
export interface SessionOptions {
  /** Default: a `new MemoryStore()` of this middleware's own. */
  store?: SessionStore;
  /** How long a session lives without a request (`rolling`) or from its last save, in ms. Default 24 h. */
  ttl?: number;
  /** Each request extends the session's life to `ttl` (the store is touched and the cookie sent again). Default true. */
  rolling?: boolean;
  /** Store (and send the cookie of) a session that holds no data. Default false: no cookie until something is set. */
  saveUninitialized?: boolean;
  /** The cookie's name (a token). Default `'sid'`. */
  cookieName?: string;
  /** The cookie's attributes; its `Max-Age` is the TTL. */
  cookie?: SessionCookieOptions;
}

/** 24 bytes of randomness: 192 bits, beyond guessing, and 32 base64url characters without padding. */
const ID_BYTES = 24;
const ID_FORMAT = /^[A-Za-z0-9_-]{32}$/;
const DAY_MS = 24 * 60 * 60 * 1000;

function newId(): string {
  return randomBytes(ID_BYTES).toString('base64url');
}

function storeError(what: string, cause: unknown): SwitchboardError {
  return new SwitchboardError('ERR_SESSION_STORE', `the session store failed to ${what}`, { cause });
}

/** What `session()` decided once, shared by its sessions. */
interface Settings {
  store: SessionStore;
  ttl: number;
  rolling: boolean;
  saveUninitialized: boolean;
  cookieName: string;
  cookie: SessionCookieOptions;
}

/**
 * A request's session (`req.session`). Its data changes in memory; the
 * store is written when the response's head goes out (or at `save()`).
 */
export class Session {
  private currentId: string;
  private data: SessionData;
  /** Whether the store holds the current id (it was loaded, or saved). */
  private stored: boolean;
  /** The data changed since it was loaded or saved. */
  private dirty = false;
  /** The client holds a cookie for the current id signed with the newest secret. */
  private cookieCurrent: boolean;
  /** Ids the store is to forget (replaced by `regenerate`, ended by `destroy`). */
  private retired: string[] = [];

  /** @internal */
  constructor(
    private readonly settings: Settings,
    private readonly req: Request,
    private readonly res: Response,
    id: string,
    data: SessionData | undefined,
    cookieCurrent: boolean,
    /** The request carried a session cookie (valid or not): one to clear when the session ends unused. */
    private readonly requestHadCookie: boolean,
  ) {
    this.currentId = id;
    this.stored = data !== undefined;
    // No prototype: a key named `__proto__` is a key.
    this.data = Object.assign(Object.create(null) as SessionData, data);
    this.cookieCurrent = cookieCurrent && this.stored;
  }

  /** The session id (what the cookie carries, signed). Changes with `regenerate()` and `destroy()`. */
  get id(): string {
    return this.currentId;
  }

  /** Whether the session is new: not loaded from the store, not saved yet. */
  get isNew(): boolean {
    return !this.stored;
  }

  get<T = unknown>(key: string): T | undefined {
    return this.data[key] as T | undefined;
  }

  /** Set a value (JSON-serializable for stores that serialize, `MemoryStore` included). */
  set(key: string, value: unknown): this {
    this.data[key] = value;
    this.dirty = true;
    return this;
  }

  has(key: string): boolean {
    return key in this.data;
  }

  delete(key: string): boolean {
    if (!(key in this.data)) return false;
    delete this.data[key];
    this.dirty = true;
    return true;
  }

  /** A copy of the data. */
  toJSON(): SessionData {
    return { ...this.data };
  }

  /**
   * Give the session a new id, keeping only the `keep` keys of its data:
   * call it when the user logs in (or changes privilege), so an id planted
   * before (session fixation) is worth nothing after. The store forgets the
   * old id.
   */
  regenerate(keep: readonly string[] = []): void {
    const kept = Object.create(null) as SessionData;
    for (const key of keep) if (key in this.data) kept[key] = this.data[key];
    if (this.stored) this.retired.push(this.currentId);
    this.currentId = newId();
    this.data = kept;
    this.stored = false;
    this.dirty = true;
    this.cookieCurrent = false;
  }

  /**
   * End the session (log out): the store forgets it and the cookie is
   * cleared. Data set afterwards starts a new session, with a new id.
   */
  destroy(): void {
    this.regenerate();
  }

  /**
   * Write the session now (and forget the ids `regenerate`/`destroy`
   * retired), rather than when the head goes out. Rejects with
   * `ERR_SESSION_STORE`.
   */
  async save(): Promise<void> {
    const { store, ttl } = this.settings;
    const retired = this.retired.splice(0);
    this.dirty = false;
    try {
      for (const id of retired) await store.destroy(id);
      await store.set(this.currentId, { ...this.data }, ttl);
    } catch (error) {
      // Left to be written again when the head goes out.
      this.retired.unshift(...retired);
      this.dirty = true;
      throw storeError('save a session', error);
    }
    this.stored = true;
  }

  /** @internal The head is about to go out: set (or clear) the cookie, and start the store's writes. */
  commit(): void {
    const { store, ttl, rolling, saveUninitialized, cookieName } = this.settings;
    for (const id of this.retired.splice(0)) this.background('destroy a session', () => store.destroy(id));
    if (!this.stored && Object.keys(this.data).length === 0 && !saveUninitialized) {
      // Nothing to keep: no cookie, and none left behind.
      if (this.requestHadCookie) this.res.clearCookie(cookieName, this.attributes());
      return;
    }
    if (this.dirty || !this.stored) {
      const data = { ...this.data };
      this.background('save a session', () => store.set(this.currentId, data, ttl));
      this.stored = true;
      this.dirty = false;
      this.sendCookie();
    } else if (rolling) {
      this.background('touch a session', () => store.touch(this.currentId, ttl));
      this.sendCookie();
    } else if (!this.cookieCurrent) {
      // Saved by `save()` in this request, or signed with an older secret: (re)send it.
      this.sendCookie();
    }
  }

  private sendCookie(): void {
    const { cookieName, ttl } = this.settings;
    this.res.cookie(cookieName, this.currentId, { ...this.attributes(), signed: true, maxAge: Math.ceil(ttl / 1000) });
    this.cookieCurrent = true;
  }

  private attributes(): CookieOptions {
    const { secure, ...rest } = this.settings.cookie;
    return { ...rest, secure: secure === 'auto' ? this.req.protocol === 'https' : secure === true };
  }

  /** Run a store write without holding the response; a failure is reported through `handlerError`. */
  private background(what: string, write: () => Promise<void> | void): void {
    const report = (error: unknown) => this.res.report(storeError(what, error));
    try {
      Promise.resolve(write()).catch(report);
    } catch (error) {
      report(error);
    }
  }
}

declare module './request.js' {
  interface Request<Params extends Record<string, string> = Record<string, string>> {
    /** The session, on the routes the `session()` middleware runs for (see docs/http.md#sessions). */
    session: Session;
  }
}

/**
 * The session middleware: `app.use(session({ ... }))`. Needs
 * `app.cookieSecrets` (the cookie is signed). A session loads before the
 * next handler runs; a store that fails to load it fails the request
 * (`ERR_SESSION_STORE`, a 500 through the error handlers).
 */
export function session(options: SessionOptions = {}): Handler {
  const settings = sessionSettings(options);
  const { store, cookieName } = settings;
  return (req, res, next) => {
    if ((req as { session?: Session }).session !== undefined) {
      // A second session() on the same route: the first one's session stands.
      next();
      return undefined;
    }
    if (!req.keyring?.ready) {
      throw new SwitchboardError('ERR_COOKIE_NO_SECRET', 'session() signs its cookie: set app.cookieSecrets');
    }
    const attach = (id: string, data: SessionData | undefined, cookieCurrent: boolean) => {
      const created = new Session(settings, req, res, id, data, cookieCurrent, req.cookies[cookieName] !== undefined);
      req.session = created;
      res.beforeHead(() => {
        try {
          created.commit();
        } catch (error) {
          // Options were checked by `session()`; whatever fails here must not fail the response.
          res.report(error instanceof Error ? error : new Error(String(error)));
        }
      });
      next();
    };
    const cookie = req.unsign(cookieName);
    if (cookie === undefined || !ID_FORMAT.test(cookie.value)) {
      attach(newId(), undefined, false);
      return undefined;
    }
    let loading: Promise<SessionData | undefined> | SessionData | undefined;
    try {
      loading = store.get(cookie.value);
    } catch (error) {
      throw storeError('load a session', error);
    }
    return Promise.resolve(loading).then(
      (data) => {
        // An unknown or expired id gets a new one: ids are only ever made here.
        const live = data !== null && typeof data === 'object' ? data : undefined;
        attach(live === undefined ? newId() : cookie.value, live, !cookie.stale);
      },
      (error: unknown) => {
        throw storeError('load a session', error);
      },
    );
  };
}

function sessionSettings(options: SessionOptions): Settings {
  const { store = new MemoryStore(), ttl = DAY_MS, rolling = true, saveUninitialized = false, cookieName = 'sid', cookie = {} } = options;
  for (const method of ['get', 'set', 'touch', 'destroy'] as const) {
    if (typeof (store as unknown as Record<string, unknown>)?.[method] !== 'function') {
      throw new SwitchboardError('ERR_INVALID_OPTION', `a session store needs a ${method}() method`);
    }
  }
  if (typeof ttl !== 'number' || !(ttl >= 1) || !Number.isFinite(ttl)) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `ttl must be a number of ms >= 1, got ${String(ttl)}`);
  }
  if (cookie.secure !== undefined && cookie.secure !== 'auto' && typeof cookie.secure !== 'boolean') {
    throw new SwitchboardError('ERR_INVALID_OPTION', `cookie.secure must be true, false or 'auto', got ${String(cookie.secure)}`);
  }
  const merged: SessionCookieOptions = { path: '/', httpOnly: true, sameSite: 'lax', secure: 'auto', ...cookie };
  // Check the name and attributes now, so that setting the cookie does not
  // fail later (but for `secure: 'auto'` with `sameSite: 'none'` or
  // `partitioned` on a plain-HTTP request, reported then).
  const { secure, ...rest } = merged;
  serializeCookie(cookieName, 'x', { ...rest, secure: secure !== false, maxAge: Math.ceil(ttl / 1000) });
  return { store, ttl, rolling: rolling !== false, saveUninitialized: saveUninitialized === true, cookieName, cookie: merged };
}
