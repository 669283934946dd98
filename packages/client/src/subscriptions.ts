/**
 * The client's channel subscriptions (docs/protocol.md §10): one entry per
 * channel, shared by every `Subscription` of it, that keeps the server's
 * side in step with what the application wants.
 *
 * An entry is reconciled, not scripted: `sync` compares what is wanted
 * (any subscription left?) with what the server holds on the current
 * connection, and sends the one built-in call that closes the gap; when
 * that call settles it looks again. At most one call per channel is in
 * flight, so a subscribe and an unsubscribe never cross, and any sequence
 * of `subscribe()` / `unsubscribe()` ends where the application left it.
 * A new connection holds nothing: every wanted channel is subscribed again
 * as soon as it opens (before the calls that waited for it), and the
 * subscriptions that had been confirmed report the gap.
 */

import type { IncomingCall, Peer, StreamPosition } from 'switchboard-rpc';
import {
  BuiltinAction,
  RecoverStatus,
  RpcError,
  RpcErrorCode,
  channelPayload,
  parseRecoverAnswer,
  positionOf,
  recoverPayload,
} from 'switchboard-rpc';
import type { GapEvent, SubscriptionMember } from './subscription.js';
import { ReceivedPublication, SubscriptionState } from './subscription.js';

/** What the bookkeeping needs from the client. */
export interface SubscriptionsHost {
  /** The peer new calls may go out on, or null. */
  usablePeer(): Peer | null;
  /** A channel's subscription is back after a reconnect (the client's `gap` event). */
  gap(event: GapEvent): void;
}

type Member = SubscriptionMember;

interface Entry {
  readonly channel: string;
  readonly members: Set<Member>;
  /** The connection period (`Subscriptions.period`) in which the server confirmed it; 0: none. */
  heldIn: number;
  /** A built-in call is in flight. */
  busy: boolean;
  /** When the connection holding a confirmed subscription was lost (`Date.now()`), until it is confirmed again. */
  lostAt: number | null;
  lostCode: string | null;
  /** Some subscription asked for `recover`: the channel is subscribed with `$sb.recover`. */
  recover: boolean;
  /** The position of the last publication handed to the subscriptions (channels with history). */
  position: StreamPosition | null;
  /** While a `$sb.recover` is in flight: the publications arriving meanwhile, merged by offset with the answer. */
  pending: IncomingCall[] | null;
}

/**
 * The call failed with its connection: not an answer. Whatever the server
 * did, that connection's subscriptions end with it, and the next one
 * starts from nothing.
 */
function isConnectionLoss(error: unknown): boolean {
  return error instanceof RpcError && (error.code === RpcErrorCode.Disconnected || error.code === RpcErrorCode.GoingAway);
}

export class Subscriptions {
  private readonly entries = new Map<string, Entry>();
  /**
   * Counts connection openings and losses: a call's answer counts only in
   * the period it was sent in. (An END read just before the transport
   * closed settles its promise after the loss was handled.)
   */
  private period = 0;
  private isOpen = false;

  constructor(private readonly host: SubscriptionsHost) {}

  /** Channels subscribed or being subscribed to, however many subscriptions share each. */
  get channelCount(): number {
    let count = 0;
    for (const entry of this.entries.values()) if (entry.members.size > 0) count += 1;
    return count;
  }

  add(member: Member): void {
    let entry = this.entries.get(member.channel);
    if (entry === undefined) {
      entry = {
        channel: member.channel,
        members: new Set(),
        heldIn: 0,
        busy: false,
        lostAt: null,
        lostCode: null,
        recover: false,
        position: null,
        pending: null,
      };
      this.entries.set(member.channel, entry);
    }
    entry.members.add(member);
    if (member.recover) entry.recover = true;
    // Joining a subscription the server holds already: nothing to ask.
    if (this.holds(entry)) member.setState(SubscriptionState.Subscribed);
    this.sync(entry);
  }

  remove(member: Member): void {
    const entry = this.entries.get(member.channel);
    if (entry === undefined || !entry.members.delete(member)) return;
    this.sync(entry);
  }

  /**
   * A publication (an unnumbered one-way message, §10) for a channel this
   * client subscribed to: given to its subscriptions. False when the
   * message is not one (the client's handlers take it). A channel being
   * unsubscribed has no subscriptions left: what still arrives for it is
   * dropped, as it was published before the server took the unsubscribe.
   */
  deliver(call: IncomingCall): boolean {
    if (call.callId !== 0 || call.expectsReply) return false;
    const entry = this.entries.get(call.action);
    if (entry === undefined) return false;
    if (entry.members.size === 0) return true;
    if (entry.pending !== null) {
      entry.pending.push(call);
      return true;
    }
    this.handOut(entry, call);
    return true;
  }

  /**
   * Give a publication to the channel's subscriptions, unless its position
   * shows it was handed out already (a recovered one that also came live).
   */
  private handOut(entry: Entry, call: IncomingCall): void {
    const position = call.explicitUuid === null ? null : positionOf(call.explicitUuid);
    if (position !== null) {
      const last = entry.position;
      if (last !== null && last.epoch === position.epoch && position.offset <= last.offset) return;
      entry.position = position;
    }
    const shared = new ReceivedPublication<unknown>(call, null);
    for (const member of [...entry.members]) member.receive(call, shared);
  }

  /** A connection opened: subscribe every wanted channel on it. */
  opened(): void {
    this.period += 1;
    this.isOpen = true;
    for (const entry of [...this.entries.values()]) this.sync(entry);
  }

