/**
 * The WebSocket transport (docs/protocol.md §2, over WebSocket): binary
 * messages, subprotocol `switchboard.v1`. It uses the global `WebSocket`
 * (browsers, Node ≥ 22) or a constructor passed in, such as the `ws`
 * package's in Node 20.
 */

import { ProtocolError, WEBSOCKET_SUBPROTOCOL } from 'switchboard-rpc';
import type { CloseReason, Transport, TransportHandlers, TransportFactory } from '../transport.js';

/** The events the transport listens to, as browsers and `ws` deliver them. */
export interface WebSocketEventLike {
  /** `message`: the payload. */
  readonly data?: unknown;
  /** `close`: the close code and reason. */
  readonly code?: number;
  readonly reason?: string;
  /** `error` (the `ws` package): what failed. */
  readonly error?: unknown;
  readonly message?: string;
}

/** What the transport needs of a WebSocket: the browser's, or the `ws` package's. */
export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  /** The subprotocol the server chose. */
  readonly protocol: string;
  readonly bufferedAmount: number;
  send(data: Uint8Array): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'open' | 'message' | 'error' | 'close', listener: (event: WebSocketEventLike) => void): void;
}

/** `new WebSocket(url, protocols)`: the browser's class, or `ws`'s (which takes `webSocketOptions` as a third argument). */
export type WebSocketConstructor = new (url: string, protocols: string | string[]) => WebSocketLike;

export interface WebSocketTransportOptions {
  /** The WebSocket class to use (default: the global one; required in Node 20, e.g. `import { WebSocket } from 'ws'`). */
  WebSocket?: WebSocketConstructor;
  /** A third constructor argument, for the `ws` package (`headers`, `ca`, `rejectUnauthorized`…); browsers take none. */
  webSocketOptions?: Record<string, unknown>;
}

const OPEN = 1;

/** The WebSocket close code for why the client closes (§8): browsers accept only 1000 and 3000–4999, hence the fallback in `close`. */
function closeCode(code: string): number {
  if (code === 'ERR_GOING_AWAY') return 1001;
  if (code === 'ERR_PROTOCOL_FRAME_TOO_LARGE') return 1009;
  if (code.startsWith('ERR_PROTOCOL_')) return 1002;
  return 1000;
}

/** The global WebSocket, when there is one. */
export function globalWebSocket(): WebSocketConstructor | undefined {
  const candidate = (globalThis as { WebSocket?: unknown }).WebSocket;
  return typeof candidate === 'function' ? (candidate as WebSocketConstructor) : undefined;
}

/** A `TransportFactory` that opens a WebSocket to `url` (`ws:` or `wss:`). */
export function webSocketTransport(url: string | URL, options: WebSocketTransportOptions = {}): TransportFactory {
  const WebSocketClass = options.WebSocket ?? globalWebSocket();
  if (WebSocketClass === undefined) {
    throw new TypeError("there is no global WebSocket here (Node < 22): pass one, e.g. { WebSocket } from the 'ws' package");
  }
  const href = String(url);
  return (handlers) => new WebSocketTransport(WebSocketClass, href, options.webSocketOptions, handlers);
}

class WebSocketTransport implements Transport {
  readonly framing = 'message';
  readonly name = 'websocket';
  private readonly ws: WebSocketLike;
  private error: Error | undefined;
  private reported = false;

  constructor(WebSocketClass: WebSocketConstructor, url: string, wsOptions: Record<string, unknown> | undefined, private readonly handlers: TransportHandlers) {
    const ws =
      wsOptions === undefined
        ? new WebSocketClass(url, WEBSOCKET_SUBPROTOCOL)
        : new (WebSocketClass as unknown as new (url: string, protocols: string, options: Record<string, unknown>) => WebSocketLike)(url, WEBSOCKET_SUBPROTOCOL, wsOptions);
    this.ws = ws;
    ws.binaryType = 'arraybuffer';
    ws.addEventListener('open', () => {
      if (ws.protocol !== WEBSOCKET_SUBPROTOCOL) {
        const chose = ws.protocol === '' ? 'none' : `"${ws.protocol}"`;
        this.fail(new ProtocolError('ERR_PROTOCOL_HANDSHAKE', `the server did not accept subprotocol ${WEBSOCKET_SUBPROTOCOL} (it chose ${chose})`), 1002);
        return;
      }
      if (!this.reported) handlers.onOpen();
    });
    ws.addEventListener('message', (event) => this.onMessage(event.data));
    ws.addEventListener('error', (event) => {
      // Browsers say nothing about the error; `ws` gives it.
      this.error ??= event.error instanceof Error ? event.error : new Error(event.message || 'WebSocket error');
    });
    ws.addEventListener('close', (event) => {
      let error = this.error;
      if (error === undefined && event.code !== 1000) {
        error = new Error(`the WebSocket closed with code ${event.code ?? 'none'}${event.reason ? ` (${event.reason})` : ''}`);
      }
      this.report(error, event.code);
    });
  }

  get bufferedAmount(): number {
    return this.ws.bufferedAmount;
  }

  write(bytes: Uint8Array): void {
    if (this.reported || this.ws.readyState !== OPEN) return; // the close event follows
    try {
      this.ws.send(bytes);
    } catch (error) {
      this.fail(error instanceof Error ? error : new Error(String(error)), 1011);
    }
  }

  close(reason?: CloseReason): void {
    const code = reason === undefined ? 1000 : closeCode(reason.code);
    // The reason is the protocol code: ASCII, well within 123 bytes.
    const text = reason?.code.slice(0, 123) ?? '';
    try {
      this.ws.close(code, text);
    } catch {
      try {
        this.ws.close(1000, text); // a browser refusing 1001/1002/1009
      } catch {
        // already closing
      }
    }
  }

  private onMessage(data: unknown): void {
    if (this.reported) return;
    if (data instanceof ArrayBuffer) {
      this.handlers.onData(new Uint8Array(data));
    } else if (ArrayBuffer.isView(data)) {
      // `ws` with another binaryType: a Buffer.
      this.handlers.onData(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    } else if (typeof data === 'string') {
      this.fail(new ProtocolError('ERR_PROTOCOL_MALFORMED', 'the server sent a text message'), 1003);
    } else {
      this.fail(new ProtocolError('ERR_PROTOCOL_MALFORMED', 'a message that is neither binary nor text'), 1003);
    }
  }

  /** Closes with `wsCode` and reports `error` at once (the close event may take a round trip). */
  private fail(error: Error, wsCode: number): void {
    try {
      this.ws.close(wsCode, error instanceof ProtocolError ? error.code : '');
    } catch {
      try {
        this.ws.close(1000);
      } catch {
        // already closing
      }
    }
    this.report(error, wsCode);
  }

  private report(error: Error | undefined, wsCode: number | undefined): void {
    if (this.reported) return;
    this.reported = true;
    this.handlers.onClose(error === undefined ? { closeCode: wsCode } : { error, closeCode: wsCode });
  }
}
