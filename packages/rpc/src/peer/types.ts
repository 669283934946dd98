/**
 * The peer's construction options.
 */

import type { GoAwayFrame, ProtocolError, Settings } from '../codec/index.js';
import type { PayloadCodec } from './codecs.js';
import type { IncomingCall, IncomingHandler } from './incoming.js';

/** The handshake fields the peer uses (a HELLO or WELCOME frame has them all). */
export type PeerSettings = Pick<Settings, 'seed' | 'maxFrameSize' | 'initialWindow' | 'maxConcurrentCalls' | 'features'>;

/** Timer functions (injectable for tests); the defaults are the global ones. */
export interface Timers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export interface PeerOptions {
  /** This side's handshake settings (what it announced). */
  local: PeerSettings;
  /** The other side's handshake settings (from its HELLO or WELCOME). */
  remote: PeerSettings;
  /** The payload codec negotiated. */
  codec: PayloadCodec;
  /**
   * The transport: bytes of one or more complete frames (frames produced in
   * the same tick are batched into one write). It must not throw; if it
   * does, the peer closes as if the connection were gone.
   *
   * It may pace the peer: returning `false` says the transport's queue has
   * passed its high-water mark. The peer then sends no stream data (the
   * bytes credit would allow) until `peer.resume()` is called, which the
   * transport MUST then do once its queue drains; other frames still go
   * out. Returning nothing (or `true`) never pauses.
   */
  write(bytes: Uint8Array): void | boolean;
  /**
   * Optional, for byte-stream transports: writes `parts` in order, as if
   * concatenated (e.g. a corked socket). With it, a message's or
   * response's payload of 16 KiB or more goes out by reference after its
   * frame's head instead of being copied into the frame: the caller must
   * not change such a payload while its call is in flight. The same rules
   * as `write` otherwise.
   */
  writeParts?(parts: readonly Uint8Array[]): void | boolean;
  /**
   * The most streams (and files) this side may have open towards the other
   * at once, counting attachments of its calls and of its responses. One
   * more is refused with `ERR_TOO_MANY_STREAMS` before anything is sent:
   * `respond` and `notify` throw it, a call rejects with it. Default: no
   * limit. A response's stream outlives its call, so `maxConcurrentCalls`
   * does not bound them; a server sets this.
   */
  maxOutboundStreams?: number;
  /**
   * The most data bytes one STREAM_DATA frame we send carries (default: as
   * many as the other side's maxFrameSize allows). A paced transport (see
   * `write`) sets it so that one more chunk fits beside its high-water mark;
   * smaller chunks also let other frames through between them.
   */
  maxStreamChunk?: number;
  /** Serves calls and one-way messages from the other side. Without it they get `ERR_NOT_IMPLEMENTED`. */
  handler?: IncomingHandler;
  /** Timeout of calls without their own `timeoutMs` (0 or absent: none). */
  defaultTimeoutMs?: number;
  /** Batch the frames of one tick into one write (default true). */
  batchWrites?: boolean;
  /** Send the message of an uncoded handler exception in its `ERR_HANDLER_FAILED` (default false: it may leak internals). */
  exposeHandlerErrors?: boolean;
  timers?: Timers;
  /**
   * The other side broke the protocol. The peer has already written GO_AWAY
   * with the error's code and closed itself; the transport should close the
   * connection.
   */
  onProtocolError?(error: ProtocolError): void;
  /** The other side sent GO_AWAY (after the peer failed the calls it will not process). */
  onGoAway?(frame: GoAwayFrame): void;
  /**
   * A handler failure the caller does not see as such: an exception without
   * a code (sent as `ERR_HANDLER_FAILED`), one from a one-way message, or
   * one after the final reply. Not called for failures after a cancel.
   */
  onHandlerError?(error: unknown, call: IncomingCall): void;
}

/** Counters for monitoring and tests. */
export interface PeerStats {
  /** Our calls sent and not finished (including those draining after `call` took their first response). */
  pendingCalls: number;
  /** Our calls waiting for a slot under the other side's maxConcurrentCalls. */
  queuedCalls: number;
  /** Calls from the other side awaiting their final reply. */
  incomingCalls: number;
  /** Handlers whose promise has not settled (calls and one-way messages). */
  runningHandlers: number;
  /** Streams we receive whose id is open. */
  inboundStreams: number;
  /** Streams we send whose id is open. */
  outboundStreams: number;
  /** Bytes buffered in inbound streams, not yet taken by their consumers. */
  bufferedBytes: number;
  /** The last call id we used. */
  lastCallId: number;
  responsesSent: number;
  responsesReceived: number;
}
