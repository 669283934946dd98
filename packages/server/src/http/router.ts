/**
 * Routes and middleware, in fastify's and Express's conventions: routers
 * mounted under prefixes (nested, and mounted many times), middleware for
 * everything, for a prefix, for a router or for one route, and error
 * handlers per router. At `listen` the tree is flattened into one list of
 * routes (`compile`), each with the whole chain of functions a request runs
 * through; the native core matches the patterns, and a request reaches
 * JavaScript knowing its route.
 */
import { SwitchboardError } from '../errors.js';
import type { Request } from './request.js';
import type { Response } from './response.js';

/**
 * A handler or middleware. Call `next()` to go on to the next one, or
 * `next(error)` to go to the error handlers; a thrown error or a rejected
 * promise goes there too. A handler that returns (or resolves to) a value
 * other than `undefined` without having responded sends that value.
 */
export type Handler<P extends Record<string, string> = Record<string, string>> = (
  req: Request<P>,
  res: Response,
  next: (error?: unknown) => void,
) => unknown;

/** Handles an error of the handlers before it (its router's, or a sub-router's it did not handle). */
export type ErrorHandler = (error: unknown, req: Request, res: Response, next: (error?: unknown) => void) => unknown;

/** Options of one route, given before its handlers. */
export interface HttpRouteOptions {
  /** The largest request body this route takes, in bytes (default: `http.maxBodyBytes`, 1 MiB). Larger: 413. */
  bodyLimit?: number;
}

/** Methods a route may name (`all` is every method). */
export const ROUTE_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'TRACE'] as const;
type RouteMethod = (typeof ROUTE_METHODS)[number];

/** A route of the flattened table; its index is the route number the native side sends. */
export interface CompiledRoute {
  /** Absent for every method. */
  method: RouteMethod | undefined;
  pattern: string;
  paramNames: string[];
  /** Middleware (outermost router first), then the route's handlers. */
  handlers: Handler[];
  /** Innermost router's first. */
  errorHandlers: ErrorHandler[];
  bodyLimit: number | undefined;
}

interface RouteEntry {
  method: RouteMethod | undefined;
  pattern: string;
  handlers: Handler[];
  options: HttpRouteOptions;
}

interface Middleware {
  /** `''` for every route of the router. */
  prefix: string;
  handler: Handler;
}

type RouteArgs = [HttpRouteOptions, ...Handler[]] | Handler[];

export class Router {
  private readonly entries: RouteEntry[] = [];
  private readonly middleware: Middleware[] = [];
  private readonly mounts: { prefix: string; router: Router }[] = [];
  private errorHandler: ErrorHandler | undefined;

  get<P extends Record<string, string> = Record<string, string>>(pattern: string, ...args: [HttpRouteOptions, ...Handler<P>[]] | Handler<P>[]): this {
    return this.add('GET', pattern, args as RouteArgs);
  }
  post<P extends Record<string, string> = Record<string, string>>(pattern: string, ...args: [HttpRouteOptions, ...Handler<P>[]] | Handler<P>[]): this {
    return this.add('POST', pattern, args as RouteArgs);
  }
  put<P extends Record<string, string> = Record<string, string>>(pattern: string, ...args: [HttpRouteOptions, ...Handler<P>[]] | Handler<P>[]): this {
    return this.add('PUT', pattern, args as RouteArgs);
  }
  patch<P extends Record<string, string> = Record<string, string>>(pattern: string, ...args: [HttpRouteOptions, ...Handler<P>[]] | Handler<P>[]): this {
    return this.add('PATCH', pattern, args as RouteArgs);
  }
  delete<P extends Record<string, string> = Record<string, string>>(pattern: string, ...args: [HttpRouteOptions, ...Handler<P>[]] | Handler<P>[]): this {
    return this.add('DELETE', pattern, args as RouteArgs);
  }
  head<P extends Record<string, string> = Record<string, string>>(pattern: string, ...args: [HttpRouteOptions, ...Handler<P>[]] | Handler<P>[]): this {
    return this.add('HEAD', pattern, args as RouteArgs);
  }
  options<P extends Record<string, string> = Record<string, string>>(pattern: string, ...args: [HttpRouteOptions, ...Handler<P>[]] | Handler<P>[]): this {
    return this.add('OPTIONS', pattern, args as RouteArgs);
  }
  /** Every method. */
  all<P extends Record<string, string> = Record<string, string>>(pattern: string, ...args: [HttpRouteOptions, ...Handler<P>[]] | Handler<P>[]): this {
    return this.add(undefined, pattern, args as RouteArgs);
  }

  /** Several methods on one path: `router.route('/users/:id').get(h).put(h)`. */
  route(pattern: string): { [M in 'get' | 'post' | 'put' | 'patch' | 'delete' | 'head' | 'options' | 'all']: (...args: RouteArgs) => ReturnType<Router['route']> } {
    const chain = {
      get: (...args: RouteArgs) => (this.add('GET', pattern, args), chain),
      post: (...args: RouteArgs) => (this.add('POST', pattern, args), chain),
      put: (...args: RouteArgs) => (this.add('PUT', pattern, args), chain),
      patch: (...args: RouteArgs) => (this.add('PATCH', pattern, args), chain),
      delete: (...args: RouteArgs) => (this.add('DELETE', pattern, args), chain),
      head: (...args: RouteArgs) => (this.add('HEAD', pattern, args), chain),
      options: (...args: RouteArgs) => (this.add('OPTIONS', pattern, args), chain),
      all: (...args: RouteArgs) => (this.add(undefined, pattern, args), chain),
    };
    return chain;
  }

