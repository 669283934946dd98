/**
 * A WebSocket connection in the dispatcher: its route's handlers run
 * through a serial queue, so a handler that returns a promise holds the
 * connection's later events (other connections go on). A handler that
 * throws or rejects closes only its own connection, with 1011, and is
 * reported; the connection's close handler still runs.
 */
import type { WebSocketBehavior } from '../app.js';
import type { WebSocket } from '../websocket.js';
import type { ConnectionHost, ConnectionState, HandlerFailure } from './connection-state.js';
import {
  KIND_CLOSE,
  KIND_DRAIN,
  KIND_MESSAGE,
  KIND_OPEN,
  KIND_SOCKJS_SENT,
  type CloseEvent,
  type DrainEvent,
  type MessageEvent,
  type OpenEvent,
  type SockJsSentEvent,
} from './events.js';
import { SerialQueue, type SerialSteps } from './serial-queue.js';

type WebSocketEvent = OpenEvent | MessageEvent | DrainEvent | SockJsSentEvent | CloseEvent;
type Kind = WebSocketEvent['kind'];

/** The handler each event runs (its result is what the queue awaits). */
const HANDLERS: { readonly [K in Kind]: (state: WebSocketState, event: Extract<WebSocketEvent, { kind: K }>) => unknown } = {
  [KIND_OPEN]: (state) => state.behavior.open?.(state.ws as never),
  // Once a handler failed, the connection is closing: its messages and
  // drains are not handled, its close is.
  [KIND_MESSAGE]: (state, event) => (state.failed ? undefined : state.behavior.message?.(state.ws as never, event.data, event.isBinary)),
  [KIND_DRAIN]: (state) => (state.failed ? undefined : state.behavior.drain?.(state.ws as never)),
  // The send's messages were handled (in turn: the queue waited for their
  // handlers): its answer may go.
  [KIND_SOCKJS_SENT]: (state, event) => void state.host.handle.sockjsSent(event.http),
  [KIND_CLOSE]: (state, event) => {
    state.ws.isOpen = false;
    state.host.forget(state.ws.id);
    return state.behavior.close?.(state.ws as never, event.code, event.reason);
  },
};

/** The handler's name in failure reports. */
const NAMES: { readonly [K in Kind]: HandlerFailure['handler'] } = {
  [KIND_OPEN]: 'open',
  [KIND_MESSAGE]: 'message',
  [KIND_DRAIN]: 'drain',
  [KIND_SOCKJS_SENT]: 'message',
  [KIND_CLOSE]: 'close',
};

export class WebSocketState implements ConnectionState, SerialSteps<WebSocketEvent> {
  /** A handler threw or rejected: the connection is closing with 1011. */
  failed = false;
  private readonly queue: SerialQueue<WebSocketEvent> = new SerialQueue<WebSocketEvent>(this);

  constructor(
    readonly host: ConnectionHost,
    readonly ws: WebSocket<unknown>,
    readonly behavior: WebSocketBehavior<never>,
  ) {}

  /** Run the `open` handler (first in the queue: the connection's events wait for it). */
  open(event: OpenEvent): void {
    this.queue.push(event);
  }

  message(event: MessageEvent): void {
    this.queue.push(event);
  }

  drain(event: DrainEvent): void {
    this.queue.push(event);
  }

  sent(event: SockJsSentEvent): void {
    this.queue.push(event);
  }

  /** The close handler runs in turn, after the handlers before it; the state is forgotten then. */
  close(event: CloseEvent): void {
    this.queue.push(event);
  }

  /** @internal The queue's step: one event's handler. */
  runStep(event: WebSocketEvent): unknown {
    return (HANDLERS[event.kind] as (state: WebSocketState, event: WebSocketEvent) => unknown)(this, event);
  }

  /** @internal */
  stepFailed(error: unknown, event: WebSocketEvent): void {
    this.host.report({ handler: NAMES[event.kind], connection: this.ws.id, error });
    if (!this.failed && event.kind !== KIND_CLOSE) {
      this.failed = true;
      this.host.handle.end(this.ws.id, 1011, 'ERR_HANDLER_FAILED');
    }
  }
}
