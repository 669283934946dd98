/**
 * What the two halves of a peer (our calls: `outgoing.ts`; the other
 * side's calls: `dispatch.ts`) share with the `Peer` that owns them.
 */

import type { Frame } from '../codec/index.js';
import type { PayloadCodec } from './codecs.js';
import type { PlannedAttachment } from './files.js';
import type { OutboundStream } from './sender.js';
import type { PeerOptions, PeerSettings, Timers } from './types.js';

export interface PeerCore {
  readonly options: PeerOptions;
  readonly codec: PayloadCodec;
  readonly local: PeerSettings;
  readonly remote: PeerSettings;
  /** The features both sides set. */
  readonly features: number;
  readonly timers: Timers;
  /** The transport is gone. */
  readonly closed: boolean;
  /** Either side sent GO_AWAY. */
  readonly goingAway: boolean;
  /** The other side sent GO_AWAY: it may start no call after it. */
  readonly goAwayReceived: boolean;
  send(frame: Frame): void;
  /**
   * Throws an RpcError `ERR_TOO_MANY_STREAMS` when `count` more streams
   * would pass `maxOutboundStreams`; `count` 0 never throws.
   */
  checkOutboundStreams(count: number): void;
  /** Sends the STREAM_OPENs of a message or response just sent, then starts their data. */
  openStreams(planned: readonly PlannedAttachment[]): readonly OutboundStream[];
  /** Something finished: resolve `whenIdle()` waiters if nothing is left. */
  checkIdle(): void;
}
