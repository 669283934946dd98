// The echo app, loaded in every worker: echoes each message on `/` as it
// came (text as text, binary as binary).
import { defineApp } from 'switchboard';
import { routeOptionsFromEnv } from '../env.mjs';

export default defineApp((app) => {
  app.ws('/', {
    ...routeOptionsFromEnv(),
    message(ws, data, isBinary) {
      ws.send(data, isBinary);
    },
  });
});
