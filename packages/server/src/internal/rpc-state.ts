/**
 * A Switchboard protocol connection in the dispatcher: its frames go to the
 * connection's peer, in order, through a serial queue whose first step is
 * the service's `open` hook. While a promise the hook returned is pending,
 * no frame reaches the peer, so no call is dispatched before the hook has
 * looked at the client (its connect data, its certificate); if the hook
 * refuses the client, the frames waiting are dropped. Calls themselves do
 * not wait for one another: the peer runs them concurrently.
 */
import { RpcError } from 'switchboard-rpc';
import type { RpcConnection } from '../rpc/connection.js';
import type { RpcServiceHooks } from '../rpc/service.js';
import type { ConnectionHost, ConnectionState } from './connection-state.js';
import { KIND_MESSAGE, type CloseEvent, type DrainEvent, type MessageEvent, type RpcOpenEvent } from './events.js';
import { SerialQueue, type SerialSteps, isThenable } from './serial-queue.js';

/** The open hook (the RPC_OPEN event stands for it), then the frames. */
type RpcStep = RpcOpenEvent | MessageEvent;

export class RpcState implements ConnectionState, SerialSteps<RpcStep> {
  private readonly queue: SerialQueue<RpcStep> = new SerialQueue<RpcStep>(this);

  constructor(
    private readonly host: ConnectionHost,
    readonly connection: RpcConnection,
    private readonly hooks: RpcServiceHooks,
  ) {}

  /** Run the open hook; frames wait for it. */
  open(event: RpcOpenEvent): void {
    this.queue.push(event);
  }

  message(event: MessageEvent): void {
    // Held, it stays a view into the drained batch: batches are never
    // reused, so it stays valid.
    this.queue.push(event);
  }

  /**
   * Not queued: the native queue emptied after a send reported BUFFERED, so
   * the peer resumes the stream data it paused (ARCHITECTURE.md,
   * "Backpressure, end to end"), whatever handler is running.
   */
  drain(_event: DrainEvent): void {
    this.connection.drained();
  }

  /**
   * Not queued: a close fails the peer's calls at once, even while the open
   * hook runs, and the frames held for the hook are dropped.
   */
  close(event: CloseEvent): void {
    this.queue.discard();
    this.host.forget(event.id);
    this.connection.closed(event.code, event.reason);
    try {
      const closed = this.hooks.close?.(this.connection, event.code, event.reason);
      if (isThenable(closed)) closed.then(undefined, (error: unknown) => this.host.report({ handler: 'close', connection: event.id, error }));
    } catch (error) {
      this.host.report({ handler: 'close', connection: event.id, error });
    }
  }

  /** @internal The queue's step: the open hook, or one frame for the peer. */
  runStep(step: RpcStep): unknown {
    if (step.kind === KIND_MESSAGE) {
      this.connection.receive(step.data);
      return undefined;
    }
    return this.hooks.open?.(this.connection);
  }

  /**
   * @internal The open hook threw or rejected: the client is refused and its
   * frames dropped. An `RpcError` is the hook's answer (a refused token,
   * say): the client gets its code and message in a GO_AWAY. Anything else
   * is a bug in the hook, reported, and the client gets
   * `ERR_HANDLER_FAILED`. (A frame's step does not throw: the peer catches
   * what its handlers throw. Should it, the connection is closed the same
   * way rather than fed more frames.)
   */
  stepFailed(error: unknown, step: RpcStep): void {
    this.queue.discard();
    if (step.kind !== KIND_MESSAGE && error instanceof RpcError) {
      this.connection.close(error.code, error.message);
      return;
    }
    this.host.report({ handler: step.kind === KIND_MESSAGE ? 'rpc' : 'open', connection: this.connection.id, error });
    this.connection.close('ERR_HANDLER_FAILED');
  }
}
