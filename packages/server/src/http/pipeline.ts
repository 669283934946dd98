/**
 * Runs one request through its route's chain: middleware and handlers in
 * order (each calls `next()` to go on), then, on an error (`next(error)`,
 * a throw, a rejection), the error handlers from the innermost router
 * outwards, and last the default one, which answers with the error's
 * status. A chain that ends without a response answers 404, as a route
 * that did not exist would.
 *
 * Lifecycle hooks (`http/hooks.ts`), when the route has any, run around
 * the chain: `onRequest` before it, `preHandler` between the middleware
 * and the route's handlers, `onSend` on a whole response's payload,
 * `onError` on the first error, `onResponse` after the end.
 */
import { HttpError } from './http-error.js';
import { observe, runHooks, runOnSend, type RouteHooks } from './hooks.js';
import type { Request } from './request.js';
import type { Response } from './response.js';
import type { CompiledRoute } from './router.js';

/** Where the pipeline reports errors the application did not handle. */
export type Report = (error: unknown) => void;

/** Thenables, without trusting `instanceof Promise` (other realms, userland promises). */
function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && (typeof value === 'object' || typeof value === 'function') && typeof (value as { then?: unknown }).then === 'function';
}

class Run {
  /** The next handler to call (or error handler, once failing). */
  private index = 0;
  private failing = false;
  private error: unknown;
  /** The `preHandler` hooks ran (or there are none). */
  private preHandled = false;
  /** Handed to each handler; one per request. */
  readonly next = (error?: unknown): void => {
    if (error !== undefined && error !== null) this.fail(error);
    else this.step();
  };

  constructor(
    private readonly route: CompiledRoute,
    private readonly req: Request,
    private readonly res: Response,
    private readonly report: Report,
  ) {
    // An error found after a handler returned (no such file for
    // `res.file`, a stream that failed first) continues the chain here.
    res.routeError = this.next;
  }

  step(): void {
    if (this.res.finished || this.res.closed) return;
    if (this.failing) {
      this.stepError();
      return;
    }
    const hooks = this.route.hooks;
    if (hooks && !this.preHandled && this.index >= (this.route.handlersStart ?? 0)) {
      this.preHandled = true;
      const { req, res } = this;
      runHooks(hooks.preHandler, (hook) => hook(req, res), res, () => this.step(), (error) => this.fail(error));
      return;
    }
    const handler = this.route.handlers[this.index++];
    if (!handler) {
      notFound(this.res);
      return;
    }
    let result: unknown;
    try {
      result = handler(this.req, this.res, this.next);
    } catch (error) {
      this.fail(error);
      return;
    }
    this.settle(result);
  }

  private settle(result: unknown): void {
    if (isThenable(result)) {
      result.then(
        (value) => this.sendReturned(value),
        (error: unknown) => this.fail(error ?? new Error('a handler rejected with no reason')),
      );
    } else {
      this.sendReturned(result);
    }
  }

  /** fastify's rule: a value returned by a handler that did not respond is the response. */
  private sendReturned(value: unknown): void {
    if (value !== undefined && !this.res.headersSent && !this.res.closed) this.res.send(value as object);
  }

  private fail(error: unknown): void {
    this.error = error;
    if (!this.failing) {
      this.failing = true;
      this.index = 0;
      const observers = this.route.hooks?.onError;
      if (observers && observers.length > 0) {
        const { req, res } = this;
        observe(observers, (hook) => hook(req, res, error), this.report, () => this.stepError());
        return;
      }
    }
    this.stepError();
  }

  /** Set the hooks of the response's phases, then run the `onRequest` hooks and the chain. */
  start(hooks: RouteHooks): void {
    const { req, res } = this;
    if (hooks.onSend.length > 0) {
      res.beforeSend = (payload, write) =>
        runOnSend(hooks.onSend, req, res, payload, write, (error) => {
          // The error's own response skips the hooks (`beforeSend` is spent).
          res.reopen();
          this.fail(error);
        });
    }
    if (hooks.onResponse.length > 0) {
      res.on('finish', () => observe(hooks.onResponse, (hook) => hook(req, res), this.report));
    }
    runHooks(hooks.onRequest, (hook) => hook(req, res), res, () => this.step(), (error) => this.fail(error));
  }

  private stepError(): void {
    if (this.res.finished || this.res.closed) return;
    const handler = this.route.errorHandlers[this.index++];
    if (!handler) {
      defaultErrorHandler(this.error, this.res, this.report);
      return;
    }
    let result: unknown;
    try {
      result = handler(this.error, this.req, this.res, this.next);
    } catch (error) {
      this.error = error;
      this.stepError();
      return;
    }
    this.settle(result);
  }
}

/** Run `req` through `route`. */
export function runRoute(route: CompiledRoute, req: Request, res: Response, report: Report): void {
  const run = new Run(route, req, res, report);
  if (route.hooks) run.start(route.hooks);
  else run.step();
}

function notFound(res: Response): void {
  res.status(404).json({ error: { code: 'ERR_HTTP_NOT_FOUND', message: 'no handler answered this request' } });
}

/**
 * The last error handler: an `HttpError` (or any error with a 4xx/5xx
 * `status` or `statusCode`) answers with its status, code and message;
 * anything else is a 500 that does not leak its message, and is reported.
 */
function defaultErrorHandler(error: unknown, res: Response, report: Report): void {
  const status = statusOf(error);
  if (status >= 500) report(error);
  if (res.headersSent) {
    // Too late for a status: cut the response short (its framing tells the
    // client it is incomplete).
    res.end();
    return;
  }
  const code = error instanceof HttpError ? error.code : typeof (error as { code?: unknown })?.code === 'string' && status < 500 ? (error as { code: string }).code : 'ERR_HTTP_INTERNAL';
  const message = status < 500 && error instanceof Error ? error.message : 'internal server error';
  const details = status < 500 && error instanceof HttpError ? error.details : undefined;
  res.status(status).json({ error: details === undefined ? { code, message } : { code, message, details } });
}

function statusOf(error: unknown): number {
  const candidate = (error as { status?: unknown; statusCode?: unknown } | null)?.status ?? (error as { statusCode?: unknown } | null)?.statusCode;
  return typeof candidate === 'number' && Number.isInteger(candidate) && candidate >= 400 && candidate <= 599 ? candidate : 500;
}
