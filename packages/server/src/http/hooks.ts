/**
 * Lifecycle hooks, in fastify's named phases: functions that run at fixed
 * points of every request of a router (and of the routers mounted in it),
 * apart from the chain of middleware and handlers.
 *
 * | Phase | When | May |
 * |---|---|---|
 * | `onRequest(req, res)` | first, before any middleware | answer (the chain stops) |
 * | `preHandler(req, res)` | after the middleware, before the route's handlers | answer |
 * | `onSend(req, res, payload)` | a whole response (`send`, `json`, `html`, `redirect`, `end`) is about to go out | return a payload in its place; set headers |
 * | `onResponse(req, res)` | after the response ended | observe only |
 * | `onError(req, res, error)` | on the first error of a request, before the error handlers | observe only |
 *
 * A hook may be async: it is awaited before the next one runs. A hook that
 * throws (or rejects) in the first three phases sends its error to the
 * error handlers, as a handler's would; one of `onResponse` or `onError`
 * is reported (`handlerError`) and changes nothing.
 */
import { SwitchboardError } from '../errors.js';
import type { Request } from './request.js';
import type { Response } from './response.js';
import type { FilePayload } from './send-file.js';

/** What the `onSend` hooks see: a whole body's bytes (or string), or a file the core sends (`res.file`). */
export type SendPayload = string | Uint8Array | FilePayload;

/** `onRequest` and `preHandler`. */
export type RequestHook = (req: Request, res: Response) => unknown;
/**
 * `onSend`: the payload of a whole response, as it will be written (a
 * string or bytes), or a `FilePayload` for a file the core sends
 * (`res.file`, `res.download`). Return (or resolve to) a string or bytes
 * to send in its place, `null` for an empty body, `undefined` to keep it.
 */
export type OnSendHook = (req: Request, res: Response, payload: SendPayload) => unknown;
/** `onResponse`: the response ended. */
export type OnResponseHook = (req: Request, res: Response) => unknown;
/** `onError`: observes an error on its way to the error handlers. */
export type OnErrorHook = (req: Request, res: Response, error: unknown) => unknown;

/** Each phase's hook type. */
export interface HookTypes {
  onRequest: RequestHook;
  preHandler: RequestHook;
  onSend: OnSendHook;
  onResponse: OnResponseHook;
  onError: OnErrorHook;
}

export type HookName = keyof HookTypes;

/** The phases, in the order a request meets them. */
export const HOOK_NAMES: readonly HookName[] = ['onRequest', 'preHandler', 'onSend', 'onResponse', 'onError'];

/** The hooks of a router, or of a compiled route (outer routers' first). */
export type RouteHooks = { [K in HookName]: HookTypes[K][] };

/** Hooks with none in any phase. */
export function noHooks(): RouteHooks {
  return { onRequest: [], preHandler: [], onSend: [], onResponse: [], onError: [] };
}

/** Refuse an unknown phase or a hook that is not a function, at registration. */
export function checkHook(name: unknown, hook: unknown): asserts name is HookName {
  if (typeof name !== 'string' || !(HOOK_NAMES as readonly string[]).includes(name)) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `unknown hook ${JSON.stringify(name)}: one of ${HOOK_NAMES.join(', ')}`);
  }
  if (typeof hook !== 'function') throw new SwitchboardError('ERR_INVALID_OPTION', `a ${name} hook must be a function`);
}

/** `outer`'s hooks then `inner`'s, phase by phase; `undefined` when there are none (most apps: the pipeline then skips them). */
export function joinHooks(outer: RouteHooks | undefined, inner: RouteHooks): RouteHooks | undefined {
  const joined = noHooks();
  let any = false;
  for (const name of HOOK_NAMES) {
    const list = [...(outer?.[name] ?? []), ...inner[name]] as never[];
    joined[name] = list;
    any ||= list.length > 0;
  }
  return any ? joined : undefined;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && (typeof value === 'object' || typeof value === 'function') && typeof (value as { then?: unknown }).then === 'function';
}

/**
 * Run `hooks` in order (`call` invokes one), awaiting each; then `done()`.
 * Stops without `done` when a hook answered (or the client left), and on
 * the first error, which goes to `fail`.
 */
export function runHooks<H>(hooks: readonly H[], call: (hook: H) => unknown, res: Response, done: () => void, fail: (error: unknown) => void): void {
  let i = 0;
  const next = (): void => {
    for (;;) {
      if (res.headersSent || res.closed) return;
      if (i === hooks.length) {
        done();
        return;
      }
      let result: unknown;
      try {
        result = call(hooks[i++]!);
      } catch (error) {
        fail(error);
        return;
      }
      if (isThenable(result)) {
        result.then(next, (error: unknown) => fail(error ?? new Error('a hook rejected with no reason')));
        return;
      }
    }
  };
  next();
}

/**
 * Run observers in order, awaiting each; their errors are reported and
 * the next one runs anyway. Then `done()`.
 */
export function observe<H>(hooks: readonly H[], call: (hook: H) => unknown, report: (error: unknown) => void, done?: () => void): void {
  let i = 0;
  const next = (): void => {
    while (i < hooks.length) {
      let result: unknown;
      try {
        result = call(hooks[i++]!);
      } catch (error) {
        report(error);
        continue;
      }
      if (isThenable(result)) {
        result.then(next, (error: unknown) => {
          report(error ?? new Error('a hook rejected with no reason'));
          next();
        });
        return;
      }
    }
    done?.();
  };
  next();
}

/**
 * Pass a whole response's payload through the `onSend` hooks in order;
 * `write` gets the last one's, `fail` the first error (or a hook that
 * returned something other than a string, bytes, `null` or `undefined`).
 */
export function runOnSend(
  hooks: readonly OnSendHook[],
  req: Request,
  res: Response,
  payload: SendPayload,
  write: (payload: SendPayload) => void,
  fail: (error: unknown) => void,
): void {
  let current = payload;
  let i = 0;
  const take = (value: unknown): boolean => {
    if (value === undefined) return true;
    if (value === null) current = '';
    else if (typeof value === 'string' || value instanceof Uint8Array) current = value;
    else {
      fail(new SwitchboardError('ERR_INVALID_OPTION', 'an onSend hook must return a string, bytes, null or undefined'));
      return false;
    }
    return true;
  };
  const next = (): void => {
    for (;;) {
      if (res.closed) return;
      if (i === hooks.length) {
        write(current);
        return;
      }
      let result: unknown;
      try {
        result = hooks[i++]!(req, res, current);
      } catch (error) {
        fail(error);
        return;
      }
      if (isThenable(result)) {
        result.then(
          (value) => {
            if (take(value)) next();
          },
          (error: unknown) => fail(error ?? new Error('a hook rejected with no reason')),
        );
        return;
      }
      if (!take(result)) return;
    }
  };
  next();
}
