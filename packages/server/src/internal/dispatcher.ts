/**
 * Runs one worker's handlers. Events of a connection are handled in order;
 * when a handler returns a promise, the connection's later events wait for
 * it (other connections do not). A handler that throws or rejects closes
 * only its own connection, with 1011, and the error is reported.
 */
import type { App, RegisteredRoute, UpgradeResponse } from '../app.js';
import { type NativeServerHandle, native } from '../native.js';
import { UpgradeRejection } from '../errors.js';
import { WebSocket } from '../websocket.js';
import { decodeFrame, RpcError, type HelloFrame, type WelcomeFrame } from 'switchboard-protocol';
import { RpcConnection } from '../rpc/connection.js';
import {
  KIND_CLOSE,
  KIND_DRAIN,
  KIND_MESSAGE,
  KIND_OPEN,
  KIND_RPC_OPEN,
  KIND_UPGRADE,
  type NativeEvent,
  type RpcOpenEvent,
  type UpgradeEvent,
  decodeBatch,
} from './events.js';

/** A handler failure, as reported to the main thread. */
export interface HandlerFailure {
  handler: 'upgrade' | 'open' | 'message' | 'drain' | 'close' | 'rpc';
  connection: number;
  error: unknown;
}

interface ConnectionState {
  ws: WebSocket<unknown>;
  route: RegisteredRoute;
  /** Events waiting for an async handler of this connection to settle. */
  backlog: NativeEvent[] | null;
  failed: boolean;
}

function handlerOf(event: NativeEvent): HandlerFailure['handler'] {
  switch (event.kind) {
    case KIND_UPGRADE:
      return 'upgrade';
    case KIND_OPEN:
      return 'open';
    case KIND_MESSAGE:
      return 'message';
    case KIND_DRAIN:
      return 'drain';
    default:
      return 'close';
  }
}

function isPromise(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as PromiseLike<unknown>).then === 'function';
}

/**
 * How long one turn of the worker's event loop may spend on events (ms).
 * Small against the watchdog's interval (500 ms), large against the cost of
 * yielding to the event loop.
 */
const DISPATCH_SLICE_MS = 20;

export class Dispatcher {
  private readonly connections = new Map<number, ConnectionState>();
  /** Switchboard protocol connections (their frames go to their peer). */
  private readonly rpc = new Map<number, RpcConnection>();
  /** Data attached by `upgrade`, waiting for the connection's `open`. */
  private readonly upgraded = new Map<number, unknown>();
  /** The rest of a batch whose slice ran out (see `drain`). */
  private pending: { batch: Buffer; offset: number; owned: readonly Buffer[] | undefined } | null = null;
  private resumeScheduled = false;
  /** `handle.id`, read once (see `native.ts` on the module functions). */
  private readonly serverId: number;

  constructor(
    private readonly app: App,
    private readonly handle: NativeServerHandle,
    private readonly workerIndex: number,
    private readonly report: (failure: HandlerFailure) => void,
  ) {
    this.serverId = this.handle.id;
  }

  /**
   * Handle what is queued for this worker, for at most `sliceMs`: a batch
   * can hold megabytes of events when the worker is behind, and a thread
   * that handled it in one go would not answer the watchdog (which then
   * replaced a busy but healthy worker) nor run its own timers. The rest of
   * a batch waits in `pending` and goes first on the next turn. Returns
   * true when nothing is left to handle.
   */
  drain(sliceMs = DISPATCH_SLICE_MS): boolean {
    const deadline = performance.now() + sliceMs;
    // Corked: what the handlers send to one connection during the slice
    // leaves in one vectored write when it ends.
    native.cork();
    try {
      // Events pushed while we handle these wake us again; a bounded number
      // of rounds leaves room for the rest of the thread's work.
      for (let round = 0; round < 16; round++) {
        let batch: Buffer;
        let offset = 0;
        // Large protocol frames come as buffers of their own, after the batch.
        let owned: readonly Buffer[] | undefined;
        if (this.pending) {
          ({ batch, offset, owned } = this.pending);
          this.pending = null;
        } else {
          const drained = native.drainEvents(this.serverId, this.workerIndex);
          if (Array.isArray(drained)) {
            owned = drained;
            batch = drained[0]!;
          } else {
            batch = drained;
            if (batch.length === 0) return true;
          }
        }
        const stoppedAt = decodeBatch(batch, (event) => this.onEvent(event), offset, deadline, owned);
        if (stoppedAt < batch.length) {
          this.pending = { batch, offset: stoppedAt, owned };
          break;
        }
        if (performance.now() > deadline) break;
      }
      // Out of time (or rounds) before the native queue was seen empty. The
      // wake-up that led here may have been spent without a drain (a
      // pending batch went first), and the queue wakes us only once per
      // drain: come back on our own.
      this.resumeSoon();
      return false;
    } finally {
      native.uncork();
    }
  }

