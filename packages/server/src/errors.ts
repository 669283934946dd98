/**
 * Errors raised by the JavaScript API. Every error has a stable `code`;
 * `docs/errors.md` lists them all (a test keeps the two in sync).
 */

/** How an error reaches the user: a WebSocket close code, an HTTP status, or an exception. */
export interface ErrorCodeInfo {
  kind: 'close' | 'http' | 'throw';
  /** The close code or HTTP status; 0 for exceptions. */
  value: number;
  description: string;
}

/** Codes raised by the TypeScript layer. */
export const ERROR_CODES = {
  ERR_INVALID_OPTION: { kind: 'throw', value: 0, description: 'An option or argument has a wrong type or value.' },
  ERR_NOT_LISTENING: { kind: 'throw', value: 0, description: 'The operation needs a listening server (call `listen()` first).' },
  ERR_ALREADY_LISTENING: { kind: 'throw', value: 0, description: '`listen()` was called on a server that is not idle.' },
  ERR_SERVER_CLOSED: { kind: 'throw', value: 0, description: 'The server was closed.' },
  ERR_APP_LOAD: { kind: 'throw', value: 0, description: 'The app module failed to load in a worker; `listen()` rejects.' },
  ERR_ROUTES_DIFFER: { kind: 'throw', value: 0, description: 'Workers registered different routes (the app module must register the same routes every time).' },
  ERR_NO_ROUTES: { kind: 'throw', value: 0, description: 'The app registered no route.' },
  ERR_NATIVE_MISSING: { kind: 'throw', value: 0, description: 'The native addon is not built (`npm run build`).' },
  ERR_CLIENT_BUNDLE_MISSING: { kind: 'throw', value: 0, description: '`app.clientBundle()` found no browser bundle of switchboard-client (`npm run build` makes it).' },
  ERR_HANDLER_FAILED: { kind: 'close', value: 1011, description: 'A WebSocket handler threw or rejected: only its connection is closed, and `handlerError` is emitted. An RPC handler that throws an error without a `code` answers its call with an ERROR of this code instead (the connection stays open).' },
  ERR_UPGRADE_REJECTED: { kind: 'http', value: 500, description: 'An `upgrade` hook threw an error that is not an `UpgradeRejection`.' },
  ERR_WORKER_UNRESPONSIVE: { kind: 'throw', value: 0, description: 'Reported by `workerReplaced`: a worker missed the watchdog deadline and was replaced.' },
  ERR_WORKER_EXITED: { kind: 'throw', value: 0, description: 'Reported by `workerReplaced`: a worker thread exited unexpectedly and was replaced.' },
  ERR_HTTP_RESPONSE_SENT: { kind: 'throw', value: 0, description: 'A handler sent (or wrote) a response that had already ended: reported by `handlerError`, otherwise ignored.' },
  ERR_HTTP_INVALID_HEADER: { kind: 'throw', value: 0, description: 'A response header name is not a token, its value has a control character, or the server writes it itself (`Transfer-Encoding`, `Date`, ...).' },
  ERR_HTTP_INVALID_BODY: { kind: 'http', value: 400, description: '`req.json()` found a body that is not valid JSON.' },
  ERR_HTTP_BODY_CONSUMED: { kind: 'throw', value: 0, description: 'A request body was read twice (`buffer()`, `text()`, `json()`, iteration: one of them, once).' },
  ERR_HTTP_INTERNAL: { kind: 'http', value: 500, description: 'A handler failed with an error that carries no 4xx/5xx status; reported by `handlerError` (the message is not sent to the client).' },
  ERR_HTTP_CLIENT_GONE: { kind: 'throw', value: 0, description: 'The reason `req.signal` aborts and a body read rejects with: the connection closed before the response ended; also what a `res.file` callback gets when the client left before the file was sent.' },
  ERR_HTTP_UNSUPPORTED_MEDIA_TYPE: { kind: 'http', value: 415, description: 'The body has a type the handler does not read: `req.multipart()` of a body that is not `multipart/form-data`, or a route with `schema.body` and a body that is not JSON.' },
  ERR_HTTP_MULTIPART_LIMIT: { kind: 'http', value: 413, description: 'A multipart body crossed one of `req.multipart()`\'s limits (`parts`, `files`, `fields`, `fieldSize`, `fileSize`); the message and the error\'s `limit` name it.' },
  ERR_HTTP_MULTIPART_MALFORMED: { kind: 'http', value: 400, description: 'A multipart body could not be parsed: no boundary, a boundary that never comes, a bad part head, or a body that ends before the closing boundary.' },
  ERR_HTTP_VALIDATION: { kind: 'http', value: 400, description: 'A request failed its route\'s `schema` (`params`, `query`, `headers` or `body`); `error.details` lists `{ location, path, message }`.' },
  ERR_COOKIE_NO_SECRET: { kind: 'throw', value: 0, description: 'A cookie is to be signed (`res.cookie(..., { signed: true })`, a session) but `app.cookieSecrets` is not set.' },
  ERR_BROKER_UNAVAILABLE: { kind: 'throw', value: 0, description: 'Thrown by `publish` on a server with a `broker`: the broker (Redis) is not connected, so the message would reach no server (not even this one, which delivers what comes back from Redis). Nothing was delivered; the server reconnects on its own. Also thrown by `send`, `end`, `terminate`, `subscribe`, `unsubscribe` and `publishTo` when they name a connection of another server (or `publishTo` names a channel), for the same reason. `history` and `presence` reject with it when Redis does not answer within `broker.connectTimeout`.' },
  ERR_HISTORY_UNAVAILABLE: { kind: 'throw', value: 0, description: 'Rejected by `history` (and answered to a protocol client\'s recovery as "no history"): the server has no `broker`, or the channel matches none of its `broker.history` rules.' },
  ERR_PRESENCE_UNAVAILABLE: { kind: 'throw', value: 0, description: 'Rejected by `presence`: the server has no `broker`, or the channel matches none of its `broker.presence` patterns.' },
  ERR_BROKER_BACKLOG: { kind: 'throw', value: 0, description: 'Thrown by `publish` (and by the operations on another server\'s connections) on a server with a `broker`: `broker.maxPendingPublishes` messages are still waiting to be written to Redis. Nothing was delivered.' },
  ERR_SESSION_TOO_LARGE: { kind: 'throw', value: 0, description: 'Rejected by the Redis session store\'s `set` (`app.sessionStore()`): the session\'s JSON text is over its `maxSessionBytes` (default 1 MiB). The session middleware reports it as `ERR_SESSION_STORE` with this as its cause.' },
  ERR_SESSION_STORE: { kind: 'throw', value: 0, description: 'The session store failed: loading a session answers 500 (the error goes to the error handlers); saving, touching or destroying one after the response is reported by `handlerError`.' },
} as const satisfies Record<string, ErrorCodeInfo>;

