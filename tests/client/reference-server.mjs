// Test scaffolding, not a product: a small Switchboard protocol server
// built from the same Peer and codec as the client (switchboard-rpc),
// so that the client can be tested before, and independently of, the
// native server. It speaks the handshake of docs/protocol.md §2 over TCP,
// TLS, Unix sockets and WebSocket (`ws`), and can misbehave on demand:
// freeze, drop, go away, refuse, write byte by byte, send a bad preface.
import net from 'node:net';
import tls from 'node:tls';
import { once } from 'node:events';
import { WebSocketServer } from 'ws';
import * as P from 'switchboard-rpc';

const SPEAKS = ['msgpack', 'json', 'raw'];

/**
 * One client connection, server side. `link` is the byte transport:
 * { write(bytes), end(), destroy(), framing: 'stream' | 'message' }.
 */
class ServerConnection {
  constructor(server, link) {
    this.server = server;
    this.link = link;
    this.options = server.options;
    this.decoder = new P.FrameDecoder({ maxFrameSize: this.options.maxFrameSize ?? 1 << 20, expectPreface: true });
    this.peer = null;
    this.hello = null;
    this.frozen = false;
    this.closed = false;
    /** Every frame received from the client, in order (HELLO included). */
    this.frames = [];
    this.writeQueue = Promise.resolve();
    this.closedPromise = new Promise((resolve) => (this.resolveClosed = resolve));
  }

  /** Raw bytes to the client, byte by byte when the server is told to. */
  write(bytes) {
    if (this.closed || this.frozen) return;
    const copy = bytes.slice();
    if (!this.options.byteByByte) {
      this.link.write(copy);
      return;
    }
    this.writeQueue = this.writeQueue.then(async () => {
      for (let i = 0; i < copy.length && !this.closed; i++) {
        this.link.write(copy.subarray(i, i + 1));
        await new Promise((resolve) => setImmediate(resolve));
      }
    });
  }

  receive(bytes) {
    if (this.closed || this.frozen) return;
    this.decoder.push(bytes);
    try {
      for (let frame = this.decoder.next(); frame !== null; frame = this.decoder.next()) {
        this.frames.push(frame);
        if (this.peer === null) this.handshake(frame);
        else this.peer.receive(frame);
        if (this.closed) return;
      }
    } catch (error) {
      if (!(error instanceof P.ProtocolError)) throw error;
      if (this.peer !== null) this.peer.fail(error);
      this.end();
    }
  }

  handshake(frame) {
    if (frame.type !== 'hello') throw new P.ProtocolError('ERR_PROTOCOL_HANDSHAKE', `${frame.type} before HELLO`);
    this.hello = frame;
    const prefix = () => this.write(P.PREFACE);
    const refusal = this.options.refuse?.(frame, this);
    if (refusal) {
      prefix();
      this.write(P.encodeFrame({ type: 'goAway', lastCallId: 0, code: refusal.code, message: refusal.message ?? '' }));
      this.end();
      return;
    }
    const name = frame.codecs.find((c) => (this.options.codecs ?? SPEAKS).includes(c));
    if (name === undefined) {
      prefix();
      this.write(P.encodeFrame({ type: 'goAway', lastCallId: 0, code: 'ERR_PROTOCOL_CODEC', message: 'no codec in common' }));
      this.end();
      return;
    }
    const local = {
      seed: P.randomSeed(),
      maxFrameSize: this.options.maxFrameSize ?? 1 << 20,
      initialWindow: this.options.initialWindow ?? 256 * 1024,
      maxConcurrentCalls: this.options.maxConcurrentCalls ?? 100,
      features: P.ALL_FEATURES & frame.features,
    };
    const heartbeatMs = this.options.heartbeatMs ?? frame.heartbeatMs;
    const data = this.options.welcomeData?.(frame) ?? new Uint8Array(0);
    const welcome = P.encodeFrame({ type: 'welcome', ...local, heartbeatMs, codec: name, data });
    const first = new Uint8Array(P.PREFACE.length + welcome.length);
    first.set(P.PREFACE, 0);
    first.set(welcome, P.PREFACE.length);
    this.write(first);
    this.peer = new P.Peer({
      local,
      remote: frame,
      codec: P.findCodec(name),
      write: (bytes) => this.write(bytes),
      handler: (call) => this.dispatch(call),
      exposeHandlerErrors: true,
      onProtocolError: () => this.end(),
      onGoAway: () => this.peer.whenIdle().then(() => this.end()),
    });
    this.server.opened(this);
    this.options.onOpen?.(this);
  }

  dispatch(call) {
    const handler = this.options.handlers?.[call.action];
    if (handler === undefined) throw new P.RpcError('ERR_NOT_IMPLEMENTED', `no handler for "${call.action}"`);
    return handler(call, this);
  }

  /** Graceful go-away, as a server shutting down does: GO_AWAY, then close once idle. */
  goAway(code = 'ERR_GOING_AWAY', message = '') {
    this.peer.goAway(code, message);
    this.peer.whenIdle().then(() => this.end());
  }

  /** A violation reported by the server: GO_AWAY with the code, then close. */
  fail(code, message = 'test violation') {
    this.peer.fail(new P.ProtocolError(code, message));
    this.end();
  }