  /** The connection was lost (the client may reconnect): nothing is held any more. */
  lost(code: string): void {
    if (!this.isOpen) return; // an attempt that never opened
    this.period += 1;
    this.isOpen = false;
    const now = Date.now();
    for (const entry of [...this.entries.values()]) {
      if (entry.members.size === 0) {
        if (!entry.busy) this.entries.delete(entry.channel);
        continue;
      }
      // Publications held for a recovery that will not answer: the next
      // recovery asks for them again (the position did not move past them).
      entry.pending = null;
      let confirmed = false;
      for (const member of entry.members) {
        if (member.state !== SubscriptionState.Subscribed && member.state !== SubscriptionState.Resubscribing) continue;
        confirmed = true;
        member.setState(SubscriptionState.Resubscribing);
      }
      // The first loss opens the gap; a resubscription lost again widens it.
      if (confirmed && entry.lostAt === null) {
        entry.lostAt = now;
        entry.lostCode = code;
      }
    }
  }

  /** The client is closed for good: every subscription ends with `error` (`byApplication`: `client.close()`). */
  close(error: RpcError, byApplication: boolean): void {
    this.isOpen = false;
    this.period += 1;
    const entries = [...this.entries.values()];
    this.entries.clear();
    for (const entry of entries) for (const member of entry.members) member.close(error, byApplication);
  }

  private holds(entry: Entry): boolean {
    return entry.heldIn !== 0 && entry.heldIn === this.period;
  }

  private sync(entry: Entry): void {
    if (entry.busy) return; // looked at again when the call settles
    const wanted = entry.members.size > 0;
    const held = this.holds(entry);
    if (!wanted && !held) {
      if (this.entries.get(entry.channel) === entry) this.entries.delete(entry.channel);
      return;
    }
    if (wanted === held) return;
    const peer = this.isOpen ? this.host.usablePeer() : null;
    if (peer === null) return; // `opened()` looks again
    const period = this.period;
    entry.busy = true;
    // No timeout: the server's hook answers, and a dead connection is the
    // heartbeat's to find. The payload is the name's bytes, whatever the codec.
    const recovering = wanted && entry.recover;
    const action = recovering ? BuiltinAction.Recover : wanted ? BuiltinAction.Subscribe : BuiltinAction.Unsubscribe;
    const payload = recovering ? recoverPayload(entry.channel, entry.position) : channelPayload(entry.channel);
    if (recovering) entry.pending = [];
    let answer: Promise<unknown>;
    try {
      answer = peer.call(action, payload, { raw: true, timeoutMs: 0 });
    } catch (error) {
      answer = Promise.reject(error); // settled below like any failed call
    }
    answer.then(
      (value: unknown) => {
        entry.busy = false;
        if (period === this.period) this.answered(entry, wanted, period, recovering ? (value as Uint8Array) : null);
        this.sync(entry);
      },
      (error: unknown) => {
        entry.busy = false;
        if (period === this.period) {
          this.flushPending(entry);
          if (wanted && !isConnectionLoss(error)) this.refused(entry, error);
        }
        this.sync(entry);
      },
    );
  }

  /** Hand out what arrived during a recovery, in offset order (arrival order for publications without a position). */
  private flushPending(entry: Entry): void {
    const pending = entry.pending;
    entry.pending = null;
    if (pending === null) return;
    const offset = (call: IncomingCall): number => (call.explicitUuid === null ? 0 : (positionOf(call.explicitUuid)?.offset ?? 0));
    if (pending.every((call) => call.explicitUuid !== null)) pending.sort((a, b) => offset(a) - offset(b));
    for (const call of pending) if (entry.members.size > 0) this.handOut(entry, call);
  }

  /** `recoverAnswer`: the `$sb.recover` answer's bytes, or null for a plain subscription's END. */
  private answered(entry: Entry, subscribed: boolean, period: number, recoverAnswer: Uint8Array | null): void {
    if (!subscribed) {
      entry.heldIn = 0;
      return;
    }
    entry.heldIn = period;
    let recovered = false;
    if (recoverAnswer !== null) {
      const { status, position } = parseRecoverAnswer(recoverAnswer);
      recovered = status === RecoverStatus.Recovered;
      // Not recovered: the missed ones are not coming; what arrived live
      // since the subscription is handed out as it is.
      if (status !== RecoverStatus.Recovered) entry.position = null;
      this.flushPending(entry);
      const last = entry.position;
      if (position !== null && (last === null || last.epoch !== position.epoch || last.offset < position.offset)) entry.position = position;
    }
    const lostAt = entry.lostAt;
    const gap: GapEvent | null =
      lostAt === null || recovered
        ? null
        : { channel: entry.channel, reason: 'reconnect', missedFrom: lostAt, missedUntil: Date.now(), dropped: null, code: entry.lostCode };
    entry.lostAt = null;
    entry.lostCode = null;
    for (const member of [...entry.members]) {
      // Those that joined after the loss missed nothing they had asked for.
      if (gap !== null && member.state === SubscriptionState.Resubscribing) member.resubscribed(gap);
      else member.setState(SubscriptionState.Subscribed);
    }
    if (gap !== null) this.host.gap(gap);
  }

  /** The server said no (its hook, its limit, or a server without subscriptions): every subscription of the channel ends. */
  private refused(entry: Entry, error: unknown): void {
    const members = [...entry.members];
    entry.members.clear();
    entry.lostAt = null;
    entry.lostCode = null;
    const reason =
      error instanceof RpcError ? error : new RpcError(RpcErrorCode.SubscriptionRefused, `the subscription to ${JSON.stringify(entry.channel)} failed`, { cause: error });
    for (const member of members) member.close(reason, false);
  }
}
