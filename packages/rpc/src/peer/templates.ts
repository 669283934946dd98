/**
 * Typed message templates (sockety's "drafts"): a name with the types of
 * its payload and its response, so that calls and handlers type-check.
 *
 * ```ts
 * const add = defineAction<{ a: number; b: number }, number>('add');
 * const sum = await peer.call(add, { a: 1, b: 2 }); // number
 * const handler = add.implement(({ a, b }) => a + b);
 * ```
 */

import type { IncomingCall, IncomingHandler } from './incoming.js';

declare const actionTypes: unique symbol;

export interface Action<Req = unknown, Res = unknown> {
  readonly name: string;
  /** Types only: never present at run time. */
  readonly [actionTypes]?: { request: Req; response: Res };
  /** The call's payload, decoded (and checked by the template's `parse`, if it has one). */
  decode(call: IncomingCall): Req;
  /**
   * A handler for this action: `fn` gets the decoded payload; what it
   * returns is the reply, with the usual handler rules (see `Peer`).
   */
  implement(fn: (payload: Req, call: IncomingCall) => Res | Promise<Res>): IncomingHandler;
}

export interface ActionOptions<Req> {
  /** Checks (and may convert) a received payload; throw an error with a `code` to refuse it. */
  parse?: (payload: unknown) => Req;
}

/** The payload type of an action. */
export type RequestOf<A> = A extends Action<infer Req, unknown> ? Req : never;
/** The response type of an action. */
export type ResponseOf<A> = A extends Action<unknown, infer Res> ? Res : never;

/**
 * Arguments after the action: the payload is optional when its type is void
 * or undefined. `NoInfer`: the action alone fixes `Req`; otherwise a payload
 * such as `[1, '2']` would widen it and pass for `[number, number]`.
 */
export type PayloadArgs<Req, Options> = [Req] extends [void]
  ? [payload?: NoInfer<Req>, options?: Options]
  : [payload: NoInfer<Req>, options?: Options];

/** Declares an action with its payload and response types. */
export function defineAction<Req = void, Res = void>(name: string, options: ActionOptions<Req> = {}): Action<Req, Res> {
  if (typeof name !== 'string' || name.length === 0) throw new TypeError('an action name is a non-empty string');
  const parse = options.parse;
  const decode = (call: IncomingCall): Req => {
    const payload = call.decode();
    return parse === undefined ? (payload as Req) : parse(payload);
  };
  return Object.freeze({
    name,
    decode,
    implement(fn: (payload: Req, call: IncomingCall) => Res | Promise<Res>): IncomingHandler {
      return (call: IncomingCall) => fn(decode(call), call);
    },
  });
}

/** The action's name, for a string or a template. */
export function actionName(action: string | { readonly name: string }): string {
  return typeof action === 'string' ? action : action.name;
}