export type ErrorCode = keyof typeof ERROR_CODES;

/**
 * The native `publish` reports a broker's refusal as a negative count
 * (a number keeps the per-message call free of error objects); this turns
 * it into the error, or passes a count through.
 */
export function publishedCount(result: number): number {
  if (result >= 0) return result;
  if (result === -2) throw new SwitchboardError('ERR_BROKER_BACKLOG', 'too many publishes wait for the broker (broker.maxPendingPublishes)');
  throw new SwitchboardError('ERR_BROKER_UNAVAILABLE', 'the broker is not connected; the message was not published');
}

export class SwitchboardError extends Error {
  readonly code: string;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(`${code}: ${message}`, options);
    this.name = 'SwitchboardError';
    this.code = code;
  }
}

/**
 * Thrown from an `upgrade` hook to answer the client with an HTTP status
 * instead of completing the handshake.
 */
export class UpgradeRejection extends Error {
  readonly status: number;
  constructor(status: number, message = '') {
    super(message);
    this.name = 'UpgradeRejection';
    this.status = status;
  }
}

/**
 * Native errors arrive as `Error("<code>: message")`; lift the code onto
 * `error.code` so callers can branch on it.
 */
export function liftNativeError(error: unknown): unknown {
  if (error instanceof Error && !('code' in error && typeof error.code === 'string' && error.code.startsWith('ERR_'))) {
    const match = /^(ERR_[A-Z0-9_]+):/.exec(error.message);
    if (match) Object.assign(error, { code: match[1] });
  }
  return error;
}
