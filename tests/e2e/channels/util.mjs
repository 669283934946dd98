// Helpers of the channel tests (not a test file: no `.test.` in the name).
import { connect, nextMessage, waitFor } from '../../helpers/index.mjs';

/**
 * Open a client on a server whose `open` handler sends `{"id": ws.id}` first;
 * resolves with the client and its connection id.
 */
export async function join(url) {
  const client = await connect(url);
  const hello = await nextMessage(client);
  const { id } = JSON.parse(hello.data.toString());
  if (!Number.isInteger(id) || id <= 0) throw new Error(`bad hello ${hello.data}`);
  client.id = id;
  return client;
}

let barrierSeq = 0;

/**
 * Send a unique marker to every client straight to its connection (after
 * whatever was queued before) and resolve with, per client, the messages it
 * received since its previous barrier: `{ text, isBinary, data }`. A message
 * queued for a connection before the marker is on the wire before it, so the
 * lists are complete: "nothing arrived" is a real observation.
 */
export async function barrier(ops, clients, timeoutMs = 5000) {
  const marker = `__barrier_${++barrierSeq}__`;
  for (const c of clients) {
    const status = ops.send(c.id, marker);
    if (status !== 0 && status !== 1) throw new Error(`barrier send to ${c.id} returned ${status}`);
  }
  return Promise.all(clients.map((c) => collectUntil(c, marker, timeoutMs)));
}

/** Messages of `client` up to (not including) the text `marker`. */
export async function collectUntil(client, marker, timeoutMs = 5000) {
  const out = [];
  for (;;) {
    const m = await nextMessage(client, timeoutMs);
    const text = m.data.toString();
    if (!m.isBinary && text === marker) return out;
    out.push({ text, isBinary: m.isBinary, data: Buffer.from(m.data) });
  }
}

/** Texts only. */
export const texts = (list) => list.map((m) => m.text);

export { waitFor };
