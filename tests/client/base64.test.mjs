// The client's base64 (the protocol's frames in SockJS messages): the same
// text as Node's Buffer for every length and byte, and as strict as the
// server's decoder (padded, canonical, the standard alphabet only).
import test from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { decodeBase64, encodeBase64 } from 'switchboard-client';

test('encodes as Buffer does and decodes back, every length 0..300 and all bytes', () => {
  for (let length = 0; length <= 300; length++) {
    const bytes = randomBytes(length);
    const text = encodeBase64(bytes);
    assert.equal(text, bytes.toString('base64'), `length ${length}`);
    assert.deepEqual(Buffer.from(decodeBase64(text)), bytes);
  }
  const all = Uint8Array.from({ length: 256 }, (_, i) => i);
  assert.deepEqual(decodeBase64(encodeBase64(all)), all);
});

test('refuses what is not padded, canonical, standard base64', () => {
  for (const broken of ['YWI', 'YW=I', 'YWJ=', 'YQ==YQ==', 'YW I=', 'YWI=\n', 'YW-_', 'é===', 'Y===', '====']) {
    assert.throws(() => decodeBase64(broken), RangeError, JSON.stringify(broken));
  }
  assert.deepEqual(decodeBase64(''), new Uint8Array(0));
});
