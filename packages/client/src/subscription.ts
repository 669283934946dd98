/**
 * One `client.subscribe(channel)`: what the application holds. It is an
 * async iterable of the channel's publications, or calls a callback for
 * each; its state and events say where the server's side stands. Several
 * subscriptions to one channel share one subscription on the server
 * (`subscriptions.ts` counts them); each has its own buffer and callback.
 */

import type { IncomingCall, StreamPosition } from 'switchboard-rpc';
import { RpcError, RpcErrorCode, positionOf } from 'switchboard-rpc';
import { Emitter } from './emitter.js';

export const SubscriptionState = {
  /** Waiting for the server to confirm it (the connection may still be opening). */
  Subscribing: 'subscribing',
  /** The server confirmed it: publications arrive. */
  Subscribed: 'subscribed',
  /** The connection was lost: the client subscribes again on the next one, then reports the gap. */
  Resubscribing: 'resubscribing',
  /** For good: unsubscribed, refused, or the client closed. */
  Closed: 'closed',
} as const;
export type SubscriptionState = (typeof SubscriptionState)[keyof typeof SubscriptionState];

/** One message published to the channel, as a subscription receives it. */
export interface Publication<T = unknown> {
  /** The channel it was published to. */
  readonly channel: string;
  /**
   * The payload decoded with the connection's codec (and checked by the
   * template's `parse`, when subscribed with one); decoded on first read,
   * which throws an RpcError `ERR_PAYLOAD_DECODE` for bytes that do not
   * decode (the server publishes bytes as the app gave them).
   */
  readonly value: T;
  /** The payload as received. */
  readonly bytes: Uint8Array;
  /** Its UUID (docs/protocol.md §6; each recipient's is its own, unless the publication has a position). */
  readonly uuid: string;
  /**
   * Its place in the channel's history, when the channel keeps one on the
   * server (docs/protocol.md §10): the same for every recipient, on every
   * server, and what `recover` resumes from. Null otherwise.
   */
  readonly position: StreamPosition | null;
}

/**
 * Publications may have been missed. `reconnect`: the connection carrying
 * the subscription was lost, and the client subscribed again on a new
 * one; what was published between `missedFrom` and `missedUntil` did not
 * reach it. `overflow`: the iterator's buffer was full (`maxBuffered`),
 * and the oldest `dropped` publications, received between the two times,
 * were dropped.
 */
export interface GapEvent {
  channel: string;
  reason: 'reconnect' | 'overflow';
  /**
   * `Date.now()` when the loss was noticed (reconnect: the disconnect,
   * which a silent network delays by up to twice the heartbeat interval),
   * or when the first dropped publication arrived (overflow).
   */
  missedFrom: number;
  /** `Date.now()` when the server confirmed the new subscription, or when the last dropped publication arrived. */
  missedUntil: number;
  /** Overflow: how many were dropped. Reconnect: null (nobody counted what was published meanwhile). */
  dropped: number | null;
  /** Reconnect: the code of the disconnect (`ERR_DISCONNECTED`, `ERR_GOING_AWAY`…); overflow: null. */
  code: string | null;
}

export interface SubscriptionStateEvent {
  state: SubscriptionState;
  previous: SubscriptionState;
}

export interface SubscriptionClosedEvent {
  /** Why, or null when the application ended it (`unsubscribe()`, breaking out of the loop, `client.close()`). */
  error: RpcError | null;
}

export interface SubscriptionEvents {
  statechange: SubscriptionStateEvent;
  gap: GapEvent;
  closed: SubscriptionClosedEvent;
}

export interface SubscribeOptions {
  /**
   * After a reconnect, ask the server for what was published meanwhile
   * (`$sb.recover`, docs/protocol.md §10): on a channel with history, the
   * missed publications arrive in order before the live ones, each once,
   * and no `gap` is reported; a `gap` is reported only when they are no
   * longer all there (or the channel keeps no history). Default false.
   */
  recover?: boolean;
  /**
   * Publications the iterator holds for a consumer that is behind (default
   * 1024). Past it the oldest is dropped and a `gap` event (`overflow`)
   * says how many, when the consumer takes the next one. A burst a page
   * renders at once is far smaller; a consumer this far behind is better
   * served by the newest. Not used with a callback, which is called as
   * publications arrive.
   */
  maxBuffered?: number;
}

/** The callback form: the decoded value, and the whole publication. */
export type PublicationCallback<T> = (value: T, publication: Publication<T>) => unknown;

