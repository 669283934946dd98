// uWebSockets.js as a benchmark server of the suite (contract:
// ../SCENARIOS.md), from the npm package @trufflesuite/uws-js-unofficial
// 20.30.0-unofficial.0, pinned in ../package.json: a registry copy of
// uWebSockets.js (v20.30 by its version) with prebuilt binaries; upstream
// publishes to GitHub only, which this project's machines cannot reach. Its
// loader falls back to a pure-JS imitation (on `ws`) when no binary fits the
// Node ABI; this server refuses to run on that fallback, since it would not
// be uWebSockets.js. (`app.close()`, used on SIGTERM, is in the binary though
// not in the package's typings.)
//
//   PORT=0 node benchmarks/peers/uws.mjs
//
// Single-threaded (uWebSockets.js runs on Node's main thread). Settings, the
// same on the three routes:
//   compression DISABLED       SCENARIOS.md: compression off (also the default).
//   idleTimeout 0              no idle close (the default 120 s would close
//                              ws-idle connections); hence no automatic pings.
//   maxBackpressure 16 MiB     the default 64 KiB skips fan-out messages to a
//                              connection with more than that queued.
//   closeOnBackpressureLimit false  the default: skip, never close.
//   maxPayloadLength 16 MiB    the default 16 KiB is small for a benchmark.
// Endpoints: /echo sends back; /room subscribes to `room` on open and
// app.publish()es every message (app.publish reaches the sender too);
// /channels takes `join:<ch>` (subscribe, answer `joined`), then sends every
// message back and ws.publish()es it to the channel (ws.publish excludes the
// sender). The channel lives in the socket's user data.
//
// Prints `LISTENING <port>` on stdout once listening; SIGTERM (or SIGINT)
// closes every connection and exits 0.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const PACKAGE = '@trufflesuite/uws-js-unofficial';

if (process.env.UWS_USE_FALLBACK) {
  console.error(`uws: UWS_USE_FALLBACK is set; refusing to benchmark the JavaScript fallback`);
  process.exit(2);
}
const uWS = require(PACKAGE);
const nativeLoaded = Object.keys(require.cache).some((file) => file.includes(PACKAGE) && file.endsWith('.node'));
if (!nativeLoaded) {
  console.error(`uws: no native binary of ${PACKAGE} fits ${process.platform}-${process.arch} ABI ${process.versions.modules}; refusing to benchmark the JavaScript fallback`);
  process.exit(2);
}

const MiB = 1024 * 1024;
const behavior = {
  compression: uWS.DISABLED,
  idleTimeout: 0,
  maxBackpressure: 16 * MiB,
  closeOnBackpressureLimit: false,
  maxPayloadLength: 16 * MiB,
};

const ROOM = 'room';
const JOIN = 'join:';
const decoder = new TextDecoder('latin1');

const port = process.env.PORT === undefined || process.env.PORT === '' ? 0 : Number(process.env.PORT);
const app = uWS.App();

app.ws('/echo', {
  ...behavior,
  message(ws, message, isBinary) {
    ws.send(message, isBinary);
  },
});

app.ws('/room', {
  ...behavior,
  open(ws) {
    ws.subscribe(ROOM);
  },
  message(ws, message, isBinary) {
    app.publish(ROOM, message, isBinary);
  },
});

app.ws('/channels', {
  ...behavior,
  message(ws, message, isBinary) {
    const data = ws.getUserData();
    if (data.channel !== undefined) {
      ws.send(message, isBinary);
      ws.publish(data.channel, message, isBinary);
      return;
    }
    const text = decoder.decode(message);
    if (!text.startsWith(JOIN)) {
      ws.end(1008, 'join:<channel> first');
      return;
    }
    data.channel = text.slice(JOIN.length);
    ws.subscribe(data.channel);
    ws.send('joined');
  },
});

app.listen('127.0.0.1', port, (listenSocket) => {
  if (!listenSocket) {
    console.error(`uws: cannot listen on 127.0.0.1:${port}`);
    process.exit(1);
  }
  process.stdout.write(`LISTENING ${uWS.us_socket_local_port(listenSocket)}\n`);

  const stop = () => {
    uWS.us_listen_socket_close(listenSocket);
    app.close();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
});
