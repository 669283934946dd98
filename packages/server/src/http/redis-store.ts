/**
 * Sessions in the broker's Redis (docs/http.md, "Sessions": the Redis
 * store): a `SessionStore` for `session({ store })` that every worker and
 * every server sharing the broker sees, made by `app.sessionStore()`.
 *
 * It adds no Redis client to the JavaScript side: each operation is one
 * asynchronous native call run on the broker's thread, on the query
 * connection of the Redis server that holds the session (`GET`, `SET key
 * json PX ttl`, `PEXPIRE`, `DEL`; crates/broker/src/sessions.rs). What
 * is stored is the JSON text of the session's data, as `MemoryStore`
 * keeps it, and Redis's expiry is the session's TTL.
 */
import { SwitchboardError, liftNativeError } from '../errors.js';
import type { NativeServerHandle } from '../native.js';
import type { SessionData, SessionStore } from './session.js';

/** Options of `app.sessionStore()`. */
export interface RedisSessionStoreOptions {
  /**
   * Put in front of each session id to make its Redis key. Default
   * `<broker.prefix>session:` (`switchboard:session:`): apart from the
   * channels' keys, and shared by every server with the same broker prefix.
   */
  prefix?: string;
  /**
   * The longest session (its JSON text, in bytes) `set` stores; a longer
   * one is refused with `ERR_SESSION_TOO_LARGE`. Default 1 MiB: a session
   * is an id and a few fields, read from Redis on every request, so a
   * session this large is a bug (or a user filling it) rather than a use.
   */
  maxSessionBytes?: number;
}

/** @internal What a store needs to know of the server's broker, known before the server listens. */
export interface BrokerSummary {
  engine: 'redis' | 'cluster' | 'nats';
  prefix: string;
}

/**
 * The longest session id taken, in characters (visible ASCII only). The
 * session middleware makes 32; 256 leaves room for ids of other shapes
 * (UUIDs, prefixed ids) while bounding the key. As `MAX_ID_BYTES` in
 * crates/node/src/sessions.rs.
 */
export const MAX_SESSION_ID_LENGTH = 256;
const ID_FORMAT = /^[\x21-\x7e]+$/;
const DEFAULT_MAX_SESSION_BYTES = 1024 * 1024;

/**
 * A session store in the broker's Redis. Made by `app.sessionStore()`
 * (or `server.sessionStore()`); its operations work once the server
 * listens (before, they reject with `ERR_NOT_LISTENING`) and reject with
 * `ERR_BROKER_UNAVAILABLE` when Redis does not answer within
 * `broker.connectTimeout`.
 */
export class RedisSessionStore implements SessionStore {
  /** What goes in front of each id in its Redis key. */
  readonly prefix: string;
  readonly maxSessionBytes: number;

  /** @internal */
  constructor(
    private readonly handle: () => NativeServerHandle,
    broker: BrokerSummary | undefined,
    options: RedisSessionStoreOptions = {},
  ) {
    if (broker === undefined) {
      throw new SwitchboardError('ERR_INVALID_OPTION', 'sessionStore() keeps sessions in the broker\'s Redis: give the server a broker ({ broker: { redis } })');
    }
    if (broker.engine === 'nats') {
      throw new SwitchboardError('ERR_INVALID_OPTION', 'sessionStore() needs Redis (broker.redis or broker.cluster): NATS keeps no keys');
    }
    if (options === null || typeof options !== 'object') {
      throw new SwitchboardError('ERR_INVALID_OPTION', `sessionStore() options must be an object, got ${String(options)}`);
    }
    const { prefix = `${broker.prefix}session:`, maxSessionBytes = DEFAULT_MAX_SESSION_BYTES } = options;
    if (typeof prefix !== 'string') {
      throw new SwitchboardError('ERR_INVALID_OPTION', `sessionStore() prefix must be a string, got ${String(prefix)}`);
    }
    if (!Number.isInteger(maxSessionBytes) || maxSessionBytes < 2) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `sessionStore() maxSessionBytes must be a whole number >= 2, got ${String(maxSessionBytes)}`);
    }
    this.prefix = prefix;
    this.maxSessionBytes = maxSessionBytes;
  }

  async get(id: string): Promise<SessionData | undefined> {
    checkId(id);
    const text = await this.call((native) => native.sessionGet(id, this.prefix + id));
    if (text === null) return undefined;
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      return undefined; // not written by a store: no session
    }
    return data !== null && typeof data === 'object' && !Array.isArray(data) ? (data as SessionData) : undefined;
  }

  async set(id: string, data: SessionData, ttlMs: number): Promise<void> {
    checkId(id);
    checkTtl(ttlMs);
    let json: string | undefined;
    try {
      json = JSON.stringify(data);
    } catch (error) {
      throw new SwitchboardError('ERR_INVALID_OPTION', 'a session\'s data must be JSON-serializable', { cause: error });
    }
    if (json === undefined || !json.startsWith('{')) {
      throw new SwitchboardError('ERR_INVALID_OPTION', 'a session\'s data must be an object');
    }
    // Characters first: a string of n UTF-16 units is at most 3n UTF-8 bytes.
    if (json.length * 3 > this.maxSessionBytes && Buffer.byteLength(json) > this.maxSessionBytes) {
      throw new SwitchboardError('ERR_SESSION_TOO_LARGE', `a session of ${Buffer.byteLength(json)} bytes of JSON is over maxSessionBytes (${this.maxSessionBytes})`);
    }
    await this.call((native) => native.sessionSet(id, this.prefix + id, json, ttlMs));
  }

  async touch(id: string, ttlMs: number): Promise<void> {
    checkId(id);
    checkTtl(ttlMs);
    await this.call((native) => native.sessionTouch(id, this.prefix + id, ttlMs));
  }

  async destroy(id: string): Promise<void> {
    checkId(id);
    await this.call((native) => native.sessionDestroy(id, this.prefix + id));
  }

  private async call<T>(operation: (native: NativeServerHandle) => Promise<T>): Promise<T> {
    const native = this.handle();
    try {
      return await operation(native);
    } catch (error) {
      throw liftNativeError(error);
    }
  }
}

function checkId(id: string): void {
  if (typeof id !== 'string' || id.length > MAX_SESSION_ID_LENGTH || !ID_FORMAT.test(id)) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `a session id must be 1 to ${MAX_SESSION_ID_LENGTH} visible ASCII characters, got ${JSON.stringify(String(id).slice(0, 40))}`);
  }
}

function checkTtl(ttlMs: number): void {
  if (typeof ttlMs !== 'number' || !(ttlMs >= 1) || ttlMs > Number.MAX_SAFE_INTEGER) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `a session's ttl must be a number of ms in 1..2^53, got ${String(ttlMs)}`);
  }
}