/** A subscription as the client's bookkeeping (`subscriptions.ts`) sees it, whatever its value type. */
export interface SubscriptionMember {
  readonly channel: string;
  /** Asked for `recover`. */
  readonly recover: boolean;
  readonly state: SubscriptionState;
  setState(state: SubscriptionState): void;
  receive(call: IncomingCall, shared: Publication<unknown>): void;
  resubscribed(gap: GapEvent): void;
  close(error: RpcError, byApplication: boolean): void;
}

/** What a subscription needs from the client's bookkeeping. */
export interface SubscriptionHost {
  remove(subscription: SubscriptionMember): void;
  /** A callback threw or rejected: reported as the client's `handlererror`. */
  callbackFailed(error: unknown, call: IncomingCall): void;
}

const DEFAULT_MAX_BUFFERED = 1024;
const DONE: IteratorResult<never> = { done: true, value: undefined };

/** A publication whose value is decoded on first read, then kept. */
export class ReceivedPublication<T> implements Publication<T> {
  private decoded = false;
  private cached: T | undefined;

  constructor(
    private readonly call: IncomingCall,
    private readonly decoder: ((call: IncomingCall) => T) | null,
  ) {}

  get channel(): string {
    return this.call.action;
  }

  get bytes(): Uint8Array {
    return this.call.payload;
  }

  get uuid(): string {
    return this.call.uuid;
  }

  get position(): StreamPosition | null {
    const explicit = this.call.explicitUuid;
    return explicit === null ? null : positionOf(explicit);
  }

  get value(): T {
    if (!this.decoded) {
      this.cached = this.decoder === null ? this.call.decode<T>() : this.decoder(this.call);
      this.decoded = true;
    }
    return this.cached as T;
  }
}

/**
 * A subscription to one channel (`client.subscribe`). Iterate it (`for
 * await`), or give a callback: not both. Ending the loop early (`break`,
 * `return`, an exception) unsubscribes; so does `unsubscribe()`.
 *
 * Publications that arrive before the loop starts are buffered (up to
 * `maxBuffered`), so none is lost between `subscribe()` and the loop. The
 * loop ends when the application ends the subscription (or closes the
 * client), and throws the error when the server refuses it (at first or
 * when subscribing again after a reconnect) or the client closes because
 * its connection failed for good; publications buffered before that are
 * yielded first.
 */
export class Subscription<T = unknown> extends Emitter<SubscriptionEvents> implements AsyncIterable<Publication<T>>, SubscriptionMember {
  /**
   * Resolves once the server confirmed the subscription; rejects with the
   * refusal (`ERR_SUBSCRIPTION_REFUSED`, the hook's own code…), with
   * `ERR_CANCELLED` when unsubscribed before, or with the client's close.
   * An unobserved rejection is not reported as unhandled.
   */
  readonly ready: Promise<void>;
  private current: SubscriptionState = SubscriptionState.Subscribing;
  private resolveReady!: () => void;
  private rejectReady!: (error: Error) => void;
  private readonly buffer: Publication<T>[] = [];
  private readonly maxBuffered: number;
  /** The iterator waiting for a publication, if any. */
  private waiting: ((result: IteratorResult<Publication<T>>) => void) | null = null;
  private failWaiting: ((error: Error) => void) | null = null;
  private iterated = false;
  /** The error the loop throws once, after the buffer (null: it ends). */
  private endError: RpcError | null = null;
  private dropped = 0;
  private droppedFrom = 0;
  private droppedUntil = 0;
  /** @internal Asked for `recover` (see `SubscribeOptions`). */
  readonly recover: boolean;

