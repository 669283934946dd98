/**
 * The worker threads of a server: start, attach, watchdog, replacement and
 * shutdown. A worker that misses the watchdog deadline (default 3 s) or
 * exits is terminated and replaced; its connections are closed with 1011
 * natively, and every other worker goes on.
 */
import { Worker } from 'node:worker_threads';
import type { NativeHttpRoute, NativeRouteOptions, NativeServerHandle, NativeStaticDir, NativeStaticRoute } from '../native.js';
import { SwitchboardError } from '../errors.js';
import { type FromWorker, type ToWorker, deserializeError } from '../internal/worker-messages.js';
import type { RpcWorkerOptions } from '../options.js';
import type { BrokerSummary } from '../http/redis-store.js';

const ENTRY = new URL('./entry.js', import.meta.url);

export interface PoolEvents {
  handlerError(error: Error, info: { worker: number; handler: string; connection: number }): void;
  workerReplaced(info: { worker: number; code: 'ERR_WORKER_UNRESPONSIVE' | 'ERR_WORKER_EXITED' }): void;
}

interface Slot {
  worker: Worker;
  lastPong: number;
  /** Set while the slot is being replaced or shut down: its exit is expected. */
  retiring: boolean;
  /** Set once the worker attached to the native server; until then, whoever started it handles its failure. */
  attached: boolean;
  exited: Promise<void>;
}

export interface RouteTable {
  routes: NativeRouteOptions[];
  staticRoutes: NativeStaticRoute[];
  staticDirs: NativeStaticDir[];
  httpRoutes: NativeHttpRoute[];
}

export class WorkerPool {
  private readonly slots: Slot[] = [];
  private handle: NativeServerHandle | undefined;
  private timer: NodeJS.Timeout | undefined;
  private seq = 0;
  private closing = false;

  constructor(
    private readonly appSpecifier: string,
    private readonly count: number,
    private readonly watchdog: { interval: number; timeout: number },
    private readonly events: PoolEvents,
    /** The `rpc` options the workers apply themselves. */
    private readonly rpc: RpcWorkerOptions,
    /** The smallest whole response body the workers compress (`http.compression`). */
    private readonly compressThreshold: number,
    /** The broker as the workers' `app.sessionStore()` needs it. */
    private readonly broker: BrokerSummary | undefined,
  ) {}

  /** Start every worker; resolves with the route table they agree on. */
  async start(): Promise<RouteTable> {
    const tables = await Promise.all(Array.from({ length: this.count }, (_, i) => this.spawn(i)));
    const shape = (t: RouteTable) => JSON.stringify([t.routes, t.httpRoutes, t.staticDirs]);
    const first = shape(tables[0]!);
    if (tables.some((t) => shape(t) !== first)) {
      await this.terminateAll();
      throw new SwitchboardError('ERR_ROUTES_DIFFER', 'workers registered different routes');
    }
    return tables[0]!;
  }

  /** Attach every worker to the native server and start the watchdog. */
  async attach(handle: NativeServerHandle): Promise<void> {
    this.handle = handle;
    await Promise.all(this.slots.map((slot) => this.attachSlot(slot, handle.id)));
    this.timer = setInterval(() => this.tick(), this.watchdog.interval);
    this.timer.unref();
  }

  private spawn(index: number): Promise<RouteTable> {
    const worker = new Worker(ENTRY, { workerData: { app: this.appSpecifier, index, rpc: this.rpc, compressThreshold: this.compressThreshold, broker: this.broker } });
    const slot: Slot = {
      worker,
      lastPong: Date.now(),
      retiring: false,
      attached: false,
      exited: new Promise((resolve) => worker.once('exit', () => resolve())),
    };
    this.slots[index] = slot;
    return new Promise((resolve, reject) => {
      const onMessage = (message: FromWorker) => {
        if (message.type === 'routes') {
          worker.off('message', onMessage);
          resolve({ routes: message.routes, staticRoutes: message.staticRoutes, staticDirs: message.staticDirs, httpRoutes: message.httpRoutes });
        } else if (message.type === 'load-error') {
          worker.off('message', onMessage);
          reject(new SwitchboardError('ERR_APP_LOAD', deserializeError(message.error).message, {
            cause: deserializeError(message.error),
          }));
        }
      };
      worker.on('message', onMessage);
      worker.on('message', (message: FromWorker) => this.onMessage(index, message));
      worker.once('error', (error) => {
        if (!slot.retiring) reject(new SwitchboardError('ERR_APP_LOAD', error.message, { cause: error }));
      });
      // Exiting before reporting its routes (process.exit in the app module)
      // must fail the start too, not leave it pending forever.
      worker.once('exit', (code) =>
        reject(new SwitchboardError('ERR_APP_LOAD', `the worker exited with code ${code} while loading the app`)),
      );
      worker.once('exit', () => this.onExit(index, slot));
    });
  }

