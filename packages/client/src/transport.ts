/**
 * What the client needs from a connection: bytes in and out, a close, and
 * three events. One transport is one connection; the client asks its
 * `TransportFactory` for a new one at every (re)connect.
 *
 * The events are callbacks handed to the factory, not listeners added
 * afterwards, so no byte can arrive before someone listens.
 */

/** Why the client closes a transport: a protocol code (docs/protocol.md §8) and a message. */
export interface CloseReason {
  code: string;
  message: string;
}

/** How a transport ended. */
export interface TransportClose {
  /** Set when the connection failed (refused, reset, TLS error, a text WebSocket message…). */
  error?: Error;
  /** The WebSocket close code, when there was one. */
  closeCode?: number;
}

export interface TransportHandlers {
  /** The connection is established: `write` may be used. Called at most once. */
  onOpen(): void;
  /**
   * Bytes received. The array may be reused after the call returns (the
   * client copies what it keeps). For a `message` transport, one call is
   * one WebSocket message.
   */
  onData(bytes: Uint8Array): void;
  /** The connection is gone, or could not be established. Called exactly once, last. */
  onClose(info: TransportClose): void;
}

export interface Transport {
  /**
   * `stream`: bytes arrive in arbitrary pieces (TCP, TLS, Unix sockets).
   * `message`: each `onData` is one WebSocket message, which must hold
   * whole frames (docs/protocol.md §2, over WebSocket).
   */
  readonly framing: 'stream' | 'message';
  /**
   * What carries the connection, for the application (`client.transport`):
   * `'websocket'`, `'xhr-streaming'` or `'xhr-polling'` (the SockJS
   * fallback), `'tcp'`, `'tls'`, `'unix'`. Optional for transports of
   * one's own.
   */
  readonly name?: string;
  /** Bytes written and not yet handed to the network (for monitoring). */
  readonly bufferedAmount: number;
  /**
   * Sends bytes: one or more whole frames (a WebSocket transport sends them
   * as one message). Only after `onOpen`. Never throws: a failed write
   * shows up as `onClose`. Data is never dropped while the connection
   * lives: what the network cannot take yet is buffered.
   */
  write(bytes: Uint8Array): void;
  /**
   * Optional, byte-stream transports only: sends `parts` in order as if
   * concatenated, without copying them (the client then writes large
   * payloads by reference; see `PeerOptions.writeParts`). Same rules as
   * `write`.
   */
  writeParts?(parts: readonly Uint8Array[]): void;
  /**
   * Closes the connection after the bytes already written (`reason` says
   * why, for a WebSocket close frame). `onClose` follows.
   */
  close(reason?: CloseReason): void;
}

/**
 * Opens one connection; called again for every reconnect. It should call
 * no handler before it returns (the client copes if `onOpen` or `onClose`
 * come from inside it), and may throw when it cannot even try (a bad URL).
 */
export type TransportFactory = (handlers: TransportHandlers) => Transport;
