/**
 * The application's RPC service: the handlers of Switchboard protocol
 * calls (docs/protocol.md), registered by the app module in every worker.
 *
 * A call runs through a fixed chain, in the spirit of sockety's message
 * handler: middleware (in registration order, each deciding whether to go
 * on with `next()`), then the action's handler, or the fallback for unknown
 * actions. What the chain returns becomes the reply (see `IncomingCall` in
 * switchboard-rpc: a non-negative integer is a fast reply, `undefined`
 * ends the call, anything else is one response); what it throws goes
 * through the error handler, or becomes an ERROR with the error's `code`.
 */
import {
  type Action,
  BUILTIN_PREFIX,
  type IncomingCall,
  RpcError,
  RpcErrorCode,
  type ExposeOptions,
  exposeObject,
  isBuiltinAction,
} from 'switchboard-rpc';
import { SwitchboardError } from '../errors.js';
import { type RpcWorkerOptions, rpcWorkerOptions } from '../options.js';
import type { RpcConnection } from './connection.js';
import { ClientSubscriptions, type SubscribeHook } from './subscriptions.js';

/** A call as handlers see it: the protocol's incoming call and its connection. */
export interface RpcCall extends IncomingCall {
  /** The connection the call came on (it can call back: `call.connection.call(...)`). */
  readonly connection: RpcConnection;
}

/** The handler of one action. Its result becomes the reply. */
export type RpcHandler = (call: RpcCall) => unknown;
/** Middleware: runs before the action; call `next()` to go on, or return a reply yourself. */
export type RpcMiddleware = (call: RpcCall, next: () => Promise<unknown>) => unknown;
/** Turns an error of the chain into a reply (return a value) or another error (throw). */
export type RpcErrorHandler = (error: unknown, call: RpcCall) => unknown;

export interface RpcServiceHooks {
  /** A client completed its handshake. */
  open?(connection: RpcConnection): unknown;
  /** A client's connection ended (its pending calls were already failed). */
  close?(connection: RpcConnection, code: number, reason: string): unknown;
  /** May this client subscribe itself to this channel? (`onSubscribe`) */
  subscribe?: SubscribeHook;
}

export class RpcService {
  private readonly middleware: RpcMiddleware[] = [];
  private readonly actions = new Map<string, RpcHandler>();
  private fallbackHandler: RpcHandler = (call) => {
    throw new RpcError(RpcErrorCode.NotImplemented, `no handler for action ${JSON.stringify(call.action)}`);
  };
  private errorHandler: RpcErrorHandler | undefined;
  /** @internal */ readonly hooks: RpcServiceHooks = {};
  /** @internal The server's `rpc` options that connections in this thread apply. */
  limits: RpcWorkerOptions = rpcWorkerOptions();

  /** Add middleware; it runs for every call and one-way message, in the order added. */
  use(middleware: RpcMiddleware): this {
    if (typeof middleware !== 'function') throw new SwitchboardError('ERR_INVALID_OPTION', 'middleware must be a function');
    this.middleware.push(middleware);
    return this;
  }

