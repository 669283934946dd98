/**
 * Remote objects, qrpc-style: `wrap<Api>(peer).add(1, 2)` calls action
 * `add` with the payload `[1, 2]`; `exposeObject(impl)` is the handler
 * that answers such calls from an object's methods.
 */

import type { CallOptions } from './calls.js';
import { RpcError, RpcErrorCode } from './errors.js';
import type { IncomingCall, IncomingHandler } from './incoming.js';

/** What `wrap` needs: a `call` (a `Peer` is one). */
export interface Caller {
  call(action: string, payload?: unknown, options?: CallOptions): Promise<unknown>;
}

/** The methods of `T`, each returning a promise of its (awaited) result. */
export type Promisified<T> = {
  [K in keyof T as K extends string ? (T[K] extends (...args: never[]) => unknown ? K : never) : never]: T[K] extends (
    ...args: infer A
  ) => infer R
    ? (...args: A) => Promise<Awaited<R>>
    : never;
};

export interface WrapOptions {
  /** Prepended to every method name to form the action (e.g. `math.`). */
  prefix?: string;
  /** Options for every call (timeoutMs, signal…). */
  callOptions?: CallOptions;
}

/**
 * A proxy whose every method calls the action of that name with the
 * arguments array as payload. Results follow the handler rules at the
 * other end (a method returning a small non-negative integer answers with
 * a fast reply, which arrives as that number; `undefined` as an END). The
 * proxy has no `then`, so it can be returned from async functions.
 */
export function wrap<T extends object>(peer: Caller, options: WrapOptions = {}): Promisified<T> {
  const prefix = options.prefix ?? '';
  const callOptions = options.callOptions;
  const methods = new Map<string, (...args: unknown[]) => Promise<unknown>>();
  const target: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  return new Proxy(target, {
    get(_target, property) {
      if (typeof property !== 'string' || property === 'then') return undefined;
      let method = methods.get(property);
      if (method === undefined) {
        const action = prefix + property;
        method = (...args: unknown[]) => peer.call(action, args, callOptions);
        methods.set(property, method);
      }
      return method;
    },
  }) as Promisified<T>;
}

export interface ExposeOptions {
  /** Only actions starting with it are served, the rest of the name being the method (e.g. `math.`). */
  prefix?: string;
  /** Passes the IncomingCall as an extra last argument (for its signal, streams, files…). */
  passCall?: boolean;
}

type Method = (...args: unknown[]) => unknown;

/** A method of `target` or of its prototypes (not Object's), public by convention (no `_` prefix, not the constructor). */
function findMethod(target: object, name: string): Method | undefined {
  if (name === 'constructor' || name.startsWith('_')) return undefined;
  let object: object | null = target;
  while (object !== null && object !== Object.prototype && object !== Function.prototype) {
    const descriptor = Object.getOwnPropertyDescriptor(object, name);
    if (descriptor !== undefined) return typeof descriptor.value === 'function' ? (descriptor.value as Method) : undefined;
    object = Object.getPrototypeOf(object) as object | null;
  }
  return undefined;
}

/**
 * A handler dispatching actions to `target`'s methods. The payload is the
 * arguments array (another payload is one argument, none is no argument).
 * Unknown names (and `_`-prefixed ones, `constructor`, Object's methods)
 * are answered with `ERR_NOT_IMPLEMENTED`. The method's result or exception
 * is the reply, with the usual handler rules.
 */
export function exposeObject(target: object, options: ExposeOptions = {}): IncomingHandler {
  const prefix = options.prefix ?? '';
  const passCall = options.passCall === true;
  return (call: IncomingCall) => {
    const name = call.action.startsWith(prefix) ? call.action.slice(prefix.length) : undefined;
    const method = name === undefined ? undefined : findMethod(target, name);
    if (method === undefined) {
      throw new RpcError(RpcErrorCode.NotImplemented, `no method for "${call.action}"`);
    }
    const payload = call.decode();
    const args = Array.isArray(payload) ? [...(payload as unknown[])] : payload === undefined ? [] : [payload];
    if (passCall) args.push(call);
    return method.apply(target, args);
  };
}
