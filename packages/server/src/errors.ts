/**
 * Errors raised by the JavaScript API. Every error has a stable `code`;
 * `docs/errors.md` lists them all (a test keeps the two in sync).
 */

/** Codes raised by the TypeScript layer, with what they mean. */
export const ERROR_CODES = {
  ERR_INVALID_OPTION: 'An option has a wrong type or value.',
  ERR_NOT_LISTENING: 'The operation needs a listening server (call `listen()` first).',
  ERR_ALREADY_LISTENING: '`listen()` was called twice on one server.',
  ERR_SERVER_CLOSED: 'The server was closed.',
  ERR_APP_LOAD: 'The application module failed to load in a worker.',
  ERR_ROUTES_DIFFER: 'Workers registered different routes (the app module must be deterministic).',
  ERR_NO_ROUTES: 'The application registered no WebSocket route.',
  ERR_HANDLER_FAILED: 'A handler threw or rejected; its connection is closed with 1011.',
  ERR_UPGRADE_REJECTED: 'An `upgrade` hook threw; the client got the error status (500 by default).',
  ERR_WORKER_UNRESPONSIVE: 'A worker missed the watchdog deadline and was replaced; its connections were closed with 1011.',
  ERR_WORKER_EXITED: 'A worker thread exited unexpectedly and was replaced.',
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

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
 * Native errors arrive as `Error("ERR_CODE: message")`; lift the code onto
 * `error.code` so callers can branch on it.
 */
export function liftNativeError(error: unknown): unknown {
  if (error instanceof Error && !('code' in error && typeof error.code === 'string' && error.code.startsWith('ERR_'))) {
    const match = /^(ERR_[A-Z0-9_]+):/.exec(error.message);
    if (match) Object.assign(error, { code: match[1] });
  }
  return error;
}