  /** Handle everything queued, whatever it takes (at shutdown). */
  drainAll(): void {
    while (!this.drain(Infinity)) {
      // Until the native queue is empty too.
    }
  }

  /** Go on once the thread's other work (timers, the watchdog) has run. */
  private resumeSoon(): void {
    if (this.resumeScheduled) return;
    this.resumeScheduled = true;
    setImmediate(() => {
      this.resumeScheduled = false;
      this.drain();
    });
  }

  get openConnections(): number {
    return this.connections.size + this.rpc.size;
  }

  private onEvent(event: NativeEvent): void {
    const rpc = this.rpc.get(event.id);
    if (rpc) {
      this.onRpcEvent(rpc, event);
      return;
    }
    if (event.kind === KIND_RPC_OPEN) {
      this.onRpcOpen(event);
      return;
    }
    if (event.kind === KIND_UPGRADE) {
      this.onUpgrade(event);
      return;
    }
    if (event.kind === KIND_OPEN) {
      const route = this.app.routes[event.route];
      if (!route) return;
      const data = this.upgraded.get(event.id);
      this.upgraded.delete(event.id);
      const ws = new WebSocket(this.handle, this.serverId, event.id, data, event.remoteAddress, event.protocol, event.extensions);
      this.connections.set(event.id, { ws, route, backlog: null, failed: false });
    }
    const state = this.connections.get(event.id);
    if (!state) {
      // A close without an open: the client left between an accepting
      // `upgrade` hook and the 101. Forget the data the hook attached.
      if (event.kind === KIND_CLOSE) this.upgraded.delete(event.id);
      return;
    }
    if (state.backlog) {
      state.backlog.push(event);
      return;
    }
    this.run(state, event);
  }

  /** Handle one event; park the rest of the connection's events if async. */
  private run(state: ConnectionState, event: NativeEvent): void {
    const { ws, route } = state;
    const behavior = route.behavior;
    let handler: HandlerFailure['handler'];
    let result: unknown;
    try {
      switch (event.kind) {
        case KIND_OPEN:
          handler = 'open';
          result = behavior.open?.(ws as never);
          break;
        case KIND_MESSAGE:
          handler = 'message';
          if (state.failed) return;
          result = behavior.message?.(ws as never, event.data, event.isBinary);
          break;
        case KIND_DRAIN:
          handler = 'drain';
          if (state.failed) return;
          result = behavior.drain?.(ws as never);
          break;
        case KIND_CLOSE:
          handler = 'close';
          ws.isOpen = false;
          this.connections.delete(event.id);
          result = behavior.close?.(ws as never, event.code, event.reason);
          break;
        default:
          return;
      }
    } catch (error) {
      this.fail(state, handlerOf(event), error, event);
      return;
    }
    if (isPromise(result)) {
      state.backlog = [];
      Promise.resolve(result).then(
        () => this.resume(state),
        (error: unknown) => {
          this.fail(state, handler, error, event);
          this.resume(state);
        },
      );
    }
  }

  private resume(state: ConnectionState): void {
    const backlog = state.backlog ?? [];
    state.backlog = null;
    while (backlog.length > 0 && !state.backlog) {
      this.run(state, backlog.shift()!);
    }
    if (state.backlog && backlog.length > 0) {
      // A handler went async again: the remaining events wait behind it.
      (state.backlog as NativeEvent[]).unshift(...backlog);
    }
  }

  private fail(state: ConnectionState, handler: HandlerFailure['handler'], error: unknown, event: NativeEvent): void {
    this.report({ handler, connection: state.ws.id, error });
    if (!state.failed && event.kind !== KIND_CLOSE) {
      state.failed = true;
      this.handle.end(state.ws.id, 1011, 'ERR_HANDLER_FAILED');
    }
  }

