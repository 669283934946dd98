/**
 * Presence as the app sees it (docs/scale-out.md, "Presence"): who is in
 * a channel on every server, each member with the info its app gave it.
 * Kept by the broker for the channels `broker.presence` names; reading it
 * waits on Redis, so it returns a promise.
 */
import type { NativeServerHandle } from './native.js';
import { SwitchboardError, liftNativeError } from './errors.js';

/** One member of a channel: a connection (or virtual socket) of some server. */
export interface PresenceMember {
  /** Its id, which names it on every server. */
  id: number;
  /** What its app set with `setPresenceInfo` (null when nothing). */
  info: unknown;
}

/** The channel that carries `channel`'s joins and leaves, each a JSON text `{ "event": "join" | "leave", "id", "info" }`. */
export function presenceChannel(channel: string): string {
  return `$presence:${channel}`;
}

/** `presence(channel)` on a native handle. */
export async function readPresence(native: NativeServerHandle, channel: string): Promise<PresenceMember[]> {
  if (typeof channel !== 'string' || channel === '') throw new SwitchboardError('ERR_INVALID_OPTION', 'presence(channel) takes a channel name');
  let members: { id: number; info: string }[];
  try {
    members = await native.presence(channel);
  } catch (error) {
    throw liftNativeError(error);
  }
  return members.map(({ id, info }) => ({ id, info: parse(info) }));
}

/** `setPresenceInfo(id, info)` on a native handle: `info` as JSON. */
export function writePresenceInfo(native: NativeServerHandle, id: number, info: unknown): boolean {
  let text: string | undefined;
  try {
    text = JSON.stringify(info);
  } catch (error) {
    throw new SwitchboardError('ERR_INVALID_OPTION', 'presence info must be JSON-serialisable', { cause: error });
  }
  if (text === undefined) throw new SwitchboardError('ERR_INVALID_OPTION', 'presence info must be JSON-serialisable (not undefined or a function)');
  return native.setPresenceInfo(id, text);
}

function parse(info: string): unknown {
  try {
    return JSON.parse(info);
  } catch {
    return info; // written by something else than a server: shown as it is
  }
}