  /** Handle `action` (a name or a `defineAction` template). */
  action<Req, Res>(action: string | Action<Req, Res>, handler: (call: RpcCall) => Res | Promise<Res> | void | Promise<void>): this {
    const name = typeof action === 'string' ? action : action.name;
    const bytes = new TextEncoder().encode(name).length;
    if (bytes < 1 || bytes > 255) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `an action name is 1..255 bytes of UTF-8, got ${JSON.stringify(name)}`);
    }
    if (isBuiltinAction(name)) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `action names starting with ${JSON.stringify(BUILTIN_PREFIX)} are the protocol's own, got ${JSON.stringify(name)}`);
    }
    if (this.actions.has(name)) throw new SwitchboardError('ERR_INVALID_OPTION', `action ${JSON.stringify(name)} is registered already`);
    this.actions.set(name, handler as RpcHandler);
    return this;
  }

  /** Handle actions no handler is registered for (default: `ERR_NOT_IMPLEMENTED`). */
  fallback(handler: RpcHandler): this {
    this.fallbackHandler = handler;
    return this;
  }

  /** Map errors of the chain to replies or to other errors. */
  onError(handler: RpcErrorHandler): this {
    this.errorHandler = handler;
    return this;
  }

  /**
   * Be told when clients connect (to check their `connectData` or TLS
   * certificate, set `connection.data`, call them). While a promise the
   * hook returns is pending, the connection's calls wait: none is
   * dispatched before it resolves. Throwing (or rejecting with) an
   * `RpcError` refuses the client: it gets a GO_AWAY with that code and
   * message, and the connection closes; any other error is reported as
   * `handlerError` and closes it with `ERR_HANDLER_FAILED`.
   */
  onOpen(hook: (connection: RpcConnection) => void | Promise<void>): this {
    this.hooks.open = hook;
    return this;
  }

  onClose(hook: (connection: RpcConnection, code: number, reason: string) => void | Promise<void>): this {
    this.hooks.close = hook;
    return this;
  }

  /**
   * Let clients subscribe themselves to channels (`client.subscribe(channel)`,
   * the built-in `$sb.subscribe` call of docs/protocol.md §10). The hook
   * decides per connection and channel: exactly `true` (or a promise of
   * it) subscribes the connection, natively, so that `publish(channel, ...)`
   * reaches it with no JavaScript per recipient; `false` refuses with
   * `ERR_SUBSCRIPTION_REFUSED`; throwing an `RpcError` refuses with its code
   * and message (any other error answers `ERR_HANDLER_FAILED` and is
   * reported as `handlerError`). Without a hook every subscription is
   * refused. The built-in calls do not run through `use()` middleware: this
   * hook is their authorisation. A client's subscriptions end with its
   * connection; unsubscribing needs no permission.
   */
  onSubscribe<UserData = unknown>(hook: SubscribeHook<UserData>): this {
    if (typeof hook !== 'function') throw new SwitchboardError('ERR_INVALID_OPTION', 'the onSubscribe hook must be a function');
    this.hooks.subscribe = hook as SubscribeHook;
    return this;
  }

  /**
   * Expose an object's methods as actions (qrpc's `wrap`): a call to
   * `prefix + name` with an array payload runs `object[name](...args)`.
   * Names starting with `_`, the constructor and `Object.prototype`'s
   * methods are not exposed. The client side is `wrap<Api>(client)`.
   */
  expose(object: object, options: ExposeOptions = {}): this {
    const handler = exposeObject(object, options);
    const prefix = options.prefix ?? '';
    let proto: object | null = object;
    const names = new Set<string>();
    while (proto && proto !== Object.prototype) {
      for (const name of Object.getOwnPropertyNames(proto)) {
        if (name === 'constructor' || name.startsWith('_')) continue;
        if (typeof (object as Record<string, unknown>)[name] === 'function') names.add(name);
      }
      proto = Object.getPrototypeOf(proto) as object | null;
    }
    for (const name of names) this.action(prefix + name, (call) => handler(call));
    return this;
  }

  /** Names of the registered actions. */
  get actionNames(): string[] {
    return [...this.actions.keys()];
  }

  /** @internal Run one call through the chain. */
  dispatch(call: RpcCall): unknown {
    if (isBuiltinAction(call.action)) return this.builtin(call);
    const handler = this.actions.get(call.action) ?? this.fallbackHandler;
    if (this.middleware.length === 0 && !this.errorHandler) return handler(call);
    return this.runChain(call, handler);
  }

  /** `$sb.*`: the protocol's own actions, outside the chain (see `onSubscribe`). */
  private builtin(call: RpcCall): unknown {
    const connection = call.connection;
    connection.clientSubscriptions ??= new ClientSubscriptions(connection, this.limits.maxSubscriptions);
    return connection.clientSubscriptions.handle(call, this.hooks.subscribe);
  }

  private async runChain(call: RpcCall, handler: RpcHandler): Promise<unknown> {
    const step = async (index: number): Promise<unknown> => {
      const middleware = this.middleware[index];
      if (!middleware) return handler(call);
      let called = false;
      return middleware(call, () => {
        if (called) throw new SwitchboardError('ERR_INVALID_OPTION', 'next() called twice by one middleware');
        called = true;
        return step(index + 1);
      });
    };
    try {
      return await step(0);
    } catch (error) {
      if (!this.errorHandler) throw error;
      return this.errorHandler(error, call);
    }
  }
}
