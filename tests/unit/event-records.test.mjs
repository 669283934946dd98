// The TypeScript decoder of the native event records against the
// language-neutral vectors of spec/events/ (the Rust writer and reader run
// the same file: crates/runtime/src/events/record/tests.rs).
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  decodeBatch,
  KIND_CLOSE,
  KIND_DRAIN,
  KIND_SOCKJS_SENT,
  KIND_HTTP_BODY,
  KIND_HTTP_BODY_ERROR,
  KIND_HTTP_FILE_DONE,
  KIND_HTTP_OPEN,
  KIND_HTTP_REQUEST,
  KIND_MESSAGE,
  KIND_OPEN,
  KIND_RPC_OPEN,
  KIND_UPGRADE,
} from '../../packages/server/dist/esm/internal/events.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const vectors = JSON.parse(readFileSync(path.join(root, 'spec', 'events', 'records.json'), 'utf8'));

const KINDS = {
  upgrade: KIND_UPGRADE,
  open: KIND_OPEN,
  message: KIND_MESSAGE,
  messageOwned: KIND_MESSAGE,
  close: KIND_CLOSE,
  drain: KIND_DRAIN,
  sockjsSent: KIND_SOCKJS_SENT,
  rpcOpen: KIND_RPC_OPEN,
  httpOpen: KIND_HTTP_OPEN,
  httpRequest: KIND_HTTP_REQUEST,
  httpBody: KIND_HTTP_BODY,
  httpBodyOwned: KIND_HTTP_BODY,
  httpBodyError: KIND_HTTP_BODY_ERROR,
  httpFileDone: KIND_HTTP_FILE_DONE,
};

/** The kinds whose data is a buffer handed over beside the batch. */
const OWNED_KINDS = new Set(['messageOwned', 'httpBodyOwned']);

/** The buffer a `messageOwned` or `httpBodyOwned` vector points at (index 0 is the batch). */
function ownedFor(record) {
  const owned = [Buffer.alloc(0)];
  for (let i = 0; i < record.index; i++) owned.push(Buffer.from(`other ${i}`));
  owned.push(Buffer.from(`owned buffer ${record.index}`));
  return owned;
}

/** What the decoder should produce for a vector's record. */
function expected(record, owned) {
  const hex = (s) => Buffer.from(s, 'hex');
  const tls = record.tls ? { ...record.tls, peerCertificate: hex(record.tls.peerCertificate) } : undefined;
  switch (record.kind) {
    case 'upgrade': {
      const headers = {};
      for (const [name, value] of record.headers) headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
      return { kind: KIND_UPGRADE, id: record.id, route: record.route, remoteAddress: record.remoteAddress, path: record.path, query: record.query, tls, headers };
    }
    case 'open':
      return { kind: KIND_OPEN, id: record.id, route: record.route, remoteAddress: record.remoteAddress, protocol: record.protocol, extensions: record.extensions, tls };
    case 'message':
      return { kind: KIND_MESSAGE, id: record.id, isBinary: record.isBinary, data: hex(record.data) };
    case 'messageOwned':
      return { kind: KIND_MESSAGE, id: record.id, isBinary: record.isBinary, data: owned[1 + record.index] };
    case 'close':
      return { kind: KIND_CLOSE, id: record.id, code: record.code, reason: record.reason };
    case 'drain':
      return { kind: KIND_DRAIN, id: record.id };
    case 'sockjsSent':
      return { kind: KIND_SOCKJS_SENT, id: record.id, http: record.http };
    case 'rpcOpen':
      return { kind: KIND_RPC_OPEN, id: record.id, route: record.route, transport: record.transport, remoteAddress: record.remoteAddress, tls, hello: hex(record.hello), welcome: hex(record.welcome) };
    case 'httpOpen':
      return { kind: KIND_HTTP_OPEN, id: record.id, remoteAddress: record.remoteAddress, tls };
    case 'httpRequest':
      return {
        kind: KIND_HTTP_REQUEST,
        id: record.id,
        route: record.route,
        method: record.method,
        flags: record.flags,
        started: record.started,
        path: record.path,
        query: record.query,
        params: record.params,
        headers: hex(record.headers),
      };
    case 'httpBody':
      return { kind: KIND_HTTP_BODY, id: record.id, last: record.last, data: hex(record.data), owned: false };
    case 'httpBodyOwned':
      return { kind: KIND_HTTP_BODY, id: record.id, last: record.last, data: owned[1 + record.index], owned: true };
    case 'httpBodyError':
      return { kind: KIND_HTTP_BODY_ERROR, id: record.id, status: record.status, reason: record.reason };
    case 'httpFileDone':
      return { kind: KIND_HTTP_FILE_DONE, id: record.id, status: record.status, sent: record.sent };
    default:
      throw new Error(`unknown kind ${record.kind}`);
  }
}

/** Plain values for comparison (Buffers as hex). */
function plain(event) {
  if (event.kind === KIND_HTTP_REQUEST && event.batch) {
    // The decoder points at the header lines instead of cutting a view.
    const { batch, headersStart, headersEnd, ...rest } = event;
    event = { ...rest, headers: batch.subarray(headersStart, headersEnd) };
  }
  return JSON.parse(JSON.stringify(event, (_key, value) => (value?.type === 'Buffer' ? Buffer.from(value.data).toString('hex') : value)));
}

test('every vector decodes to the record it names', () => {
  assert.ok(vectors.length >= 14);
  for (const vector of vectors) {
    const owned = OWNED_KINDS.has(vector.record.kind) ? ownedFor(vector.record) : undefined;
    const batch = Buffer.from(vector.hex, 'hex');
    const seen = [];
    const end = decodeBatch(batch, (event) => seen.push(event), 0, Infinity, owned);
    assert.equal(end, batch.length, `${vector.name}: consumed`);
    assert.equal(seen.length, 1, `${vector.name}: one event`);
    assert.equal(seen[0].kind, KINDS[vector.record.kind], `${vector.name}: kind`);
    assert.deepEqual(plain(seen[0]), plain(expected(vector.record, owned)), vector.name);
  }
});

test('a batch is the records back to back, decoded in order', () => {
  const plainVectors = vectors.filter((v) => !OWNED_KINDS.has(v.record.kind));
  const batch = Buffer.concat(plainVectors.map((v) => Buffer.from(v.hex, 'hex')));
  const seen = [];
  decodeBatch(batch, (event) => seen.push(event));
  assert.deepEqual(seen.map(plain), plainVectors.map((v) => plain(expected(v.record))));
});

test('decoding resumes where a slice stopped', () => {
  const batch = Buffer.concat(vectors.filter((v) => !OWNED_KINDS.has(v.record.kind)).map((v) => Buffer.from(v.hex, 'hex')));
  const first = [];
  // A deadline already past: the decoder stops after its first clock check.
  const stoppedAt = decodeBatch(batch, (event) => first.push(event), 0, 0);
  assert.ok(stoppedAt > 0 && stoppedAt < batch.length, `stopped at ${stoppedAt}`);
  const rest = [];
  decodeBatch(batch, (event) => rest.push(event), stoppedAt);
  const all = [];
  decodeBatch(batch, (event) => all.push(event));
  assert.deepEqual([...first, ...rest].map(plain), all.map(plain));
});

test('an unknown kind is an internal error, not a silent skip', () => {
  assert.throws(() => decodeBatch(Buffer.from('6300000000', 'hex'), () => {}), /ERR_INTERNAL: unknown native event kind 99/);
});
