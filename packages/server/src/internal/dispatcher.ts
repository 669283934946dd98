/**
 * Runs one worker's handlers. Every event goes to the handler of its kind
 * (one table entry per native event kind, `HANDLERS`): an opening event
 * (OPEN, RPC_OPEN) creates the connection's state, and the connection's
 * later events (MESSAGE, DRAIN, CLOSE) go to that state, whatever its kind
 * (`connection-state.ts`). Each state keeps its connection's events in
 * order through a serial queue: when a handler returns a promise, the
 * connection's later events wait for it (other connections do not). A
 * handler that throws or rejects closes only its own connection, and the
 * error is reported.
 */
import type { App, UpgradeResponse } from '../app.js';
import { type NativeServerHandle, native } from '../native.js';
import { UpgradeRejection } from '../errors.js';
import { WebSocket } from '../websocket.js';
import { decodeFrame, type HelloFrame, type WelcomeFrame } from 'switchboard-rpc';
import { RpcConnection } from '../rpc/connection.js';
import { tlsInfo } from '../tls.js';
import type { ConnectionHost, ConnectionState, HandlerFailure } from './connection-state.js';
import {
  KIND_CLOSE,
  KIND_DRAIN,
  KIND_HTTP_BODY,
  KIND_HTTP_BODY_ERROR,
  KIND_HTTP_FILE_DONE,
  KIND_HTTP_OPEN,
  KIND_HTTP_REQUEST,
  KIND_MESSAGE,
  KIND_OPEN,
  KIND_RPC_OPEN,
  KIND_SOCKJS_SENT,
  KIND_UPGRADE,
  type CloseEvent,
  type HttpOpenEvent,
  type NativeEvent,
  type OpenEvent,
  type RpcOpenEvent,
  type UpgradeEvent,
  decodeBatch,
} from './events.js';
import { HttpState } from './http-state.js';
import { RpcState } from './rpc-state.js';
import { isThenable } from './serial-queue.js';
import { WebSocketState } from './websocket-state.js';

export type { HandlerFailure } from './connection-state.js';

/**
 * How long one turn of the worker's event loop may spend on events (ms).
 * Small against the watchdog's interval (500 ms), large against the cost of
 * yielding to the event loop.
 */
const DISPATCH_SLICE_MS = 20;
/** A wake-up this soon after a drain ended is taken as part of the same stretch of work. */
const CHAINED_WAKE_MS = 1;

type EventHandlers = {
  readonly [K in NativeEvent['kind']]: (dispatcher: Dispatcher, event: Extract<NativeEvent, { kind: K }>) => void;
};

export class Dispatcher {
  /**
   * What each kind of native event does: one entry per kind (the type makes
   * a missing one an error). A new kind of connection is one more opening
   * event here and a state of the same shape; its messages, drains and
   * close need no entry of their own.
   */
  private static readonly HANDLERS: EventHandlers = {
    [KIND_UPGRADE]: (d, event) => d.upgrade(event),
    [KIND_OPEN]: (d, event) => d.openWebSocket(event),
    [KIND_RPC_OPEN]: (d, event) => d.openRpc(event),
    [KIND_MESSAGE]: (d, event) => d.connections.get(event.id)?.message(event),
    [KIND_DRAIN]: (d, event) => d.connections.get(event.id)?.drain(event),
    // In turn with the session's handlers; at once when it is gone (the
    // send's answer waits for it).
    [KIND_SOCKJS_SENT]: (d, event) => {
      const state = d.connections.get(event.id);
      if (state?.sent) state.sent(event);
      else d.handle.sockjsSent(event.http);
    },
    [KIND_CLOSE]: (d, event) => d.close(event),
    [KIND_HTTP_OPEN]: (d, event) => d.openHttp(event),
    [KIND_HTTP_REQUEST]: (d, event) => d.http(event.id)?.request(event),
    [KIND_HTTP_BODY]: (d, event) => d.http(event.id)?.body(event),
    [KIND_HTTP_BODY_ERROR]: (d, event) => d.http(event.id)?.bodyFailed(event),
    [KIND_HTTP_FILE_DONE]: (d, event) => d.http(event.id)?.fileDone(event),
  };

  /** Open connections of every kind, by id. */
  private readonly connections = new Map<number, ConnectionState>();
  /** Data attached by `upgrade`, waiting for the connection's `open`. */
  private readonly upgraded = new Map<number, unknown>();
  /** The rest of a batch whose slice ran out (see `drain`). */
  private pending: { batch: Buffer; offset: number; owned: readonly Buffer[] | undefined } | null = null;
  private resumeScheduled = false;
  /** When the last drain ended, and when the stretch of drains it belongs to began (see `wake`). */
  private lastDrainEnd = 0;
  private busySince = 0;
  /** `handle.id`, read once (see `native.ts` on the module functions). */
  private readonly serverId: number;
  /** What the connection states use of the dispatcher. */
  private readonly host: ConnectionHost;
  /** Handed to `decodeBatch` for every event: made once, not per batch. */
  private readonly onEvent: (event: NativeEvent) => void;

