// Helpers of the worker tests (not a test file).
import { connect } from '../../helpers/index.mjs';

const parse = (m) => {
  try {
    return JSON.parse(m.data.toString());
  } catch {
    return undefined;
  }
};

/** Resolve with the first parsed message of `client` matching `predicate`. */
export async function waitForMessage(client, predicate, timeoutMs = 5000, what = 'a message') {
  const started = Date.now();
  for (;;) {
    for (const m of client.received) {
      const value = parse(m);
      if (value !== undefined && predicate(value)) return value;
    }
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Every parsed message of `client` matching `predicate`, received so far. */
export function messages(client, predicate) {
  return client.received.map(parse).filter((v) => v !== undefined && predicate(v));
}

/** Connect to a `workers-app.mjs` server: resolves with the client, its id and worker. */
export async function joinWorker(url) {
  const client = await connect(url);
  const hello = await waitForMessage(client, (m) => m.hello === true, 5000, 'hello');
  client.id = hello.id;
  client.worker = hello.worker;
  return client;
}

let seq = 0;
/** Send a request and resolve with its reply (matched by `seq`). */
export async function rpc(client, request, timeoutMs = 5000) {
  const s = ++seq;
  client.send(JSON.stringify({ ...request, seq: s }));
  return waitForMessage(client, (m) => m.seq === s, timeoutMs, `reply to ${request.op}`);
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
