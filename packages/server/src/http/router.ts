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
import { checkHook, joinHooks, noHooks, type HookName, type HookTypes, type RouteHooks } from './hooks.js';
import { paramsBuilder, type ParamsBuilder, type Request } from './request.js';
import type { Response } from './response.js';
import { compileRouteSchema, type RouteSchema } from './validation.js';

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
  /**
   * JSON Schemas for the request's `params`, `query`, `headers` and
   * `body`, compiled now (a bad one: `ERR_INVALID_OPTION`) and checked
   * after the middleware, before the handlers; a request that fails gets
   * 400 `ERR_HTTP_VALIDATION` (see `http/validation.ts`).
   */
  schema?: RouteSchema;
}

/**
 * @internal A middleware may carry a function under this key, called when
 * it is `use`d with the router and the prefix (`''` for none): `cors()`
 * registers its OPTIONS routes so.
 */
export const ON_USE = Symbol('switchboard.onUse');

/**
 * @internal Marks a route's handler as a fallback: the route is left out
 * at `listen` when a route of the app (not a fallback) has the same
 * pattern shape and takes the method (`all` takes every one), or when an
 * earlier fallback has them. `cors()`'s catch-all OPTIONS routes are such.
 */
export const FALLBACK = Symbol('switchboard.fallback');

/** Methods a route may name (`all` is every method). */
export const ROUTE_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'TRACE'] as const;
type RouteMethod = (typeof ROUTE_METHODS)[number];

/** A route of the flattened table; its index is the route number the native side sends. */
export interface CompiledRoute {
  /** Absent for every method. */
  method: RouteMethod | undefined;
  pattern: string;
  paramNames: string[];
  /** Builds `req.params` from the raw values (see `paramsBuilder`). */
  buildParams: ParamsBuilder;
  /** Middleware (outermost router first), then the route's handlers. */
  handlers: Handler[];
  /** Innermost router's first. */
  errorHandlers: ErrorHandler[];
  /** Lifecycle hooks (`addHook`), outermost router's first; absent when there are none. */
  hooks?: RouteHooks | undefined;
  /** Where the route's own handlers start in `handlers`, after the middleware: `preHandler` hooks run there. */
  handlersStart?: number;
  bodyLimit: number | undefined;
  /** The route's `schema`; its validation step is the first of `handlers` after the middleware. */
  schema?: RouteSchema | undefined;
}

interface RouteEntry {
  method: RouteMethod | undefined;
  pattern: string;
  handlers: Handler[];
  options: HttpRouteOptions;
  /** The compiled `options.schema`. */
  validate: Handler | undefined;
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
  private notFound: Handler | undefined;
  private readonly hooks = noHooks();

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
        (item as { [ON_USE]?: (router: Router, prefix: string) => void })[ON_USE]?.(this, prefix);
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

  /**
   * Answer the requests under this router's prefix that no route takes
   * (instead of the core's 404): after the router's middleware, like a
   * route. It is a catch-all for every method under the prefix, so a
   * method a path does not have reaches it too (instead of a 405), as in
   * fastify. Without one, the core answers 404 itself.
   */
  setNotFoundHandler(handler: Handler): this {
    if (typeof handler !== 'function') throw new SwitchboardError('ERR_INVALID_OPTION', 'a not-found handler must be a function');
    this.notFound = handler;
    return this;
  }

  /**
   * Add a lifecycle hook for every route of this router and of the
   * routers mounted in it (`onRequest`, `preHandler`, `onSend`,
   * `onResponse`, `onError`: see `http/hooks.ts` and docs/http.md).
   * Hooks of a phase run in the order added, outer routers' first.
   */
  addHook<K extends HookName>(name: K, hook: HookTypes[K]): this {
    checkHook(name, hook);
    (this.hooks[name] as HookTypes[K][]).push(hook);
    return this;
  }

  /** @internal Whether any route was registered here or below. */
  get isEmpty(): boolean {
    return this.entries.length === 0 && this.mounts.every((m) => m.router.isEmpty);
  }

