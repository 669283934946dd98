/**
 * Per-route JSON Schema validation with ajv: `schema: { params, query,
 * headers, body }` in a route's options. The schemas are compiled when the
 * route is registered (a schema that does not compile is
 * `ERR_INVALID_OPTION` there), into one step that runs after the
 * middleware and before the route's handlers.
 *
 * Path parameters, the query and headers arrive as strings, so their
 * validator coerces (`'5'` to `5` for an integer, one value to an array for
 * an array); the body's does not: JSON has types. Coerced values and
 * defaults (`useDefaults`) are written into `req.params`, `req.query` and
 * the parsed body; headers are checked on a copy, `req.headers` keeps its
 * strings.
 */
import { createRequire } from 'node:module';
import type { Ajv, ErrorObject, ValidateFunction } from 'ajv';
import { SwitchboardError } from '../errors.js';
import { HttpError } from './http-error.js';
import type { Request } from './request.js';
import type { Handler } from './router.js';

/** A JSON Schema (draft-07, ajv's default dialect): an object, or `true`/`false`. */
export type JsonSchema = { [keyword: string]: unknown } | boolean;

/** What a route validates; each part is optional. */
export interface RouteSchema {
  /** `req.params` (strings, coerced). */
  params?: JsonSchema;
  /** `req.query` (strings or arrays of strings, coerced). */
  query?: JsonSchema;
  /** `req.headers` (lowercase names, strings; coerced on a copy). */
  headers?: JsonSchema;
  /** The body, read as JSON (`application/json` or `application/*+json`; other types: 415); then `req.body`. */
  body?: JsonSchema;
}

export type ValidationLocation = 'params' | 'query' | 'headers' | 'body';

/** One reason a request failed validation: where, the JSON Pointer of the value, and what is wrong with it. */
export interface ValidationDetail {
  location: ValidationLocation;
  /** JSON Pointer into the location (`''` is the whole of it); for a missing or extra property, that property. */
  path: string;
  message: string;
}

/** Checked in this order: the cheap ones first, so a request they refuse has its body left unread. */
const LOCATIONS: readonly ValidationLocation[] = ['params', 'query', 'headers', 'body'];

let instances: { strict: Ajv; coercing: Ajv } | undefined;

/** The thread's two ajv instances, made at the first schema (they cost a few milliseconds). */
function ajvFor(location: ValidationLocation): Ajv {
  instances ??= { strict: makeAjv(false), coercing: makeAjv(true) };
  return location === 'body' ? instances.strict : instances.coercing;
}

// Loaded at the first schema, not with the package: ajv and its formats
// take about 20 ms to load, paid by every worker of an app without schemas.
const load = createRequire(import.meta.url);

function makeAjv(coerce: boolean): Ajv {
  const { Ajv } = load('ajv') as typeof import('ajv');
  const addFormats = load('ajv-formats') as typeof import('ajv-formats');
  const ajv = new Ajv({
    // The first error of each location only: ajv's advice for untrusted
    // input (with allErrors, a body of many bad items costs one error each).
    allErrors: false,
    useDefaults: true,
    coerceTypes: coerce ? 'array' : false,
    // Unknown keywords and formats are mistakes in the schema: refuse them
    // at registration. Type-strictness (a `properties` without `type`)
    // would refuse valid schemas, and ajv would log it to the console.
    strictSchema: true,
    strictNumbers: true,
    strictTypes: false,
    strictTuples: false,
    strictRequired: false,
  });
  addFormats.default(ajv);
  return ajv;
}

function compileOne(location: ValidationLocation, schema: unknown, route: string): ValidateFunction {
  if (typeof schema !== 'boolean' && (typeof schema !== 'object' || schema === null || Array.isArray(schema))) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `route ${route}: schema.${location} must be a JSON Schema (an object or a boolean)`);
  }
  const ajv = ajvFor(location);
  try {
    return ajv.compile(schema);
  } catch (error) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `route ${route}: schema.${location} does not compile: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  } finally {
    // The instances are shared by every server of the thread: they keep no
    // route's schema (its validator holds what it needs), so two routes may
    // use the same `$id` and a closed server's schemas are freed.
    if (typeof schema === 'object') ajv.removeSchema(schema);
  }
}

/**
 * The validation step of a route, or undefined when `schema` validates
 * nothing. `route` names the route in errors (`POST /users`).
 */
export function compileRouteSchema(schema: RouteSchema, route: string): Handler | undefined {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `route ${route}: schema must be an object of params, query, headers and body`);
  }
  for (const key of Object.keys(schema)) {
    if (!(LOCATIONS as readonly string[]).includes(key)) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `route ${route}: schema.${key} is not a part of a request (params, query, headers, body)`);
    }
  }
  const compiled = (location: ValidationLocation) => (schema[location] === undefined ? undefined : compileOne(location, schema[location], route));
  const params = compiled('params');
  const query = compiled('query');
  const headers = compiled('headers');
  const body = compiled('body');
  if (!params && !query && !headers && !body) return undefined;

  return function validateRequest(req, _res, next) {
    const details: ValidationDetail[] = [];
    if (params) check(params, req.params, 'params', details);
    if (query) check(query, req.query, 'query', details);
    if (headers) check(headers, { ...req.headers }, 'headers', details);
    if (details.length > 0) throw validationError(details);
    if (!body) return next();
    return validateBody(req, body).then(() => {
      next();
    });
  };
}

async function validateBody(req: Request, validate: ValidateFunction): Promise<void> {
  let value: unknown;
  if (req.bodyReader) {
    const contentType = req.header('content-type');
    if (!isJson(contentType)) {
      throw new HttpError(415, 'ERR_HTTP_UNSUPPORTED_MEDIA_TYPE', `this route takes an application/json body, got ${contentType === undefined ? 'no Content-Type' : JSON.stringify(contentType)}`);
    }
    value = await req.json();
  }
  const details: ValidationDetail[] = [];
  check(validate, value, 'body', details);
  if (details.length > 0) throw validationError(details);
  req.body = value;
}

/** `application/json` or `application/<anything>+json`, parameters aside. */
function isJson(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const semicolon = contentType.indexOf(';');
  const type = (semicolon < 0 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

function check(validate: ValidateFunction, data: unknown, location: ValidationLocation, out: ValidationDetail[]): void {
  if (validate(data)) return;
  for (const error of validate.errors ?? []) out.push(detail(location, error));
}

function detail(location: ValidationLocation, error: ErrorObject): ValidationDetail {
  let path = error.instancePath;
  const params = error.params as { missingProperty?: unknown; additionalProperty?: unknown };
  const property = error.keyword === 'required' ? params.missingProperty : error.keyword === 'additionalProperties' ? params.additionalProperty : undefined;
  if (typeof property === 'string') path += `/${property.replace(/~/g, '~0').replace(/\//g, '~1')}`;
  return { location, path, message: error.message ?? 'is invalid' };
}

function validationError(details: ValidationDetail[]): HttpError {
  const first = details[0]!;
  const more = details.length > 1 ? ` (and ${details.length - 1} more)` : '';
  return new HttpError(400, 'ERR_HTTP_VALIDATION', `invalid ${first.location}${first.path === '' ? '' : ` at ${first.path}`}: ${first.message}${more}`, { details });
}
