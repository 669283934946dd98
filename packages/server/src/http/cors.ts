/**
 * CORS (the Fetch standard's CORS protocol), in the spirit of @fastify/cors:
 * a middleware that adds the `Access-Control-*` headers to the responses of
 * allowed origins and answers preflights itself.
 *
 * Preflights need a route to reach JavaScript at all: the native router
 * answers 405 to an OPTIONS request on a path without an OPTIONS route. So
 * `use(cors())` also registers catch-all OPTIONS routes under the same
 * prefix (`/*` and the prefix itself), marked as fallbacks: the native
 * router tries a route that takes the method before them (an OPTIONS route
 * only takes OPTIONS, so they hide nothing else), and one the app
 * registers on the same pattern replaces them.
 */
import { SwitchboardError } from '../errors.js';
import type { Request } from './request.js';
import type { Response } from './response.js';
import { FALLBACK, ON_USE, type Handler, type Router } from './router.js';

/**
 * Which origins may read the responses:
 * - `'*'`: any, without credentials (`Access-Control-Allow-Origin: *`);
 * - `true`: any, the request's `Origin` reflected (with credentials too);
 * - `false`: none (no CORS headers at all);
 * - a string: that origin exactly (`'https://app.example'`);
 * - a RegExp, or an array of strings and RegExps: the origins that match;
 * - a function of the request's origin (undefined without one) and the
 *   request, returning (or resolving to) one of the above but a function
 *   (undefined counts as `false`).
 */
export type CorsOrigin =
  | boolean
  | string
  | RegExp
  | readonly (string | RegExp)[]
  | ((origin: string | undefined, req: Request) => CorsStaticOrigin | Promise<CorsStaticOrigin>);
type CorsStaticOrigin = boolean | string | RegExp | readonly (string | RegExp)[];

/** Options of `cors()`. */
export interface CorsOptions {
  /** Default `'*'`. */
  origin?: CorsOrigin;
  /** `Access-Control-Allow-Methods` of preflights. Default `GET, HEAD, PUT, PATCH, POST, DELETE`. */
  methods?: string | readonly string[];
  /** `Access-Control-Allow-Headers` of preflights. Default: the request's `Access-Control-Request-Headers`, reflected. */
  allowedHeaders?: string | readonly string[];
  /** `Access-Control-Expose-Headers`: response headers scripts may read beyond the safelisted ones. Default: none. */
  exposedHeaders?: string | readonly string[];
  /** `Access-Control-Allow-Credentials: true`: cookies and authorization go along. Needs an `origin` other than `'*'`. Default false. */
  credentials?: boolean;
  /** `Access-Control-Max-Age` of preflights, in seconds (how long a browser caches the answer). Default: none (the browser's, 5 s). */
  maxAge?: number;
  /** Pass preflights on to the route's next handler (it must answer them) instead of answering. Default false. */
  preflightContinue?: boolean;
  /** The status of a preflight's answer. Default 204. */
  optionsSuccessStatus?: number;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const DEFAULT_METHODS = 'GET, HEAD, PUT, PATCH, POST, DELETE';

interface Policy {
  origin: CorsOrigin;
  methods: string;
  allowedHeaders: string | undefined;
  exposedHeaders: string | undefined;
  credentials: boolean;
  maxAge: string | undefined;
  preflightContinue: boolean;
  status: number;
}

/**
 * The CORS middleware. `app.use(cors())` (or `router.use`, or with a
 * prefix) adds it to the routes there and registers catch-all OPTIONS
 * routes under the same prefix, so preflights for any path there reach it.
 * Put it before middleware that may refuse a request (authentication): a
 * preflight carries no credentials.
 */
export function cors(options: CorsOptions = {}): Handler {
  const policy = corsPolicy(options);
  const middleware: Handler = (req, res, next) => {
    const origin = req.header('origin');
    const preflight = req.method === 'OPTIONS' && origin !== undefined && req.header('access-control-request-method') !== undefined;
    const decided = typeof policy.origin === 'function' ? policy.origin(origin, req) : policy.origin;
    if (isThenable(decided)) {
      return Promise.resolve(decided).then((allowed) => apply(policy, checkOrigin(allowed), origin, preflight, req, res, next));
    }
    apply(policy, checkOrigin(decided), origin, preflight, req, res, next);
    return undefined;
  };
  Object.defineProperty(middleware, ON_USE, { value: (router: Router, prefix: string) => registerPreflightRoutes(router, prefix, policy) });
  return middleware;
}

function apply(policy: Policy, decided: CorsStaticOrigin, origin: string | undefined, preflight: boolean, req: Request, res: Response, next: (error?: unknown) => void): void {
  // Browsers refuse `*` with credentials: a function's `'*'` then reflects.
  const allowed = policy.credentials && decided === '*' ? true : decided;
  const value = allowedOrigin(allowed, origin);
  // The answer depends on Origin unless it is the same for all.
  if (allowed !== '*') vary(res, 'Origin');
  if (value !== undefined) {
    res.header('Access-Control-Allow-Origin', value);
    if (policy.credentials) res.header('Access-Control-Allow-Credentials', 'true');
    if (preflight) {
      res.header('Access-Control-Allow-Methods', policy.methods);
      if (policy.allowedHeaders !== undefined) {
        res.header('Access-Control-Allow-Headers', policy.allowedHeaders);
      } else {
        vary(res, 'Access-Control-Request-Headers');
        const requested = req.header('access-control-request-headers');
        if (requested) res.header('Access-Control-Allow-Headers', requested);
      }
      if (policy.maxAge !== undefined) res.header('Access-Control-Max-Age', policy.maxAge);
    } else if (policy.exposedHeaders !== undefined) {
      res.header('Access-Control-Expose-Headers', policy.exposedHeaders);
    }
  }
  // A preflight from an origin not allowed is answered too, without the
  // headers: the browser then refuses the request it was asking about.
  if (preflight && !(policy.preflightContinue && value !== undefined)) {
    res.status(policy.status).end();
    return;
  }
  next();
}

/** The `Access-Control-Allow-Origin` value for `origin`, or undefined when it is not allowed. */
function allowedOrigin(allowed: CorsStaticOrigin, origin: string | undefined): string | undefined {
  if (allowed === '*') return '*';
  if (origin === undefined || allowed === false) return undefined;
  if (allowed === true) return origin;
  const list = Array.isArray(allowed) ? (allowed as readonly (string | RegExp)[]) : [allowed as string | RegExp];
  for (const candidate of list) {
    if (typeof candidate === 'string' ? candidate === origin : (candidate.lastIndex = 0, candidate.test(origin))) return origin;
  }
  return undefined;
}

/** Add `name` to `Vary` unless it (or `*`) is there. */
function vary(res: Response, name: string): void {
  const current = res.getHeader('vary');
  const text = Array.isArray(current) ? current.join(', ') : current;
  if (text === undefined || text === '') {
    res.header('Vary', name);
    return;
  }
  const listed = text.split(',').map((field) => field.trim().toLowerCase());
  if (listed.includes('*') || listed.includes(name.toLowerCase())) return;
  res.header('Vary', `${text}, ${name}`);
}

/**
 * The catch-all OPTIONS routes of a `use(prefix, cors())`: `prefix/*`, and
 * the prefix itself (`/` of a router is its mount point). Their handler
 * runs after the middleware, which answered a preflight already unless
 * `preflightContinue`; then no other handler did, and this one answers.
 * An OPTIONS request that is not a preflight finds no handler here (404).
 */
function registerPreflightRoutes(router: Router, prefix: string, policy: Policy): void {
  const fallback: Handler = (req, res, next) => {
    if (req.header('origin') !== undefined && req.header('access-control-request-method') !== undefined) {
      res.status(policy.status).end();
      return;
    }
    next();
  };
  Object.defineProperty(fallback, FALLBACK, { value: true });
  router.options(prefix === '' ? '/' : prefix, fallback);
  router.options(`${prefix}/*`, fallback);
}

function isThenable(value: unknown): value is PromiseLike<CorsStaticOrigin> {
  return value !== null && typeof value === 'object' && typeof (value as { then?: unknown }).then === 'function';
}

/** What an origin function returned: undefined and null (a function that returns nothing for a refusal) are `false`. */
function checkOrigin(origin: unknown): CorsStaticOrigin {
  if (origin === undefined || origin === null) return false;
  if (!isStaticOrigin(origin)) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `a cors origin function must return a boolean, string, RegExp or array, got ${typeof origin}`);
  }
  return origin;
}