  private attachSlot(slot: Slot, serverId: number): Promise<void> {
    return new Promise((resolve, reject) => {
      void slot.exited.then(() =>
        reject(new SwitchboardError('ERR_WORKER_EXITED', 'the worker exited before it attached')),
      );
      const onMessage = (message: FromWorker) => {
        if (message.type === 'attached') {
          slot.worker.off('message', onMessage);
          slot.lastPong = Date.now();
          slot.attached = true;
          resolve();
        }
      };
      slot.worker.on('message', onMessage);
      this.post(slot, { type: 'attach', serverId });
    });
  }

  private post(slot: Slot, message: ToWorker): void {
    slot.worker.postMessage(message);
  }

  private onMessage(index: number, message: FromWorker): void {
    const slot = this.slots[index];
    if (!slot) return;
    if (message.type === 'pong') {
      slot.lastPong = Date.now();
    } else if (message.type === 'handler-error') {
      this.events.handlerError(deserializeError(message.error), {
        worker: index,
        handler: message.handler,
        connection: message.connection,
      });
    }
  }

  private onExit(index: number, slot: Slot): void {
    if (slot.retiring || !slot.attached || this.closing || this.slots[index] !== slot) return;
    void this.replace(index, 'ERR_WORKER_EXITED');
  }

  private tick(): void {
    const now = Date.now();
    this.slots.forEach((slot, index) => {
      if (slot.retiring || !slot.attached) return;
      if (now - slot.lastPong > this.watchdog.timeout) {
        void this.replace(index, 'ERR_WORKER_UNRESPONSIVE');
      } else {
        this.post(slot, { type: 'ping', seq: ++this.seq });
      }
    });
  }

  /** Terminate worker `index`, close its connections, start a fresh one. */
  private async replace(index: number, code: 'ERR_WORKER_UNRESPONSIVE' | 'ERR_WORKER_EXITED'): Promise<void> {
    const old = this.slots[index];
    if (!old || old.retiring || this.closing || !this.handle) return;
    old.retiring = true;
    this.handle.workerDied(index);
    await old.worker.terminate();
    if (this.closing) return;
    this.events.workerReplaced({ worker: index, code });
    await this.respawn(index, 0);
  }

  /**
   * Start a fresh worker in slot `index`. One that fails to start (the app
   * module now throws, say) is reported and retried after a growing delay:
   * without it, its exit would trigger an immediate replacement, in a tight
   * loop of worker threads for as long as the server runs.
   */
  private async respawn(index: number, attempt: number): Promise<void> {
    if (this.closing || !this.handle) return;
    try {
      await this.spawn(index);
      const slot = this.slots[index]!;
      await this.attachSlot(slot, this.handle.id);
    } catch (error) {
      const failed = this.slots[index];
      // Its exit is expected now: the retry below replaces it.
      if (failed) failed.retiring = true;
      await failed?.worker.terminate();
      if (this.closing) return;
      this.events.handlerError(error as Error, { worker: index, handler: 'load', connection: 0 });
      const delay = Math.min(100 * 2 ** attempt, 5000);
      setTimeout(() => void this.respawn(index, attempt + 1), delay).unref();
    }
  }

  /** After the native server closed: deliver the last events, then stop every worker. */
  async shutdown(graceMs: number): Promise<void> {
    this.closing = true;
    if (this.timer) clearInterval(this.timer);
    await Promise.all(
      this.slots.map(async (slot) => {
        slot.retiring = true;
        this.post(slot, { type: 'final-drain' });
        const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), graceMs).unref());
        if ((await Promise.race([slot.exited, timeout])) === 'timeout') await slot.worker.terminate();
      }),
    );
  }

  async terminateAll(): Promise<void> {
    this.closing = true;
    if (this.timer) clearInterval(this.timer);
    await Promise.all(
      this.slots.map((slot) => {
        slot.retiring = true;
        return slot.worker.terminate();
      }),
    );
  }
}