  /**
   * `use(middleware...)`: for every route of this router (and the routers
   * mounted in it). `use(prefix, middleware...)`: for the routes under
   * `prefix`. `use(prefix, router)`: mount a router there (a router may be
   * mounted many times). Middleware runs before the route's handlers, in
   * the order it was added, whenever it was added.
   */
  use(...args: [string, ...(Handler | Router)[]] | (Handler | Router)[]): this {
    let prefix = '';
    let rest = args as (string | Handler | Router)[];
    if (typeof rest[0] === 'string') {
      prefix = normalizePrefix(rest[0]);
      rest = rest.slice(1);
    }
    if (rest.length === 0) throw new SwitchboardError('ERR_INVALID_OPTION', 'use() needs a middleware or a router');
    for (const item of rest) {
      if (item instanceof Router) {
        if (item === this) throw new SwitchboardError('ERR_INVALID_OPTION', 'a router cannot be mounted in itself');
        this.mounts.push({ prefix, router: item });
      } else if (typeof item === 'function') {
        this.middleware.push({ prefix, handler: item as Handler });
      } else {
        throw new SwitchboardError('ERR_INVALID_OPTION', 'use() takes middleware functions and routers');
      }
    }
    return this;
  }

  /** Handle the errors of this router's routes (and of mounted routers that do not handle them). */
  setErrorHandler(handler: ErrorHandler): this {
    if (typeof handler !== 'function') throw new SwitchboardError('ERR_INVALID_OPTION', 'an error handler must be a function');
    this.errorHandler = handler;
    return this;
  }

  /** @internal Whether any route was registered here or below. */
  get isEmpty(): boolean {
    return this.entries.length === 0 && this.mounts.every((m) => m.router.isEmpty);
  }

  /** @internal Flatten into `out`, under `prefix`, after the `outer` middleware and before the `outer` error handlers. */
  compile(out: CompiledRoute[], prefix = '', outer: Middleware[] = [], outerErrors: ErrorHandler[] = [], depth = 0): CompiledRoute[] {
    if (depth > 32) throw new SwitchboardError('ERR_INVALID_OPTION', 'routers are mounted in a cycle (or more than 32 deep)');
    const middleware = [...outer, ...this.middleware.map((m) => ({ prefix: prefix + m.prefix, handler: m.handler }))];
    const errors = this.errorHandler ? [this.errorHandler, ...outerErrors] : outerErrors;
    for (const entry of this.entries) {
      const pattern = joinPattern(prefix, entry.pattern);
      out.push({
        method: entry.method,
        pattern,
        paramNames: paramNames(pattern),
        handlers: [...middleware.filter((m) => underPrefix(pattern, m.prefix)).map((m) => m.handler), ...entry.handlers],
        errorHandlers: errors,
        bodyLimit: entry.options.bodyLimit,
      });
    }
    for (const mount of this.mounts) {
      mount.router.compile(out, prefix + mount.prefix, middleware, errors, depth + 1);
    }
    return out;
  }

  private add(method: RouteMethod | undefined, pattern: string, args: RouteArgs): this {
    if (typeof pattern !== 'string' || !pattern.startsWith('/')) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `a route pattern starts with "/", got ${JSON.stringify(pattern)}`);
    }
    let options: HttpRouteOptions = {};
    let handlers = args as unknown[];
    if (handlers.length > 0 && typeof handlers[0] === 'object' && handlers[0] !== null) {
      options = handlers[0] as HttpRouteOptions;
      handlers = handlers.slice(1);
    }
    if (handlers.length === 0 || handlers.some((h) => typeof h !== 'function')) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `route ${pattern} needs one or more handler functions`);
    }
    if (options.bodyLimit !== undefined && !(Number.isInteger(options.bodyLimit) && options.bodyLimit >= 0)) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `bodyLimit must be a whole number of bytes, got ${String(options.bodyLimit)}`);
    }
    this.entries.push({ method, pattern, handlers: handlers as Handler[], options });
    return this;
  }
}

/** `/api/` and `/api` are the same prefix; `/` is none. */
function normalizePrefix(prefix: string): string {
  if (!prefix.startsWith('/')) throw new SwitchboardError('ERR_INVALID_OPTION', `a prefix starts with "/", got ${JSON.stringify(prefix)}`);
  return prefix.replace(/\/+$/, '');
}

/** A route's pattern under a mount prefix: `/` under `/api` is `/api` itself. */
function joinPattern(prefix: string, pattern: string): string {
  if (prefix === '') return pattern;
  return pattern === '/' ? prefix : prefix + pattern;
}

/** Whether a route's pattern lies under a middleware's prefix (segment by segment). */
function underPrefix(pattern: string, prefix: string): boolean {
  return prefix === '' || pattern === prefix || pattern.startsWith(`${prefix}/`);
}

/** `:name` segments and a final `*`, in order (the native router's syntax). */
export function paramNames(pattern: string): string[] {
  const names: string[] = [];
  for (const segment of pattern.split('/')) {
    if (segment.startsWith(':')) names.push(segment.slice(1));
    else if (segment === '*') names.push('*');
  }
  return names;
}