function isStaticOrigin(origin: unknown): origin is CorsStaticOrigin {
  if (typeof origin === 'boolean' || typeof origin === 'string' || origin instanceof RegExp) return true;
  return Array.isArray(origin) && origin.every((o) => typeof o === 'string' || o instanceof RegExp);
}

function headerList(name: string, value: string | readonly string[] | undefined, fallback: string | undefined): string | undefined {
  if (value === undefined) return fallback;
  const list = typeof value === 'string' ? value.split(',').map((v) => v.trim()).filter((v) => v !== '') : [...value];
  for (const item of list) {
    if (typeof item !== 'string' || !TOKEN.test(item)) throw new SwitchboardError('ERR_INVALID_OPTION', `cors ${name}: not a token: ${JSON.stringify(item)}`);
  }
  return list.join(', ');
}

function corsPolicy(options: CorsOptions): Policy {
  const { origin = '*', credentials = false, maxAge, preflightContinue = false, optionsSuccessStatus = 204 } = options;
  if (typeof origin !== 'function' && !isStaticOrigin(origin)) {
    throw new SwitchboardError('ERR_INVALID_OPTION', 'cors origin must be a boolean, string, RegExp, array or function');
  }
  if (credentials && origin === '*') {
    // Browsers refuse credentialed responses with `*`.
    throw new SwitchboardError('ERR_INVALID_OPTION', "cors credentials need a specific origin (origin: true reflects any), not '*'");
  }
  if (maxAge !== undefined && !(Number.isInteger(maxAge) && maxAge >= 0)) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `cors maxAge must be a whole number of seconds >= 0, got ${String(maxAge)}`);
  }
  if (!(Number.isInteger(optionsSuccessStatus) && optionsSuccessStatus >= 200 && optionsSuccessStatus <= 299)) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `cors optionsSuccessStatus must be 200..299, got ${String(optionsSuccessStatus)}`);
  }
  return {
    origin,
    methods: headerList('methods', options.methods, DEFAULT_METHODS)!,
    allowedHeaders: headerList('allowedHeaders', options.allowedHeaders, undefined),
    exposedHeaders: headerList('exposedHeaders', options.exposedHeaders, undefined),
    credentials: credentials === true,
    maxAge: maxAge === undefined ? undefined : String(maxAge),
    preflightContinue: preflightContinue === true,
    status: optionsSuccessStatus,
  };
}
