/**
 * Channel history and recovery as the app sees them (docs/scale-out.md,
 * "History and recovery"). The history lives in the broker (Redis); these
 * are the first operations that wait on it, so they return promises, apart
 * from the synchronous per-message ones.
 */
import type { NativeHistoryPage, NativeServerHandle } from './native.js';
import { SwitchboardError, liftNativeError } from './errors.js';

/** Where a publication sits in its channel's history. */
export interface StreamPosition {
  /** The channel's epoch: 16 hex digits, renewed whenever its history was lost. */
  epoch: string;
  /** The publication's offset: 1 for the first of the epoch, then contiguous. */
  offset: number;
}

export interface HistoryQuery {
  /** Only what was published after this position. Without it, the newest `limit` publications. */
  since?: StreamPosition;
  /** Publications returned, at most. Default 100. */
  limit?: number;
}

export interface HistoryPublication {
  offset: number;
  /** A string for a text publication, bytes for a binary one. */
  data: string | Uint8Array;
}

export interface HistoryPage {
  /** The channel's position now: its epoch and last offset (0: nothing published in this epoch). */
  epoch: string;
  offset: number;
  /**
   * The publications continue `since` exactly (same epoch, nothing trimmed
   * in between). When false, what was published after `since` is no longer
   * all there: reload the state instead of replaying. Always true without `since`.
   */
  continuous: boolean;
  /** Oldest first. */
  publications: HistoryPublication[];
}

const decoder = new TextDecoder();
const EPOCH = /^[0-9a-f]{16}$/;

/** Throws `ERR_INVALID_OPTION` unless `position` is a position this server could have given. */
export function checkPosition(name: string, position: StreamPosition): void {
  if (
    position === null ||
    typeof position !== 'object' ||
    typeof position.epoch !== 'string' ||
    !EPOCH.test(position.epoch) ||
    !Number.isSafeInteger(position.offset) ||
    position.offset < 0
  ) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `${name} must be { epoch: 16 hex digits, offset: a whole number >= 0 }`);
  }
}

/** `app.history` / `server.history` on a native handle. */
export async function readHistory(native: NativeServerHandle, channel: string, query: HistoryQuery): Promise<HistoryPage> {
  if (typeof channel !== 'string' || channel === '') throw new SwitchboardError('ERR_INVALID_OPTION', 'history(channel) takes a channel name');
  const { since, limit = 100 } = query;
  if (since !== undefined) checkPosition('history: since', since);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1_000_000) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `history: limit must be an integer in 1..1000000, got ${String(limit)}`);
  }
  let page: NativeHistoryPage;
  try {
    page = await native.history(channel, since?.epoch ?? null, since?.offset ?? 0, limit);
  } catch (error) {
    throw liftNativeError(error);
  }
  return {
    epoch: page.epoch,
    offset: page.offset,
    continuous: page.continuous,
    publications: page.publications.map((p) => ({ offset: p.offset, data: p.binary ? p.data : decoder.decode(p.data) })),
  };
}
