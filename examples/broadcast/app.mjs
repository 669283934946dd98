// The broadcast room of the SockJS study: every message any client sends on
// `/` is published to every connected client, the sender included. The
// fan-out is native: one publish, no JavaScript per recipient.
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
      app.publish(ROOM, data, { binary: isBinary });
    },
  });
});