  private onRpcOpen(event: RpcOpenEvent): void {
    const service = this.app.rpc;
    const hello = decodeFrame(event.hello, 0, Number.MAX_SAFE_INTEGER)?.frame;
    const welcome = decodeFrame(event.welcome, 0, Number.MAX_SAFE_INTEGER)?.frame;
    if (hello?.type !== 'hello' || welcome?.type !== 'welcome') {
      this.handle.end(event.id, 1002, 'ERR_PROTOCOL_HANDSHAKE');
      return;
    }
    const connection = new RpcConnection({
      handle: this.handle,
      serverId: this.serverId,
      id: event.id,
      transport: event.transport,
      remoteAddress: event.remoteAddress,
      tls: event.tls,
      // Views into the batch: copy what the connection keeps for its life.
      hello: { ...(hello as HelloFrame), seed: hello.seed.slice(), data: hello.data.slice() },
      welcome: { ...(welcome as WelcomeFrame), seed: welcome.seed.slice() },
      service,
      defaultTimeoutMs: this.app.rpcCallTimeoutMs,
      onHandlerError: (error, call) => this.report({ handler: 'rpc', connection: call.connection.id, error }),
    });
    this.rpc.set(event.id, connection);
    const refuse = (error: unknown) => {
      // An RpcError is the hook's answer (a refused token, say): the client
      // gets its code and message. Anything else is a bug in the hook.
      if (error instanceof RpcError) {
        connection.close(error.code, error.message);
      } else {
        this.report({ handler: 'open', connection: event.id, error });
        connection.close('ERR_HANDLER_FAILED');
      }
    };
    let opened: unknown;
    try {
      opened = service.hooks.open?.(connection);
    } catch (error) {
      refuse(error);
      return;
    }
    if (isThenable(opened)) {
      // No call is dispatched before the hook is done (it may be checking
      // the connect data): the frames wait, in order.
      connection.hold();
      opened.then(
        () => connection.release(),
        (error: unknown) => {
          connection.discardHeld();
          refuse(error);
        },
      );
    }
  }

  private onRpcEvent(connection: RpcConnection, event: NativeEvent): void {
    if (event.kind === KIND_MESSAGE) {
      connection.receive(event.data);
    } else if (event.kind === KIND_DRAIN) {
      connection.drained();
    } else if (event.kind === KIND_CLOSE) {
      this.rpc.delete(event.id);
      connection.closed(event.code, event.reason);
      try {
        const closed = this.app.rpc.hooks.close?.(connection, event.code, event.reason);
        if (isThenable(closed)) closed.then(undefined, (error: unknown) => this.report({ handler: 'close', connection: event.id, error }));
      } catch (error) {
        this.report({ handler: 'close', connection: event.id, error });
      }
    }
  }

  private onUpgrade(event: UpgradeEvent): void {
    const route = this.app.routes[event.route];
    const hook = route?.behavior.upgrade;
    if (!hook) {
      this.handle.resolveUpgrade(event.id, true, 0, '', null);
      return;
    }
    let decided = false;
    const decide = (accept: boolean, status: number, reason: string, data?: unknown, protocol?: string) => {
      if (decided) return;
      decided = true;
      if (accept) this.upgraded.set(event.id, data);
      const delivered = this.handle.resolveUpgrade(event.id, accept, status, reason, protocol ?? null);
      if (!delivered) this.upgraded.delete(event.id);
    };
    const res: UpgradeResponse<unknown> = {
      accept: (data, options) => decide(true, 0, '', data, options?.protocol),
      reject: (status, reason = '') => decide(false, status, reason),
    };
    const protocols = (event.headers['sec-websocket-protocol'] ?? '')
      .split(',')
      .map((p) => p.trim())
      .filter((p) => p.length > 0);
    const req = {
      path: event.path,
      query: event.query,
      searchParams: new URLSearchParams(event.query),
      headers: event.headers,
      remoteAddress: event.remoteAddress,
      protocols,
    };
    const onError = (error: unknown) => {
      if (error instanceof UpgradeRejection) {
        decide(false, error.status, error.message);
      } else {
        this.report({ handler: 'upgrade', connection: event.id, error });
        decide(false, 500, 'ERR_UPGRADE_REJECTED');
      }
    };
    try {
      const result = hook(req, res as UpgradeResponse<never>);
      if (isPromise(result)) {
        Promise.resolve(result).then((data) => decide(true, 0, '', data), onError);
      } else {
        decide(true, 0, '', result);
      }
    } catch (error) {
      onError(error);
    }
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}
