/**
 * The checks on frames from one peer that need memory of earlier frames
 * but no knowledge of this side's own calls (docs/protocol.md §2, §4):
 *
 * - MESSAGE call ids start at 1 and increase strictly (ERR_PROTOCOL_CALL_ID);
 * - STREAM_OPEN stream ids start at 1 and increase strictly
 *   (ERR_PROTOCOL_STREAM_ID);
 * - a MESSAGE or RESPONSE with n attachments is followed immediately by n
 *   STREAM_OPEN frames, and STREAM_OPEN appears nowhere else
 *   (ERR_PROTOCOL_SEQUENCE);
 * - HELLO / WELCOME come only first (ERR_PROTOCOL_HANDSHAKE);
 * - a frame that uses a feature not in effect is ERR_PROTOCOL_FEATURE: a
 *   plain STREAM_OPEN needs streams, one with a file needs files, CANCEL
 *   needs cancellation.
 *
 * One instance per connection, fed every frame received after the
 * handshake. Checks that need this side's state (a response to a call id
 * never used, data on a stream that is not open, credit) belong to the peer.
 */

import type { Frame } from './frames.js';
import { ALL_FEATURES, Feature } from './frames.js';
import { ProtocolError } from './errors.js';

export class SequenceCheck {
  readonly #features: number;
  #lastCallId = 0;
  /** The last call id of a MESSAGE whose STREAM_OPENs are all in. */
  #completeCallId = 0;
  #lastStreamId = 0;
  /** STREAM_OPEN frames still owed by the last MESSAGE / RESPONSE. */
  #pendingOpens = 0;

  /** `features`: the bits in effect on the connection (both sides set them). */
  constructor(features: number = ALL_FEATURES) {
    this.#features = features;
  }

  /**
   * The highest call id of a MESSAGE received complete, its attachments'
   * STREAM_OPENs all in (0 = none): the `last call id` of a GO_AWAY to this
   * peer (docs/protocol.md §2.4), since a message still waiting for its
   * attachments is not dispatched if the connection ends. Unnumbered
   * messages do not count.
   */
  get lastCallId(): number {
    return this.#completeCallId;
  }

  /**
   * Checks the next frame received; throws ProtocolError on a violation.
   * The rules apply in the Rust codec's order (crates/proto/src/rpc/
   * sequence.rs), so both name the same violation: a handshake frame first,
   * then STREAM_OPEN's place, feature and id, then anything else while
   * attachments are due, then CANCEL's feature, then call ids.
   */
  check(frame: Frame): void {
    switch (frame.type) {
      case 'hello':
      case 'welcome':
        throw new ProtocolError('ERR_PROTOCOL_HANDSHAKE', `${frame.type.toUpperCase()} after the handshake`);
      case 'streamOpen':
        if (this.#pendingOpens === 0) {
          throw new ProtocolError('ERR_PROTOCOL_SEQUENCE', 'STREAM_OPEN that does not follow a MESSAGE or RESPONSE with attachments');
        }
        if (frame.file === null ? (this.#features & Feature.Streams) === 0 : (this.#features & Feature.Files) === 0) {
          throw new ProtocolError('ERR_PROTOCOL_FEATURE', frame.file === null ? 'a stream without the streams feature' : 'a file without the files feature');
        }
        this.#checkStreamId(frame.streamId);
        if (--this.#pendingOpens === 0) this.#completeCallId = this.#lastCallId;
        return;
      default:
        break;
    }
    if (this.#pendingOpens > 0) {
      throw new ProtocolError(
        'ERR_PROTOCOL_SEQUENCE',
        `a ${frame.type} frame where ${this.#pendingOpens} more STREAM_OPEN frame(s) were due`,
      );
    }
    if (frame.type === 'cancel' && (this.#features & Feature.Cancel) === 0) {
      throw new ProtocolError('ERR_PROTOCOL_FEATURE', 'a CANCEL without the cancellation feature');
    }
    if (frame.type === 'message') {
      // Unnumbered one-way messages (broadcasts, call id 0) take no place in the order.
      if (frame.callId === 0 && !frame.expectsReply) {
        this.#pendingOpens = frame.attachments;
        return;
      }
      if (frame.callId <= this.#lastCallId) {
        throw new ProtocolError(
          'ERR_PROTOCOL_CALL_ID',
          frame.callId === 0
            ? 'a call (REPLY set) with call id 0: only one-way messages may be unnumbered'
            : `MESSAGE call id ${frame.callId} does not increase (last was ${this.#lastCallId})`,
        );
      }
      this.#lastCallId = frame.callId;
      this.#pendingOpens = frame.attachments;
      if (frame.attachments === 0) this.#completeCallId = frame.callId;
    } else if (frame.type === 'response') {
      this.#pendingOpens = frame.attachments;
    }
  }

  #checkStreamId(streamId: number): void {
    if (streamId <= this.#lastStreamId) {
      throw new ProtocolError(
        'ERR_PROTOCOL_STREAM_ID',
        streamId === 0
          ? 'STREAM_OPEN with stream id 0 (stream ids start at 1)'
          : `STREAM_OPEN stream id ${streamId} does not increase (last was ${this.#lastStreamId})`,
      );
    }
    this.#lastStreamId = streamId;
  }
}