  /** @internal Made by `client.subscribe()`. */
  constructor(
    /** The channel. */
    readonly channel: string,
    private readonly host: SubscriptionHost,
    /** @internal Decodes a publication's payload (a template's `decode`), or null for the codec's. */
    readonly decoder: ((call: IncomingCall) => T) | null,
    private readonly callback: PublicationCallback<T> | null,
    options: SubscribeOptions = {},
  ) {
    super();
    const max = options.maxBuffered ?? DEFAULT_MAX_BUFFERED;
    if (!(Number.isInteger(max) && max >= 1)) throw new RangeError(`maxBuffered must be an integer >= 1, got ${String(max)}`);
    this.maxBuffered = max;
    this.recover = options.recover === true;
    this.ready = new Promise<void>((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
    this.ready.catch(() => {}); // reported to whoever awaits it, and by the loop
  }

  get state(): SubscriptionState {
    return this.current;
  }

  /** Ends the subscription (the server's, when it was the channel's last). Idempotent. */
  unsubscribe(): void {
    if (this.current === SubscriptionState.Closed) return;
    this.host.remove(this);
    this.close(new RpcError(RpcErrorCode.Cancelled, `unsubscribed from ${JSON.stringify(this.channel)}`), true);
  }

  [Symbol.asyncIterator](): AsyncIterator<Publication<T>> {
    if (this.callback !== null) throw new TypeError('a subscription with a callback is not iterable');
    if (this.iterated) throw new TypeError('a subscription is iterated once (subscribe again for a second reader: it shares the server subscription)');
    this.iterated = true;
    return {
      next: () => this.next(),
      return: () => {
        this.unsubscribe();
        return Promise.resolve(DONE);
      },
    };
  }

  private next(): Promise<IteratorResult<Publication<T>>> {
    if (this.dropped > 0) this.reportDropped();
    const publication = this.buffer.shift();
    if (publication !== undefined) return Promise.resolve({ done: false, value: publication });
    if (this.current === SubscriptionState.Closed) {
      const error = this.endError;
      this.endError = null; // thrown once, like the peer's iterators
      return error === null ? Promise.resolve(DONE) : Promise.reject(error);
    }
    if (this.waiting !== null) return Promise.reject(new TypeError('next() called again before the previous one settled'));
    return new Promise((resolve, reject) => {
      this.waiting = resolve;
      this.failWaiting = reject;
    });
  }

  // ------------------------------------------------------------ from the client's bookkeeping

  /** @internal A publication for this channel (`shared`: one decoded with the codec, shared with the channel's other subscriptions). */
  receive(call: IncomingCall, shared: Publication<unknown>): void {
    if (this.current === SubscriptionState.Closed) return;
    const publication = this.decoder === null ? (shared as Publication<T>) : new ReceivedPublication(call, this.decoder);
    if (this.callback !== null) {
      this.runCallback(publication, call);
      return;
    }
    const waiting = this.waiting;
    if (waiting !== null) {
      this.waiting = null;
      this.failWaiting = null;
      waiting({ done: false, value: publication });
      return;
    }
    if (this.buffer.length >= this.maxBuffered) {
      const now = Date.now();
      if (this.dropped === 0) this.droppedFrom = now;
      this.droppedUntil = now;
      this.dropped += 1;
      this.buffer.shift();
    }
    this.buffer.push(publication);
  }

  /** @internal */
  setState(state: SubscriptionState): void {
    const previous = this.current;
    if (previous === state || previous === SubscriptionState.Closed) return;
    this.current = state;
    if (state === SubscriptionState.Subscribed) this.resolveReady();
    this.emit('statechange', { state, previous });
  }

  /** @internal The server confirmed the subscription again after a reconnect. */
  resubscribed(gap: GapEvent): void {
    this.setState(SubscriptionState.Subscribed);
    this.emit('gap', gap);
  }

  /**
   * @internal For good. `byApplication`: the application ended it (the
   * loop ends, `closed` has no error); else the loop throws `error`.
   * `ready` rejects with `error` either way, if still pending.
   */
  close(error: RpcError, byApplication: boolean): void {
    if (this.current === SubscriptionState.Closed) return;
    this.rejectReady(error);
    if (!byApplication) this.endError = error;
    const waiting = this.waiting;
    const failWaiting = this.failWaiting;
    this.waiting = null;
    this.failWaiting = null;
    this.setState(SubscriptionState.Closed);
    if (waiting !== null) {
      // The buffer is empty while a loop waits.
      this.endError = null;
      if (byApplication) waiting(DONE);
      else failWaiting!(error);
    }
    this.emit('closed', { error: byApplication ? null : error });
  }

  private runCallback(publication: Publication<T>, call: IncomingCall): void {
    let result: unknown;
    try {
      result = this.callback!(publication.value, publication);
    } catch (error) {
      this.host.callbackFailed(error, call);
      return;
    }
    if (typeof (result as { then?: unknown } | null)?.then === 'function') {
      (result as PromiseLike<unknown>).then(undefined, (error: unknown) => this.host.callbackFailed(error, call));
    }
  }

  private reportDropped(): void {
    const gap: GapEvent = {
      channel: this.channel,
      reason: 'overflow',
      missedFrom: this.droppedFrom,
      missedUntil: this.droppedUntil,
      dropped: this.dropped,
      code: null,
    };
    this.dropped = 0;
    this.emit('gap', gap);
  }
}
