// The broadcast room of the SockJS study: every message any client sends on
// `/` is published to every connected client, the sender included. The
// fan-out is native: one publish, no JavaScript per recipient. With
// REDIS_URL (or NATS_URL), every process started with the same URL is one
// room.
import { defineApp } from 'switchboard';
import { routeOptionsFromEnv } from '../env.mjs';

const ROOM = 'room';

export default defineApp((app) => {
  app.ws('/', {
    ...routeOptionsFromEnv(),
    open(ws) {
      ws.subscribe(ROOM);
    },
    message(ws, data, isBinary) {
      try {
        app.publish(ROOM, data, { binary: isBinary });
      } catch (error) {
        // With a broker, while it is unreachable: tell the sender
        // rather than drop the message silently (or close its connection).
        if (error.code !== 'ERR_BROKER_UNAVAILABLE' && error.code !== 'ERR_BROKER_BACKLOG') throw error;
        ws.send(`${error.code}: not sent`);
      }
    },
  });
});
