// The app module of the Switchboard benchmark server (switchboard.mjs),
// loaded in every worker thread: the three endpoints of ../SCENARIOS.md.
//
//   /echo      every message goes back to its sender.
//   /room      every connection subscribes to `room`; every message is
//              published to `room`, the sender included (app.publish).
//   /channels  the first message is `join:<channel>`: subscribe and answer
//              `joined`. Every later message goes back to the sender, then
//              to the channel's other members (ws.publish excludes the sender).
//   /publish   (cross-node) subscribes to nothing; every message is
//              published to `room`, as on /room: with a broker (REDIS_URL in
//              switchboard.mjs) it reaches `room`'s subscribers on every server.
//
// Route settings, the same on the three routes (see SCENARIOS.md: what a
// competent user would choose for a benchmark):
//   idleTimeout 0        no idle close: a run lasts longer than the default
//                        120 s allows for an idle connection (ws-idle).
//   maxBackpressure 16 MiB  a connection may queue that much before the
//                        slow-consumer policy (the default 'drop') applies;
//                        the default 1 MiB could drop fan-out under bursts.
//   maxPayloadLength 16 MiB  as the peers are configured.
//   compression off      the default, written out.
// pingInterval stays at its default (a ping after 30 s of quiet), as the
// peers keep their heartbeats.
import { defineApp } from 'switchboard';

const MiB = 1024 * 1024;

const routeOptions = {
  idleTimeout: 0,
  maxBackpressure: 16 * MiB,
  maxPayloadLength: 16 * MiB,
  compression: false,
};

const ROOM = 'room';
const JOIN = 'join:';

// SWITCHBOARD_TRANSPORT=sockjs serves the same endpoints as SockJS services
// (app.sockjs: the load generator's `sockjs` framing on their WebSocket
// transport), for the comparison with sockjs-node.
const SOCKJS = process.env.SWITCHBOARD_TRANSPORT === 'sockjs';

export default defineApp((app) => {
  const endpoint = SOCKJS ? app.sockjs.bind(app) : app.ws.bind(app);
  endpoint('/echo', {
    ...routeOptions,
    message(ws, data, isBinary) {
      ws.send(data, isBinary);
    },
  });

  endpoint('/room', {
    ...routeOptions,
    open(ws) {
      ws.subscribe(ROOM);
    },
    message(ws, data, isBinary) {
      app.publish(ROOM, data, { binary: isBinary });
    },
  });

  endpoint('/publish', {
    ...routeOptions,
    message(ws, data, isBinary) {
      app.publish(ROOM, data, { binary: isBinary });
    },
  });

  // A connection stays on one worker, so this worker's map holds the channel
  // of every connection whose events it handles.
  const channelOf = new Map();
  endpoint('/channels', {
    ...routeOptions,
    message(ws, data, isBinary) {
      const channel = channelOf.get(ws.id);
      if (channel !== undefined) {
        ws.send(data, isBinary);
        ws.publish(channel, data, { binary: isBinary });
        return;
      }
      const text = data.toString('latin1');
      if (!text.startsWith(JOIN)) {
        ws.end(1008, 'join:<channel> first');
        return;
      }
      const joined = text.slice(JOIN.length);
      channelOf.set(ws.id, joined);
      ws.subscribe(joined);
      ws.send('joined');
    },
    close(ws) {
      channelOf.delete(ws.id);
    },
  });
});
