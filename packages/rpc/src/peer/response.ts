/**
 * A response as the caller receives it (the low-level view `request()` and
 * `requestMany()` give; `call()` and `callMany()` give only its `value`).
 */

import { responseUuid, uuidToString } from '../codec/index.js';
import { RpcError, RpcErrorCode, messageOf } from './errors.js';
import type { Attachments, IncomingFile } from './files.js';
import type { PayloadCodec } from './codecs.js';
import type { IncomingStream } from './streams.js';

export type RpcResponseKind = 'response' | 'fastReply' | 'end';

export interface RpcResponse {
  /**
   * `response`: a RESPONSE frame (payload in `bytes`, decoded in `value`);
   * `fastReply`: a FAST_REPLY (`code`, also in `value`); `end`: the call
   * ended without any response (END; only `request()` gives this).
   */
  readonly kind: RpcResponseKind;
  /** The call's final response. */
  readonly last: boolean;
  /** The payload as received (empty for a fast reply or an end). */
  readonly bytes: Uint8Array;
  /** The fast reply's integer, else null. */
  readonly code: number | null;
  /**
   * The decoded payload (decoded on first access with the connection's
   * codec; `bytes` itself for a raw call), the fast reply's integer, or
   * undefined for an end. Throws an RpcError `ERR_PAYLOAD_DECODE` when the
   * payload does not decode.
   */
  readonly value: unknown;
  /** The response's UUID (docs/protocol.md §6), or null for an end. */
  readonly uuid: string | null;
  readonly uuidBytes: Uint8Array | null;
  /** The first plain stream attached, or null. */
  readonly stream: IncomingStream | null;
  readonly streams: readonly IncomingStream[];
  readonly files: readonly IncomingFile[];
}

const UNDECODED: unique symbol = Symbol('undecoded');
const EMPTY = new Uint8Array(0);

export class ReceivedResponse implements RpcResponse {
  private decoded: unknown = UNDECODED;
  private uuidCache: Uint8Array | null = null;

  constructor(
    readonly kind: RpcResponseKind,
    readonly last: boolean,
    readonly bytes: Uint8Array,
    readonly code: number | null,
    private readonly codec: PayloadCodec | null,
    /** The responder's seed and the response's sequence number, for the UUID. */
    private readonly seed: Uint8Array | null,
    private readonly seq: number,
    private readonly attachments: Attachments,
  ) {}

  static end(attachments: Attachments): ReceivedResponse {
    return new ReceivedResponse('end', true, EMPTY, null, null, null, 0, attachments);
  }

  get value(): unknown {
    if (this.kind === 'fastReply') return this.code;
    if (this.kind === 'end') return undefined;
    if (this.decoded === UNDECODED) {
      if (this.codec === null) {
        this.decoded = this.bytes;
      } else {
        try {
          this.decoded = this.codec.decode(this.bytes);
        } catch (error) {
          throw new RpcError(RpcErrorCode.PayloadDecode, `the response does not decode as ${this.codec.name}: ${messageOf(error)}`, {
            cause: error,
          });
        }
      }
    }
    return this.decoded;
  }

  get uuidBytes(): Uint8Array | null {
    if (this.seed === null) return null;
    this.uuidCache ??= responseUuid(this.seed, this.seq);
    return this.uuidCache;
  }

  get uuid(): string | null {
    const bytes = this.uuidBytes;
    return bytes === null ? null : uuidToString(bytes);
  }

  get stream(): IncomingStream | null {
    return this.attachments.stream;
  }

  get streams(): readonly IncomingStream[] {
    return this.attachments.streams;
  }

  get files(): readonly IncomingFile[] {
    return this.attachments.files;
  }
}