  /** Stop reading and writing: a hung server (no pongs, nothing). */
  freeze() {
    this.frozen = true;
  }

  /** Close after the bytes written. */
  end() {
    if (this.closed) return;
    this.writeQueue.then(() => {
      this.closed = true;
      this.peer?.close(new Error('server closed'));
      this.link.end();
    });
  }

  /** Reset the connection at once. */
  drop() {
    this.closed = true;
    this.peer?.close(new Error('server dropped the connection'));
    this.link.destroy();
  }

  onTransportClosed() {
    this.closed = true;
    this.peer?.close(new Error('client closed'));
    this.resolveClosed();
  }
}

/** Wires a net.Socket (TCP, TLS or Unix) to a ServerConnection. */
function socketLink(server, socket) {
  if (typeof socket.setNoDelay === 'function') socket.setNoDelay(true);
  const conn = new ServerConnection(server, {
    framing: 'stream',
    write: (bytes) => socket.write(bytes),
    end: () => socket.end(),
    destroy: () => socket.destroy(),
  });
  conn.servername = socket.servername; // TLS: the SNI the client sent
  socket.on('data', (chunk) => conn.receive(chunk));
  socket.on('error', () => {});
  socket.on('close', () => conn.onTransportClosed());
  return conn;
}

/**
 * Starts a reference server. `kind`: 'tcp' | 'tls' | 'unix' | 'ws'.
 * Options: handlers { action: (call, conn) => reply }, heartbeatMs,
 * codecs, refuse(hello, conn) → { code, message } | undefined,
 * welcomeData(hello), onOpen(conn) (right after WELCOME), byteByByte, maxFrameSize, initialWindow,
 * maxConcurrentCalls, rawGreeting (bytes written instead of the protocol:
 * a server that is not a Switchboard peer), silent (accept, say nothing),
 * rejectFirst (destroy that many connections at once), key/cert (tls),
 * path (unix).
 */
export async function startReferenceServer(kind = 'tcp', options = {}) {
  const connections = [];
  const waiters = [];
  let rejectLeft = options.rejectFirst ?? 0;
  const server = {
    options,
    connections,
    accepted: 0,
    opened(conn) {
      connections.push(conn);
      for (const w of waiters.splice(0)) w(conn);
    },
    /** The next connection to complete its handshake. */
    nextConnection() {
      return new Promise((resolve) => waiters.push(resolve));
    },
    get last() {
      return connections.at(-1);
    },
  };
  /** Screening shared by every kind: returns true when the socket is handled already. */
  const screen = (socket) => {
    server.accepted += 1;
    if (rejectLeft > 0 || server.rejectAll) {
      rejectLeft -= 1;
      socket.destroy();
      return true;
    }
    if (options.rawGreeting) {
      socket.on('error', () => {});
      socket.end(options.rawGreeting);
      return true;
    }
    if (options.silent) {
      socket.on('error', () => {});
      return true;
    }
    return false;
  };

  if (kind === 'ws') {
    const wss = new WebSocketServer({
      host: '127.0.0.1',
      port: 0,
      handleProtocols: (protocols) => (protocols.has(P.WEBSOCKET_SUBPROTOCOL) ? P.WEBSOCKET_SUBPROTOCOL : false),
    });
    await once(wss, 'listening');
    wss.on('connection', (ws) => {
      if (screen({ destroy: () => ws.terminate(), end: (b) => (ws.send(b), ws.close()), on: () => {} })) return;
      const conn = new ServerConnection(server, {
        framing: 'message',
        write: (bytes) => ws.send(bytes),
        end: () => ws.close(1000),
        destroy: () => ws.terminate(),
      });
      conn.ws = ws;
      ws.on('message', (data, isBinary) => {
        if (!isBinary) return ws.close(1003);
        conn.receive(data);
      });
      ws.on('error', () => {});
      ws.on('close', () => conn.onTransportClosed());
    });
    server.url = `ws://127.0.0.1:${wss.address().port}/rpc`;
    server.close = async () => {
      for (const ws of wss.clients) ws.terminate();
      await new Promise((resolve) => wss.close(resolve));
    };
    return server;
  }

  const onSocket = (socket) => {
    if (!screen(socket)) socketLink(server, socket);
  };
  let listener;
  if (kind === 'tls') {
    listener = tls.createServer({ key: options.key, cert: options.cert }, onSocket);
  } else {
    listener = net.createServer(onSocket);
  }
  const sockets = new Set();
  listener.on(kind === 'tls' ? 'secureConnection' : 'connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  if (kind === 'unix') {
    listener.listen(options.path);
    await once(listener, 'listening');
    server.path = options.path;
    server.url = `unix:${options.path}`;
  } else {
    listener.listen(0, '127.0.0.1');
    await once(listener, 'listening');
    server.port = listener.address().port;
    server.url = `${kind === 'tls' ? 'tls' : 'tcp'}://${kind === 'tls' ? 'localhost' : '127.0.0.1'}:${server.port}`;
  }
  server.close = async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => listener.close(resolve));
  };
  return server;
}
