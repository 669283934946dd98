// What the runnable examples share: options from the environment, so tests,
// conformance runs and benchmarks drive the same programs.
import os from 'node:os';
import { Server } from 'switchboard';

/** Route options from COMPRESSION, COMPRESSION_THRESHOLD, MAX_FRAGMENTS and MAX_PAYLOAD_LENGTH. */
export function routeOptionsFromEnv() {
  const options = {};
  if (process.env.COMPRESSION === '1') {
    options.compression =
      process.env.COMPRESSION_THRESHOLD === undefined ? true : { threshold: Number(process.env.COMPRESSION_THRESHOLD) };
  }
  if (process.env.MAX_FRAGMENTS !== undefined) options.maxFragments = Number(process.env.MAX_FRAGMENTS);
  if (process.env.MAX_PAYLOAD_LENGTH !== undefined) options.maxPayloadLength = Number(process.env.MAX_PAYLOAD_LENGTH);
  return options;
}

/** Start a server for `app` on PORT with WORKERS workers; close on SIGINT/SIGTERM. */
export async function startExample(name, app) {
  const workers = process.env.WORKERS === undefined ? os.availableParallelism() : Number(process.env.WORKERS);
  const port = process.env.PORT === undefined ? 9001 : Number(process.env.PORT);
  const server = new Server({ app, workers });
  const [address] = await server.listen(port, '127.0.0.1');
  console.log(`${name} server listening on ws://127.0.0.1:${address.port}/ (${workers} workers)`);
  const stop = async () => {
    await server.close({ drainTimeout: 1000 });
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return server;
}
