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

import type { IncomingCall, Peer } from 'switchboard-rpc';
import { BuiltinAction, RpcError, RpcErrorCode, channelPayload } from 'switchboard-rpc';
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
      entry = { channel: member.channel, members: new Set(), heldIn: 0, busy: false, lostAt: null, lostCode: null };
      this.entries.set(member.channel, entry);
    }
    entry.members.add(member);
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
    const shared = new ReceivedPublication<unknown>(call, null);
    for (const member of [...entry.members]) member.receive(call, shared);
    return true;
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
    const action = wanted ? BuiltinAction.Subscribe : BuiltinAction.Unsubscribe;
    let answer: Promise<unknown>;
    try {
      answer = peer.call(action, channelPayload(entry.channel), { raw: true, timeoutMs: 0 });
    } catch (error) {
      answer = Promise.reject(error); // settled below like any failed call
    }
    answer.then(
      () => {
        entry.busy = false;
        if (period === this.period) this.answered(entry, wanted, period);
        this.sync(entry);
      },
      (error: unknown) => {
        entry.busy = false;
        if (period === this.period && wanted && !isConnectionLoss(error)) this.refused(entry, error);
        this.sync(entry);
      },
    );
  }

  private answered(entry: Entry, subscribed: boolean, period: number): void {
    if (!subscribed) {
      entry.heldIn = 0;
      return;
    }
    entry.heldIn = period;
    const lostAt = entry.lostAt;
    const gap: GapEvent | null =
      lostAt === null
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
