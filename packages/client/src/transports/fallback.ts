/**
 * WebSocket first, then a fallback: a `TransportFactory` that opens its
 * first transport and, when that fails before the server was heard from,
 * opens the second for the same connection, and for every later one.
 *
 * "Failed" covers what blocked WebSockets look like: an upgrade refused or
 * broken by a proxy (an error or a close before the open), a WebSocket
 * that opens and then closes before the server said anything (a proxy
 * that accepts the upgrade and drops what follows), and silence
 * (`timeoutMs` without a byte from the server: a proxy that holds the
 * upgrade). The server speaks first after the HELLO (its WELCOME, or a
 * GO_AWAY that refuses the client), so "heard from" is certain: a refusal
 * does not cause a fallback.
 *
 * What the client wrote before that (its preface and HELLO: it sends
 * nothing else before the WELCOME) is written again on the second
 * transport, so the switch is invisible to the client: one connection,
 * one open, and the handshake timeout covers both attempts.
 *
 * The choice sticks: a client that fell back once does not try WebSocket
 * again (a network that blocks it blocks it for the next reconnect too,
 * and each try would cost a connection's delay).
 */

import type { CloseReason, Transport, TransportClose, TransportFactory, TransportHandlers } from '../transport.js';

export interface FallbackOptions {
  /**
   * How long the first transport has to deliver the server's first bytes
   * before the fallback is opened instead (ms, default 5000). Below the
   * client's `handshakeTimeoutMs` (10 s), which counts both attempts.
   */
  timeoutMs?: number;
}

/** `first`, and `second` when `first` fails before the server was heard from (see the module's doc). */
export function fallbackTransport(first: TransportFactory, second: TransportFactory, options: FallbackOptions = {}): TransportFactory {
  const timeoutMs = options.timeoutMs ?? 5000;
  if (!(Number.isInteger(timeoutMs) && timeoutMs > 0)) {
    throw new RangeError(`the fallback's timeoutMs must be a whole number of milliseconds above 0, got ${String(timeoutMs)}`);
  }
  const shared = { fellBack: false };
  return (handlers) => {
    if (shared.fellBack) return second(handlers);
    return new FallbackTransport(first, second, timeoutMs, shared, handlers);
  };
}

class FallbackTransport implements Transport {
  private current: Transport | null = null;
  /** The server's first bytes arrived on the current transport: no fallback any more. */
  private heard = false;
  private switched = false;
  private opened = false;
  private closed = false;
  /** What the client wrote before the server was heard from, for the second transport. */
  private written: Uint8Array[] = [];
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    first: TransportFactory,
    private readonly second: TransportFactory,
    timeoutMs: number,
    private readonly shared: { fellBack: boolean },
    private readonly handlers: TransportHandlers,
  ) {
    this.timer = setTimeout(() => {
      this.timer = null;
      this.fallBack();
    }, timeoutMs);
    const transport = first({
      onOpen: () => {
        if (!this.switched) this.open();
      },
      onData: (bytes) => {
        if (this.switched) return;
        this.hear();
        this.handlers.onData(bytes);
      },
      onClose: (info) => {
        if (this.switched) return;
        if (!this.heard && !this.closed) this.fallBack();
        else this.end(info);
      },
    });
    this.current ??= transport;
  }

  get framing(): 'stream' | 'message' {
    return this.current?.framing ?? 'message';
  }

  /** The transport in use: the first's name, or the fallback's once it took over. */
  get name(): string | undefined {
    return this.current?.name;
  }

  get bufferedAmount(): number {
    return this.current?.bufferedAmount ?? 0;
  }

  write(bytes: Uint8Array): void {
    if (!this.heard) this.written.push(bytes.slice());
    this.current?.write(bytes);
  }

  close(reason?: CloseReason): void {
    this.closed = true;
    this.clearTimer();
    if (this.current === null) {
      this.end({});
      return;
    }
    this.current.close(reason);
  }

  private open(): void {
    if (this.opened) return;
    this.opened = true;
    this.handlers.onOpen();
  }

  private hear(): void {
    this.heard = true;
    this.written = [];
    this.clearTimer();
  }

  /** The first transport failed (or was silent too long): the second takes over, now and for later connections. */
  private fallBack(): void {
    if (this.switched || this.heard || this.closed) return;
    this.switched = true;
    this.clearTimer();
    const failed = this.current;
    this.current = null;
    failed?.close({ code: 'ERR_GOING_AWAY', message: 'falling back' });
    let transport: Transport;
    try {
      transport = this.second({
        onOpen: () => {
          this.shared.fellBack = true;
          if (!this.opened) {
            this.open();
            return;
          }
          // The client wrote its preface and HELLO on the first transport.
          const written = this.written;
          this.written = [];
          for (const bytes of written) transport.write(bytes);
        },
        onData: (bytes) => {
          this.hear();
          this.handlers.onData(bytes);
        },
        onClose: (info) => this.end(info),
      });
    } catch (error) {
      this.end({ error: error instanceof Error ? error : new Error(String(error)) });
      return;
    }
    this.current = transport;
  }

  private clearTimer(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private ended = false;

  private end(info: TransportClose): void {
    if (this.ended) return;
    this.ended = true;
    this.clearTimer();
    this.handlers.onClose(info);
  }
}