  constructor(
    private readonly app: App,
    private readonly handle: NativeServerHandle,
    private readonly workerIndex: number,
    private readonly report: (failure: HandlerFailure) => void,
  ) {
    this.serverId = this.handle.id;
    this.host = {
      handle,
      report,
      forget: (id) => {
        this.connections.delete(id);
        if (id === this.lastHttpId) {
          this.lastHttpId = -1;
          this.lastHttp = undefined;
        }
      },
    };
    const handlers = Dispatcher.HANDLERS as unknown as Record<number, (dispatcher: Dispatcher, event: NativeEvent) => void>;
    this.onEvent = (event) => handlers[event.kind]!(this, event);
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
        const stoppedAt = decodeBatch(batch, this.onEvent, offset, deadline, owned);
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
      this.lastDrainEnd = performance.now();
    }
  }

  /**
   * The native queue's wake-up (a thread-safe function call). Node runs
   * queued thread-safe calls back to back, up to 1,000 before it returns to
   * the event loop, and the native queue wakes a worker once per drain: a
   * worker behind its I/O thread thus drained inside one such run, slice
   * after slice, for seconds, without answering the watchdog (1,000
   * clients with 16 messages in flight each: the worker was replaced and
   * every client got 1011). So a wake-up drains at once (a reply leaves
   * without waiting for the loop) unless the thread has been draining with
   * no pause for a slice already; then the drain waits for the loop's next
   * turn, where the watchdog and timers get theirs.
   */
  wake(): void {
    if (this.resumeScheduled) return;
    const now = performance.now();
    if (now - this.lastDrainEnd > CHAINED_WAKE_MS) this.busySince = now;
    else if (now - this.busySince > DISPATCH_SLICE_MS) {
      this.resumeSoon();
      return;
    }
    this.drain();
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
      this.busySince = performance.now();
      this.drain();
    });
  }

  get openConnections(): number {
    return this.connections.size;
  }

  private openWebSocket(event: OpenEvent): void {
    const route = this.app.routes[event.route];
    if (!route) return;
    const data = this.upgraded.get(event.id);
    this.upgraded.delete(event.id);
    const ws = new WebSocket(
      this.handle,
      this.serverId,
      event.id,
      data,
      event.remoteAddress,
      event.protocol,
      event.extensions,
      tlsInfo(event.tls),
    );
    const state = new WebSocketState(this.host, ws, route.behavior);
    this.connections.set(event.id, state);
    state.open(event);
  }

  private openHttp(event: HttpOpenEvent): void {
    this.connections.set(event.id, new HttpState(this.host, this.app, this.serverId, event));
  }

  /** The HTTP state of connection `id` (requests come after its HTTP_OPEN). */
  /**
   * The HTTP connection `id`. A connection's pipelined requests (and a
   * request's body pieces) come one after another in a batch: the last one
   * looked up is kept, so they cost one Map lookup, not one each.
   */
  private http(id: number): HttpState | undefined {
    if (id === this.lastHttpId) return this.lastHttp;
    const state = this.connections.get(id);
    if (!(state instanceof HttpState)) return undefined;
    this.lastHttpId = id;
    this.lastHttp = state;
    return state;
  }

  private lastHttpId = -1;
  private lastHttp: HttpState | undefined;

  private openRpc(event: RpcOpenEvent): void {
    // Data an `upgrade` hook attached (a protocol WebSocket, a SockJS
    // session) is not the protocol's: its open hook reads the connect data.
    this.upgraded.delete(event.id);
    const hello = decodeFrame(event.hello, 0, Number.MAX_SAFE_INTEGER)?.frame;
    const welcome = decodeFrame(event.welcome, 0, Number.MAX_SAFE_INTEGER)?.frame;
    if (hello?.type !== 'hello' || welcome?.type !== 'welcome') {
      this.handle.end(event.id, 1002, 'ERR_PROTOCOL_HANDSHAKE');
      return;
    }
    const service = this.app.rpc;
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
    const state = new RpcState(this.host, connection, service.hooks);
    this.connections.set(event.id, state);
    state.open(event);
  }

  private close(event: CloseEvent): void {
    const state = this.connections.get(event.id);
    if (state) {
      state.close(event);
    } else {
      // A close without an open: the client left between an accepting
      // `upgrade` hook and the 101. Forget the data the hook attached.
      this.upgraded.delete(event.id);
    }
  }

  /** Run the route's `upgrade` hook (or accept at once without one). */
  private upgrade(event: UpgradeEvent): void {
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
      tls: tlsInfo(event.tls),
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
      if (isThenable(result)) {
        Promise.resolve(result).then((data) => decide(true, 0, '', data), onError);
      } else {
        decide(true, 0, '', result);
      }
    } catch (error) {
      onError(error);
    }
  }
}
