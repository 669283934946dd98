// What the runnable examples share: options from the environment, so tests,
// conformance runs and benchmarks drive the same programs.
import { readFileSync } from 'node:fs';
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

/**
 * TLS from TLS_CERT and TLS_KEY (paths of PEM files): both given, the
 * example serves `wss://`; neither, `ws://`; one alone is a mistake.
 */
export function tlsFromEnv() {
  const { TLS_CERT: cert, TLS_KEY: key } = process.env;
  if (!cert && !key) return undefined;
  if (!cert || !key) throw new Error('give both TLS_CERT and TLS_KEY (paths of PEM files), or neither');
  return { cert: readFileSync(cert), key: readFileSync(key) };
}

/**
 * The broker from REDIS_URL (`redis://host:port`) or NATS_URL
 * (`nats://host:4222`): given, the example's channels span every process
 * started with the same URL (docs/scale-out.md). Not both.
 */
export function brokerFromEnv() {
  const { REDIS_URL: redis, NATS_URL: nats } = process.env;
  if (redis && nats) throw new Error('give REDIS_URL or NATS_URL, not both');
  if (nats) return { nats };
  return redis ? { redis } : undefined;
}

/** Start a server for `app` on PORT with WORKERS workers (and REDIS_URL's or NATS_URL's broker); close on SIGINT/SIGTERM. */
export async function startExample(name, app) {
  const workers = process.env.WORKERS === undefined ? os.availableParallelism() : Number(process.env.WORKERS);
  const port = process.env.PORT === undefined ? 9001 : Number(process.env.PORT);
  const tls = tlsFromEnv();
  const broker = brokerFromEnv();
  const server = new Server({ app, workers, broker });
  const [address] = await server.listen([{ host: '127.0.0.1', port, tls }]);
  const scheme = tls ? 'wss' : 'ws';
  const through = broker ? `, channels through ${broker.redis ?? broker.nats}` : '';
  console.log(`${name} server listening on ${scheme}://127.0.0.1:${address.port}/ (${workers} workers${through})`);
  const stop = async () => {
    await server.close({ drainTimeout: 1000 });
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return server;
}
