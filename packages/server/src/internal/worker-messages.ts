/**
 * The messages a worker thread and the main thread exchange (`postMessage`):
 * attach, watchdog pings, the final drain at shutdown, and what a worker
 * reports (its routes, a load error, handler errors). Errors cross as plain
 * objects (`serializeError`): the structured clone keeps an `Error`'s
 * message and stack but drops its `code` and any name of its own.
 */
import type { NativeHttpRoute, NativeRouteOptions, NativeStaticDir, NativeStaticRoute } from '../native.js';

export interface SerializedError {
  name: string;
  message: string;
  stack?: string;
  code?: string;
}

export type ToWorker =
  | { type: 'attach'; serverId: number }
  | { type: 'ping'; seq: number }
  | { type: 'final-drain' };

export type FromWorker =
  | { type: 'routes'; routes: NativeRouteOptions[]; staticRoutes: NativeStaticRoute[]; staticDirs: NativeStaticDir[]; httpRoutes: NativeHttpRoute[] }
  | { type: 'load-error'; error: SerializedError }
  | { type: 'attached' }
  | { type: 'pong'; seq: number }
  | { type: 'handler-error'; handler: string; connection: number; error: SerializedError }
  | { type: 'drained' };

export function serializeError(error: unknown): SerializedError {
  if (error instanceof Error) {
    const out: SerializedError = { name: error.name, message: error.message };
    if (error.stack !== undefined) out.stack = error.stack;
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string') out.code = code;
    return out;
  }
  return { name: 'Error', message: String(error) };
}

export function deserializeError(error: SerializedError): Error {
  const out = new Error(error.message);
  out.name = error.name;
  if (error.stack !== undefined) out.stack = error.stack;
  if (error.code !== undefined) Object.assign(out, { code: error.code });
  return out;
}
