/**
 * The subscriptions a protocol client makes itself (docs/protocol.md §10):
 * the built-in calls `$sb.subscribe` and `$sb.unsubscribe`, authorised by
 * the service's `onSubscribe` hook and carried out with the connection's
 * own `subscribe(channel, ±1)`, so that publications then reach the client
 * natively like any other subscriber's.
 *
 * Each subscription the client made holds one count of the native
 * refcount: the app's own `connection.subscribe(channel)` on the same
 * channel is another count, and the client's unsubscribe does not undo it.
 * A client's subscriptions are a set: subscribing twice to one channel
 * holds one count, and unsubscribing from a channel it never subscribed to
 * does nothing (so a client cannot drive the count of the app's own).
 */
import {
  BuiltinAction,
  RecoverStatus,
  RpcError,
  RpcErrorCode,
  type StreamPosition,
  channelOfPayload,
  parseRecoverPayload,
  recoverAnswer,
} from 'switchboard-rpc';
import type { RpcConnection } from './connection.js';
import type { RpcCall } from './service.js';

/**
 * Decides whether `connection` may subscribe itself to `channel`: exactly
 * `true` allows it; `false` refuses it with `ERR_SUBSCRIPTION_REFUSED`;
 * throwing an `RpcError` refuses it with that error's code and message.
 */
export type SubscribeHook<UserData = unknown> = (connection: RpcConnection<UserData>, channel: string) => boolean | Promise<boolean>;

const noop = (): void => {};

export class ClientSubscriptions {
  /** The channels the client subscribed itself to. */
  private readonly channels = new Set<string>();
  /**
   * Per channel, the end of its last operation. The peer runs calls
   * concurrently, and a subscribe waiting for an asynchronous hook must
   * not be overtaken by the unsubscribe the client sent after it: each
   * operation on a channel waits for the one before.
   */
  private readonly tails = new Map<string, Promise<void>>();

  constructor(
    private readonly connection: RpcConnection,
    /** `rpc.maxSubscriptions`. */
    private readonly limit: number,
  ) {}

  /** The channels the client has subscribed itself to. */
  get list(): string[] {
    return [...this.channels];
  }

  /**
   * Runs a built-in call; what it returns (or throws) is the reply: the
   * promise resolves (END) once the operation took effect, or rejects with
   * the refusal (ERROR). Throws `ERR_INVALID_CHANNEL` for a bad name.
   */
  handle(call: RpcCall, hook: SubscribeHook | undefined): Promise<unknown> | undefined {
    // The protocol's built-ins are calls; a one-way one would leave its
    // refusal with nobody to hear it (and a client could fill the server's
    // handlerError reports with them).
    if (!call.expectsReply) return undefined;
    let channel: string;
    let operation: () => Promise<unknown>;
    if (call.action === BuiltinAction.Recover) {
      const request = parseRecoverPayload(call.payload);
      channel = request.channel;
      operation = () => this.recover(call, request.channel, request.since, hook);
    } else {
      channel = channelOfPayload(call.payload);
      if (call.action === BuiltinAction.Subscribe) operation = () => this.subscribe(channel, hook);
      else if (call.action === BuiltinAction.Unsubscribe) operation = () => this.unsubscribe(channel);
      else throw new RpcError(RpcErrorCode.NotImplemented, `no built-in action ${JSON.stringify(call.action)}`);
    }
    const previous = this.tails.get(channel);
    const result = previous === undefined ? operation() : previous.then(operation);
    const tail = result.then(noop, noop);
    this.tails.set(channel, tail);
    void tail.then(() => {
      if (this.tails.get(channel) === tail) this.tails.delete(channel);
    });
    return result;
  }

  private async subscribe(channel: string, hook: SubscribeHook | undefined): Promise<void> {
    if (this.channels.has(channel)) return;
    if (hook === undefined) {
      // Secure by default: a channel may carry anything, so only the app
      // can say which clients may read it.
      throw new RpcError(RpcErrorCode.SubscriptionRefused, 'this server takes no subscriptions from its clients (it has no rpc.onSubscribe hook)');
    }
    this.checkLimit(channel); // before the hook: no work for a subscription that cannot be
    const allowed = await hook(this.connection, channel);
    if (allowed !== true) throw new RpcError(RpcErrorCode.SubscriptionRefused, `the subscription to ${JSON.stringify(channel)} was refused`);
    // Other channels' hooks may have finished meanwhile.
    this.checkLimit(channel);
    // A connection that closed while the hook ran is not subscribed (the
    // native side ignores a closed id); its call's END goes nowhere.
    if (!this.connection.isOpen) return;
    this.connection.subscribe(channel, 1);
    this.channels.add(channel);
  }

  /**
   * `$sb.recover`: subscribe as `$sb.subscribe` does, then have the broker
   * queue what the client missed since `since` before this answer (the
   * client merges them with the live publications by offset). The answer
   * is a RESPONSE, not codec-encoded: the status and the channel's
   * position now (docs/protocol.md §10).
   */
  private async recover(call: RpcCall, channel: string, since: StreamPosition | null, hook: SubscribeHook | undefined): Promise<undefined> {
    await this.subscribe(channel, hook);
    let answer: Uint8Array;
    try {
      const recovery = await this.connection.recover(channel, since);
      const status = recovery.recovered ? RecoverStatus.Recovered : RecoverStatus.NotRecovered;
      answer = recoverAnswer(status, { epoch: recovery.epoch, offset: recovery.offset });
    } catch (error) {
      const code = (error as { code?: unknown }).code ?? /^(ERR_[A-Z_]+):/.exec(String((error as Error).message))?.[1];
      // No history for the channel: a plain subscription. The broker did
      // not answer: subscribed, but nothing could be recovered.
      answer = code === 'ERR_HISTORY_UNAVAILABLE' ? recoverAnswer(RecoverStatus.NoHistory, null) : recoverAnswer(RecoverStatus.NotRecovered, null);
    }
    call.respondRaw(answer);
    return undefined;
  }

  private async unsubscribe(channel: string): Promise<void> {
    if (this.channels.delete(channel)) this.connection.subscribe(channel, -1);
  }

  private checkLimit(channel: string): void {
    if (this.channels.size < this.limit) return;
    throw new RpcError(
      RpcErrorCode.TooManySubscriptions,
      `the subscription to ${JSON.stringify(channel)} would be this connection's ${this.channels.size + 1}th; the server allows ${this.limit} (rpc.maxSubscriptions)`,
    );
  }
}
