/**
 * The shape every kind of connection state has in the dispatcher: one
 * method per native event kind that concerns an open connection. The
 * dispatcher creates a state when a connection opens (its kind's opening
 * event: OPEN for WebSocket, RPC_OPEN for the Switchboard protocol) and
 * hands it that connection's later events; what they mean is the state's.
 * A new kind of connection (HTTP requests, SockJS sessions) is one more
 * class of this shape and one more opening event in the dispatcher's table.
 */
import type { NativeServerHandle } from '../native.js';
import type { CloseEvent, DrainEvent, MessageEvent, SockJsSentEvent } from './events.js';

/** A handler failure, as reported to the main thread. */
export interface HandlerFailure {
  handler: 'upgrade' | 'open' | 'message' | 'drain' | 'close' | 'rpc' | 'http';
  connection: number;
  error: unknown;
}

/** What a connection state needs from its dispatcher (one per dispatcher). */
export interface ConnectionHost {
  readonly handle: NativeServerHandle;
  /** Report a failure of the application's code (`handlerError` on the main thread). */
  report(failure: HandlerFailure): void;
  /** The connection is over: forget its state (no event follows its close). */
  forget(id: number): void;
}

export interface ConnectionState {
  /** A complete message: a WebSocket message, or one protocol frame. */
  message(event: MessageEvent): void;
  /** The connection's outbound queue emptied after a send reported BUFFERED. */
  drain(event: DrainEvent): void;
  /**
   * A SockJS session: the messages of one send came before this;
   * acknowledge (`handle.sockjsSent`) once their handlers settled.
   */
  sent?(event: SockJsSentEvent): void;
  /** The connection ended; it gets no other event. */
  close(event: CloseEvent): void;
}
