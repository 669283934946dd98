// SockJS test server: the services the SockJS protocol's own test suite
// (sockjs/sockjs-protocol, `sockjs-protocol.py`) runs against, served
// natively by `server.sockjs(prefix, behavior)`:
//
//   /echo                      every message comes back as it was sent
//   /close                     every new session is closed at once, 3000 "Go away!"
//   /disabled_websocket_echo   echo, without the WebSocket transports
//   /cookie_needed_echo        echo, with /info's cookie_needed true
//   /                          a plain-text greeting naming the above
//
//   npm run build && node examples/sockjs/server.mjs
//   SOCKJS_URL=http://127.0.0.1:8081 python sockjs-protocol.py   (in a checkout of sockjs-protocol)
//
// Any SockJS client works too: `new SockJS('http://127.0.0.1:8081/echo')`
// with sockjs-client 1.x, over every transport (websocket, xhr-streaming,
// xhr-polling, eventsource, htmlfile, jsonp-polling).
//
// Environment: PORT (default 8081, the suite's default; 0 = any free port).
// Prints `LISTENING <port>` once ready; SIGINT or SIGTERM closes gracefully.
import { Server } from 'switchboard';

const port = process.env.PORT === undefined ? 8081 : Number(process.env.PORT);

/**
 * Every message comes back as it was sent (one SockJS message is one call).
 * A streaming response ends once 4,096 bytes of frames went through it, as
 * the suite's streaming tests expect (sockjs-node's test server sets the
 * same `response_limit`).
 */
const echo = {
  message: (ws, data) => ws.send(data.toString('utf8')),
  responseLimit: 4096,
};

// Handlers run on the main thread (`workers: 0`): routes are registered inline.
const server = new Server({ workers: 0 });
server.get('/', {
  body: 'Switchboard SockJS test server: /echo, /close, /disabled_websocket_echo, /cookie_needed_echo\n',
  contentType: 'text/plain; charset=utf-8',
});
server.sockjs('/echo', echo);
server.sockjs('/close', {
  open: (ws) => ws.end(3000, 'Go away!'),
  responseLimit: 4096,
});
server.sockjs('/disabled_websocket_echo', { ...echo, websocket: false });
server.sockjs('/cookie_needed_echo', { ...echo, cookieNeeded: true });

await server.listen(port, '127.0.0.1');
console.log(`LISTENING ${server.port}`);

const stop = async () => {
  await server.close({ drainTimeout: 1000 });
  process.exit(0);
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