  /** @internal Flatten into `out`, under `prefix`, after the `outer` middleware and before the `outer` error handlers. */
  compile(out: CompiledRoute[], prefix = '', outer: Middleware[] = [], outerErrors: ErrorHandler[] = [], depth = 0, outerHooks?: RouteHooks): CompiledRoute[] {
    if (depth > 32) throw new SwitchboardError('ERR_INVALID_OPTION', 'routers are mounted in a cycle (or more than 32 deep)');
    const middleware = [...outer, ...this.middleware.map((m) => ({ prefix: prefix + m.prefix, handler: m.handler }))];
    const errors = this.errorHandler ? [this.errorHandler, ...outerErrors] : outerErrors;
    const hooks = joinHooks(outerHooks, this.hooks);
    for (const entry of this.entries) {
      const pattern = joinPattern(prefix, entry.pattern);
      const before = middleware.filter((m) => underPrefix(pattern, m.prefix)).map((m) => m.handler);
      // Validation before the `preHandler` hooks, as in fastify.
      if (entry.validate) before.push(entry.validate);
      out.push({
        method: entry.method,
        pattern,
        paramNames: paramNames(pattern),
        buildParams: paramsBuilder(paramNames(pattern)),
        handlers: [...before, ...entry.handlers],
        errorHandlers: errors,
        hooks,
        handlersStart: before.length,
        bodyLimit: entry.options.bodyLimit,
        schema: entry.options.schema,
      });
    }
    for (const mount of this.mounts) {
      mount.router.compile(out, prefix + mount.prefix, middleware, errors, depth + 1, hooks);
    }
    if (this.notFound) {
      // Catch-alls under the prefix (and the prefix itself), as fallbacks:
      // an app's own route of the same shape and method takes precedence.
      const handler = this.notFound;
      const fallback = Object.assign((req: Request, res: Response, next: (error?: unknown) => void) => handler(req, res, next), { [FALLBACK]: true });
      for (const pattern of prefix === '' ? ['/*'] : [prefix, `${prefix}/*`]) {
        const before = middleware.filter((m) => underPrefix(pattern, m.prefix)).map((m) => m.handler);
        out.push({
          method: undefined,
          pattern,
          paramNames: paramNames(pattern),
          buildParams: paramsBuilder(paramNames(pattern)),
          handlers: [...before, fallback],
          errorHandlers: errors,
          hooks,
          handlersStart: before.length,
          bodyLimit: undefined,
          schema: undefined,
        });
      }
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
    const validate = options.schema === undefined ? undefined : compileRouteSchema(options.schema, `${method ?? 'ALL'} ${pattern}`);
    this.entries.push({ method, pattern, handlers: handlers as Handler[], options, validate });
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

/**
 * @internal The routes without the fallbacks (`FALLBACK`) that another
 * route makes redundant, so that a fallback never collides with an app's
 * own route at `listen`.
 */
export function withoutShadowedFallbacks(routes: CompiledRoute[]): CompiledRoute[] {
  const isFallback = (route: CompiledRoute) => (route.handlers[route.handlers.length - 1] as { [FALLBACK]?: boolean } | undefined)?.[FALLBACK] === true;
  if (!routes.some(isFallback)) return routes;
  /** Pattern shapes (parameter names aside) to the methods they take ('' for all). */
  const taken = new Map<string, Set<string>>();
  const shape = (pattern: string) => pattern.replace(/\/:[^/]+/g, '/:');
  const take = (route: CompiledRoute) => {
    const key = shape(route.pattern);
    let methods = taken.get(key);
    if (!methods) taken.set(key, (methods = new Set()));
    methods.add(route.method ?? '');
  };
  for (const route of routes) if (!isFallback(route)) take(route);
  return routes.filter((route) => {
    if (!isFallback(route)) return true;
    const methods = taken.get(shape(route.pattern));
    if (methods && (methods.has('') || methods.has(route.method ?? ''))) return false;
    take(route);
    return true;
  });
}
