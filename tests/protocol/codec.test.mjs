// The TypeScript codec of the Switchboard protocol (packages/rpc,
// docs/protocol.md): the language-neutral vectors of spec/wire/, the worked
// examples of §9, and properties of our own (streaming in any chunking,
// views that stay valid, random round trips, limits).
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as P from '../../packages/rpc/dist/index.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const wire = path.join(root, 'spec', 'wire');
const DEFAULT_MAX = 16 * 1024 * 1024;

// --- helpers -------------------------------------------------------------

const hex = (b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
const bytes = (h) => new Uint8Array(Buffer.from(h.replace(/\s+/g, ''), 'hex'));
const concat = (parts) => new Uint8Array(Buffer.concat(parts));

/** Fields that are Uint8Array in frames.ts and hex strings in the vectors. */
const BYTE_FIELDS = new Set(['seed', 'data', 'uuid', 'payload', 'details']);

/** A frame with every Uint8Array as lowercase hex: the vectors' shape. */
function toJson(value) {
  if (value instanceof Uint8Array) return hex(value);
  if (Array.isArray(value)) return value.map(toJson);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toJson(v)]));
  }
  return value;
}

/** The inverse of `toJson`, for the fields that hold bytes. */
function fromJson(value) {
  if (Array.isArray(value)) return value.map(fromJson);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, BYTE_FIELDS.has(k) && typeof v === 'string' ? bytes(v) : fromJson(v)]),
    );
  }
  return value;
}

function load(name) {
  const file = path.join(wire, name);
  return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : null;
}

function throwsCode(fn, code, message) {
  assert.throws(fn, (error) => {
    assert.ok(error instanceof P.ProtocolError, `${message}: expected a ProtocolError, got ${error}`);
    assert.equal(error.code, code, `${message}: ${error.message}`);
    return true;
  });
}

/** Decodes every frame of `buf` with decodeFrame; throws if bytes are left over. */
function decodeAll(buf, maxFrameSize = DEFAULT_MAX) {
  const frames = [];
  let offset = 0;
  while (offset < buf.length) {
    const result = P.decodeFrame(buf, offset, maxFrameSize);
    assert.ok(result, `incomplete frame at offset ${offset}`);
    frames.push(result.frame);
    offset += result.size;
  }
  return frames;
}

/** Feeds `buf` to a FrameDecoder in chunks of the sizes `nextSize()` gives. */
function streamAll(buf, nextSize, options = { maxFrameSize: DEFAULT_MAX }) {
  const decoder = new P.FrameDecoder(options);
  const frames = [];
  for (let offset = 0; offset < buf.length; ) {
    const size = Math.min(nextSize(), buf.length - offset);
    decoder.push(buf.subarray(offset, offset + size));
    offset += size;
    for (let frame = decoder.next(); frame !== null; frame = decoder.next()) frames.push(frame);
  }
  assert.equal(decoder.buffered, 0, 'bytes left in the decoder');
  return frames;
}

/** mulberry32: a small seeded PRNG, so a failure reproduces. */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// --- random frames -------------------------------------------------------

function generator(seed) {
  const random = prng(seed);
  const int = (n) => Math.floor(random() * n);
  const pick = (list) => list[int(list.length)];
  const EDGES = [0, 1, 0xff, 0x100, 0xffff, 0x1_0000, 0xffff_ffff, 0x1_0000_0000, 2 ** 48 - 1];
  const integer = (min = 0) => {
    const v = random() < 0.4 ? pick(EDGES) : Math.floor(random() ** 4 * 2 ** pick([8, 16, 32, 48]));
    return Math.max(min, v);
  };
  const u32 = () => pick([0, 1, 1024, 0xffff_ffff, int(2 ** 32)]);
  const blob = (max = 40) => {
    const b = new Uint8Array(int(max + 1));
    for (let i = 0; i < b.length; i++) b[i] = int(256);
    return b;
  };
  const PIECES = ['a', 'Z', '.', ' ', 'é', 'ß', '中', '€', '😀', '\u{10ffff}', '\ufeff', '0'];
  const text = (maxBytes, minBytes = 0) => {
    let s = '';
    const target = minBytes + int(Math.min(maxBytes, 60) - minBytes + 1);
    while (Buffer.byteLength(s) < target) {
      const next = s + pick(PIECES);
      if (Buffer.byteLength(next) > maxBytes) break;
      s = next;
    }
    return Buffer.byteLength(s) >= minBytes ? s : 'x'.repeat(minBytes);
  };
  // Codes and codec names: printable ASCII, 0x21-0x7E (docs/protocol.md §3).
  const ascii = (min, max = 30) => {
    let s = '';
    const n = min + int(max - min + 1);
    for (let i = 0; i < n; i++) s += String.fromCharCode(0x21 + int(0x7e - 0x21 + 1));
    return s;
  };
  const sixteen = () => Uint8Array.from({ length: 16 }, () => int(256));
  const seed16 = () => {
    const b = sixteen();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    return b;
  };
  const settings = () => ({
    seed: seed16(),
    maxFrameSize: pick([1024, 65536, 0xffff_ffff]),
    initialWindow: pick([1024, 65536, 0xffff_ffff]),
    maxConcurrentCalls: u32(),
    heartbeatMs: u32(),
    features: int(8),
  });
  const makers = [
    () => ({ type: 'hello', ...settings(), codecs: Array.from({ length: int(4) }, () => ascii(1, 12)), data: blob() }),
    () => ({ type: 'welcome', ...settings(), codec: ascii(1, 12), data: blob() }),
    () => ({
      type: 'message',
      callId: integer(),
      expectsReply: random() < 0.5,
      uuid: random() < 0.3 ? sixteen() : null,
      attachments: random() < 0.3 ? 1 + int(255) : 0,
      action: text(255, 1),
      payload: blob(),
    }),
    () => ({ type: 'response', callId: integer(), last: random() < 0.5, attachments: random() < 0.3 ? 1 + int(255) : 0, payload: blob() }),
    () => ({ type: 'end', callId: integer() }),
    () => ({ type: 'fastReply', callId: integer(), code: integer() }),
    () => ({ type: 'error', callId: integer(), code: ascii(1), message: text(300), details: blob() }),
    () => ({ type: 'streamOpen', streamId: integer(), file: random() < 0.5 ? { size: integer(), name: text(100) } : null }),
    () => ({ type: 'streamData', streamId: integer(), data: blob(100) }),
    () => ({ type: 'streamEnd', streamId: integer(), abort: random() < 0.5 ? { code: ascii(1), message: text(100) } : null }),
    () => ({ type: 'credit', streamId: integer(), increment: integer(1) }),
    () => ({ type: 'stop', streamId: integer(), code: ascii(1) }),
    () => ({ type: 'cancel', callId: integer() }),
    () => ({ type: 'heartbeat', pong: random() < 0.5 }),
    () => ({ type: 'goAway', lastCallId: integer(), code: ascii(1), message: text(100) }),
  ];
  return { random, int, frame: () => pick(makers)(), makers };
}

/** A stream of `n` random frames, encoded back to back, and the frames. */
function randomStream(seed, n) {
  const g = generator(seed);
  const frames = Array.from({ length: n }, () => g.frame());
  return { frames, buf: concat(frames.map((f) => P.encodeFrame(f))) };
}

// --- §9 worked examples (always run) ---------------------------------------

const EXAMPLES = [
  {
    name: 'call id 5 to add with payload 01 02',
    hex: '0310070503616464' + '0102',
    frame: { type: 'message', callId: 5, expectsReply: true, uuid: null, attachments: 0, action: 'add', payload: '0102' },
  },
  { name: 'response with payload 03', hex: '0410020503', frame: { type: 'response', callId: 5, last: true, attachments: 0, payload: '03' } },
  { name: 'fast reply 300', hex: '061003052c01', frame: { type: 'fastReply', callId: 5, code: 300 } },
  { name: 'ping', hex: '0e0000', frame: { type: 'heartbeat', pong: false } },
  { name: 'pong', hex: '0e1000', frame: { type: 'heartbeat', pong: true } },
];

/** decode(hex) equals frame, encode(frame) is hex, every strict prefix needs more. */
function checkValidVector(v) {
  const buf = bytes(v.hex);
  const decoded = P.decodeFrame(buf, 0, DEFAULT_MAX);
  assert.ok(decoded, 'decodes');
  assert.equal(decoded.size, buf.length, 'consumes the whole vector');
  assert.deepEqual(toJson(decoded.frame), v.frame, 'decoded frame');
  const frame = fromJson(v.frame);
  assert.equal(hex(P.encodeFrame(frame)), v.hex.replace(/\s+/g, '').toLowerCase(), 'encoding');
  assert.equal(P.encodedLength(frame), buf.length, 'encodedLength');
  // Head and tail (a large payload written by reference) make the same bytes.
  const tail = P.frameTail(frame) ?? new Uint8Array(0);
  assert.equal(hex(concat([P.encodeFrameHead(frame), tail])), hex(buf), 'encodeFrameHead + frameTail');
  for (let n = 0; n < buf.length; n++) {
    assert.equal(P.decodeFrame(buf.subarray(0, n), 0, DEFAULT_MAX), null, `prefix of ${n} bytes`);
  }
}

describe('docs/protocol.md §9 worked examples', () => {
  for (const v of EXAMPLES) test(v.name, () => checkValidVector(v));
  test('sizes stated in §1: call 10, response 6, fast reply 5 (with 1-byte code), heartbeat 3', () => {
    assert.equal(P.encodedLength(fromJson(EXAMPLES[0].frame)), 10);
    assert.equal(P.encodedLength({ type: 'response', callId: 5, last: true, attachments: 0, payload: bytes('0102') }), 6);
    assert.equal(P.encodedLength({ type: 'fastReply', callId: 5, code: 3 }), 5);
    assert.equal(P.encodedLength({ type: 'heartbeat', pong: false }), 3);
  });
});

// --- spec/wire vectors -------------------------------------------------------

describe('spec/wire vectors', () => {
  // The vectors are normative (docs/protocol.md): a missing file is a failure, not a skip.
  const missing = (name) => test(name, () => assert.fail(`spec/wire/${name} is missing`));

  const frames = load('frames.json');
  if (frames === null) missing('frames.json');
  else {
    describe('frames.json', () => {
      for (const v of frames) test(v.name, () => checkValidVector(v));
      test('all frames back to back, streamed one byte at a time', () => {
        const buf = concat(frames.map((v) => bytes(v.hex)));
        const streamed = streamAll(buf, () => 1);
        assert.deepEqual(streamed.map(toJson), frames.map((v) => v.frame));
      });
    });
  }

  const decodeOnly = load('decode-only.json');
  if (decodeOnly === null) missing('decode-only.json');
  else {
    describe('decode-only.json', () => {
      for (const v of decodeOnly) {
        test(v.name, () => {
          const buf = bytes(v.hex);
          const decoded = P.decodeFrame(buf, 0, DEFAULT_MAX);
          assert.ok(decoded, 'decodes');
          assert.equal(decoded.size, buf.length);
          assert.deepEqual(toJson(decoded.frame), v.frame);
          assert.equal(hex(P.encodeFrame(fromJson(v.frame))), v.canonicalHex.replace(/\s+/g, '').toLowerCase(), 'canonical encoding');
          assert.deepEqual(toJson(streamAll(buf, () => 1)[0]), v.frame, 'streamed');
        });
      }
    });
  }

  const invalid = load('invalid.json');
  if (invalid === null) missing('invalid.json');
  else {
    describe('invalid.json', () => {
      for (const v of invalid) {
        test(`${v.name} → ${v.error}`, () => {
          const buf = bytes(v.hex);
          const maxFrameSize = v.maxFrameSize ?? DEFAULT_MAX;
          throwsCode(() => P.decodeFrame(buf, 0, maxFrameSize), v.error, 'decodeFrame');
          // The stream decoder, given all bytes at once, then one at a time.
          const whole = new P.FrameDecoder({ maxFrameSize });
          whole.push(buf);
          throwsCode(() => whole.next(), v.error, 'FrameDecoder, whole');
          throwsCode(() => whole.next(), v.error, 'FrameDecoder, again (the error is final)');
          throwsCode(() => streamAll(buf, () => 1, { maxFrameSize }), v.error, 'FrameDecoder, byte by byte');
        });
      }
    });
  }

  const preface = load('preface.json');
  if (preface === null) missing('preface.json');
  else {
    describe('preface.json', () => {
      for (const v of preface) {
        test(`${v.name} → ${v.result}`, () => {
          const buf = bytes(v.hex);
          const decoder = new P.FrameDecoder({ maxFrameSize: DEFAULT_MAX, expectPreface: true });
          if (v.result === 'ok' || v.result === 'need-more') {
            assert.equal(P.checkPreface(buf), v.result);
            // Preface bytes are not a frame; only what follows them could be.
            decoder.push(buf.subarray(0, Math.min(4, buf.length)));
            assert.equal(decoder.next(), null);
            assert.equal(decoder.buffered, v.result === 'ok' ? 0 : buf.length);
          } else {
            throwsCode(() => P.checkPreface(buf), v.result, 'checkPreface');
            throwsCode(() => streamAll(buf, () => 1, { maxFrameSize: DEFAULT_MAX, expectPreface: true }), v.result, 'FrameDecoder');
          }
        });
      }
    });
  }

  const sequence = load('sequence.json');
  if (sequence === null) missing('sequence.json');
  else {
    describe('sequence.json', () => {
      for (const v of sequence) {
        const expected = v.result === 'ok' ? 'ok' : `${v.result.error} at ${v.result.at}`;
        test(`${v.name} → ${expected}`, () => {
          const check = new P.SequenceCheck(v.features ?? P.ALL_FEATURES);
          let outcome = 'ok';
          for (let i = 0; i < v.frames.length; i++) {
            try {
              const decoded = P.decodeFrame(bytes(v.frames[i]), 0, DEFAULT_MAX);
              assert.ok(decoded, `frame ${i} is complete`);
              check.check(decoded.frame);
            } catch (error) {
              if (!(error instanceof P.ProtocolError)) throw error;
              outcome = `${error.code} at ${i}`;
              break;
            }
          }
          assert.equal(outcome, expected);
          if (v.lastCallId !== undefined) assert.equal(check.lastCallId, v.lastCallId, 'lastCallId');
        });
      }
    });
  }

  const uuids = load('uuid.json');
  if (uuids === null) missing('uuid.json');
  else {
    describe('uuid.json', () => {
      for (const [i, v] of uuids.entries()) {
        test(`${i}: ${v.kind} ${v.n}`, () => {
          const derive = { message: P.messageUuid, response: P.responseUuid, unnumbered: P.unnumberedUuid }[v.kind];
          assert.ok(derive, `unknown kind ${v.kind}`);
          const uuid = derive(bytes(v.seed.replace(/-/g, '')), v.n);
          if (v.uuid.includes('-')) assert.equal(P.uuidToString(uuid), v.uuid.toLowerCase());
          else assert.equal(hex(uuid), v.uuid.toLowerCase());
        });
      }
    });
  }

  const payloads = load('payloads.json');
  if (payloads === null) missing('payloads.json');
  else {
    describe('payloads.json', () => {
      for (const v of payloads) {
        test(`${v.name}: ${v.codec}`, () => {
          const codec = P.findCodec(v.codec);
          assert.ok(codec, `codec ${v.codec}`);
          const noValue = !('value' in v);
          const decoded = codec.decode(bytes(v.hex));
          // raw has no values apart from bytes: it hands the payload over as it is.
          if (v.codec === 'raw') assert.equal(hex(decoded), v.hex);
          else if (noValue) assert.equal(decoded, undefined, 'no value decodes as undefined');
          else assert.deepEqual(decoded, v.value);
          if (v.decodeOnly === true) return;
          const encoded = codec.encode(noValue ? undefined : v.value);
          // "No value" is exactly the empty payload, and no value is ever encoded as one.
          assert.equal(encoded.length === 0, noValue);
          assert.equal(hex(encoded), v.hex);
        });
      }
    });
  }

  test('no unexpected files in spec/wire', { skip: !existsSync(wire) }, () => {
    const known = ['frames.json', 'decode-only.json', 'invalid.json', 'preface.json', 'sequence.json', 'uuid.json', 'payloads.json'];
    const extra = readdirSync(wire).filter((f) => f.endsWith('.json') && !known.includes(f));
    assert.deepEqual(extra, [], 'vector files this test does not read');
  });
});

// --- encoding --------------------------------------------------------------

describe('encoding', () => {
  test('integers use the smallest width (width codes at each boundary)', () => {
    const cases = [
      [0, 0, 1],
      [0xff, 0, 1],
      [0x100, 1, 2],
      [0xffff, 1, 2],
      [0x1_0000, 2, 4],
      [0xffff_ffff, 2, 4],
      [0x1_0000_0000, 3, 6],
      [2 ** 48 - 1, 3, 6],
    ];
    for (const [value, code, width] of cases) {
      const out = P.encodeFrame({ type: 'fastReply', callId: value, code: value });
      assert.equal(out[1], 0 | (code << 2) | (code << 4), `descriptor for ${value}`);
      assert.equal(out[2], 2 * width, 'length');
      assert.equal(out.length, 3 + 2 * width);
      assert.deepEqual(P.decodeFrame(out, 0, DEFAULT_MAX).frame, { type: 'fastReply', callId: value, code: value });
    }
  });

  test('length field widths: 1, 2 and 4 bytes', () => {
    for (const [size, code] of [[255, 0], [256, 1], [65535, 1], [65536, 2], [70000, 2]]) {
      const frame = { type: 'streamData', streamId: 1, data: new Uint8Array(size - 1) };
      const out = P.encodeFrame(frame);
      assert.equal(out[1] & 3, code, `length ${size}`);
      assert.equal(out.length, 2 + [1, 2, 4][code] + size);
      assert.equal(P.decodeFrame(out, 0, DEFAULT_MAX).frame.data.length, size - 1);
    }
  });

  test('encodeFrameInto writes at an offset, returns the size, refuses what does not fit', () => {
    const frame = fromJson(EXAMPLES[0].frame);
    const target = new Uint8Array(32).fill(0xee);
    assert.equal(P.encodeFrameInto(frame, target, 5), 10);
    assert.equal(hex(target.subarray(5, 15)), EXAMPLES[0].hex);
    assert.equal(target[4], 0xee);
    assert.equal(target[15], 0xee);
    assert.throws(() => P.encodeFrameInto(frame, target, 23), RangeError);
    assert.equal(target[23], 0xee, 'nothing written');
    assert.equal(P.encodeFrameInto(frame, target, 22), 10);
    // Long strings take the TextEncoder path: it must stop at the string's end too.
    const long = { type: 'goAway', lastCallId: 7, code: 'ERR_GOING_AWAY', message: 'ä€😀x'.repeat(50) };
    const big = new Uint8Array(1000).fill(0xee);
    const size = P.encodeFrameInto(long, big, 3);
    assert.equal(hex(big.subarray(3, 3 + size)), hex(P.encodeFrame(long)));
    assert.ok(big.subarray(3 + size).every((b) => b === 0xee), 'nothing written after the frame');
  });

  test('strings: UTF-8 with surrogate pairs, a lone surrogate becomes U+FFFD, a BOM is kept', () => {
    const frame = { type: 'message', callId: 1, expectsReply: false, uuid: null, attachments: 0, action: '\ufeffé😀中', payload: new Uint8Array(0) };
    const out = P.encodeFrame(frame);
    assert.equal(hex(out.subarray(4)), Buffer.from('\ufeffé😀中').toString('hex').replace(/^/, '0c'));
    assert.equal(P.decodeFrame(out, 0, DEFAULT_MAX).frame.action, '\ufeffé😀中');
    const lone = P.encodeFrame({ ...frame, action: 'a\ud800b' });
    assert.equal(P.decodeFrame(lone, 0, DEFAULT_MAX).frame.action, 'a\ufffdb');
    const long = 'ü'.repeat(100) + '\udc00' + '😀'.repeat(10);
    const goAway = { type: 'goAway', lastCallId: 0, code: 'ERR_GOING_AWAY', message: long };
    const encoded = P.encodeFrame(goAway);
    assert.equal(encoded.length, P.encodedLength(goAway));
    assert.equal(P.decodeFrame(encoded, 0, DEFAULT_MAX).frame.message, long.replace('\udc00', '\ufffd'));
  });

  test('invalid frames are refused with a RangeError, not encoded', () => {
    const message = { type: 'message', callId: 1, expectsReply: true, uuid: null, attachments: 0, action: 'a', payload: new Uint8Array(0) };
    const bad = [
      { ...message, action: '' },
      { ...message, action: 'x'.repeat(256) },
      { ...message, action: 'é'.repeat(128) },
      { ...message, callId: -1 },
      { ...message, callId: 1.5 },
      { ...message, callId: 2 ** 48 },
      { ...message, callId: Number.NaN },
      { ...message, attachments: 256 },
      { ...message, uuid: new Uint8Array(15) },
      { type: 'credit', streamId: 1, increment: 0 },
      { type: 'error', callId: 1, code: '', message: '', details: new Uint8Array(0) },
      { type: 'error', callId: 1, code: 'É', message: '', details: new Uint8Array(0) },
      { type: 'error', callId: 1, code: 'E', message: 'x'.repeat(65536), details: new Uint8Array(0) },
      { type: 'stop', streamId: 1, code: 'x'.repeat(256) },
      { type: 'welcome', seed: new Uint8Array(16), maxFrameSize: 2 ** 32, initialWindow: 1024, maxConcurrentCalls: 0, heartbeatMs: 0, features: 0, codec: 'raw', data: new Uint8Array(0) },
      { type: 'welcome', seed: new Uint8Array(16), maxFrameSize: 1024, initialWindow: 1024, maxConcurrentCalls: 0, heartbeatMs: 0, features: 0, codec: '', data: new Uint8Array(0) },
    ];
    for (const frame of bad) assert.throws(() => P.encodeFrame(frame), RangeError, JSON.stringify(toJson(frame)).slice(0, 80));
    assert.throws(() => P.encodeFrame({ type: 'nope' }), TypeError);
  });
});

// --- decoding ----------------------------------------------------------------

describe('decoding', () => {
  test('random frames round-trip, and encodedLength is the encoded size', () => {
    const g = generator(1);
    for (let i = 0; i < 3000; i++) {
      const frame = g.frame();
      const out = P.encodeFrame(frame);
      assert.equal(P.encodedLength(frame), out.length);
      const decoded = P.decodeFrame(out, 0, DEFAULT_MAX);
      assert.equal(decoded.size, out.length);
      assert.deepEqual(toJson(decoded.frame), toJson(frame), `frame ${i}`);
    }
  });

  test('decodeFrame reads at an offset, and payloads are views of the input', () => {
    const buf = concat([bytes('ffff'), bytes(EXAMPLES[0].hex), bytes('0e')]);
    const { frame, size } = P.decodeFrame(buf, 2, DEFAULT_MAX);
    assert.equal(size, 10);
    assert.equal(frame.payload.buffer, buf.buffer, 'a view, not a copy');
    assert.equal(P.decodeFrame(buf, 12, DEFAULT_MAX), null);
  });

  test('an oversized length is rejected from the header alone, before the body', () => {
    // STREAM_DATA announcing 2000 bytes, with a limit of 1024: no body sent.
    const header = bytes('0901d007');
    throwsCode(() => P.decodeFrame(header, 0, 1024), 'ERR_PROTOCOL_FRAME_TOO_LARGE', 'decodeFrame');
    assert.equal(P.decodeFrame(header, 0, 2000), null);
    const decoder = new P.FrameDecoder({ maxFrameSize: 1024 });
    decoder.push(header.subarray(0, 3));
    assert.equal(decoder.next(), null);
    decoder.push(header.subarray(3));
    throwsCode(() => decoder.next(), 'ERR_PROTOCOL_FRAME_TOO_LARGE', 'FrameDecoder');
  });

  test('an unknown type and reserved bits are rejected at their first byte', () => {
    throwsCode(() => P.decodeFrame(bytes('10'), 0, DEFAULT_MAX), 'ERR_PROTOCOL_FRAME_TYPE', 'type 0x10');
    throwsCode(() => P.decodeFrame(bytes('00'), 0, DEFAULT_MAX), 'ERR_PROTOCOL_FRAME_TYPE', 'type 0x00');
    throwsCode(() => P.decodeFrame(bytes('0e20'), 0, DEFAULT_MAX), 'ERR_PROTOCOL_MALFORMED', 'heartbeat bit 5');
    throwsCode(() => P.decodeFrame(bytes('0810'), 0, DEFAULT_MAX), 'ERR_PROTOCOL_MALFORMED', 'STREAM_OPEN B without FILE');
    assert.equal(P.decodeFrame(bytes('0850'), 0, DEFAULT_MAX), null, 'STREAM_OPEN B with FILE');
  });

  test('every truncation of a random frame is "need more", never an error', () => {
    const g = generator(2);
    for (let i = 0; i < 300; i++) {
      const out = P.encodeFrame(g.frame());
      for (let n = 0; n < out.length; n++) assert.equal(P.decodeFrame(out.subarray(0, n), 0, DEFAULT_MAX), null);
    }
  });

  test('a body shortened or lengthened by one byte (length adjusted) is malformed or another valid frame, never a crash', () => {
    const g = generator(3);
    for (let i = 0; i < 2000; i++) {
      const out = P.encodeFrame(g.frame());
      const lengthWidth = [1, 2, 4, 6][out[1] & 3];
      for (const delta of [-1, 1]) {
        const body = out.length - 2 - lengthWidth + delta;
        if (body < 0 || body >= 256 ** lengthWidth) continue;
        const copy = new Uint8Array(out.length + delta);
        copy.set(out.subarray(0, Math.min(out.length, copy.length)));
        Buffer.from(copy.buffer).writeUIntLE(body, 2, lengthWidth);
        try {
          P.decodeFrame(copy, 0, DEFAULT_MAX);
        } catch (error) {
          assert.ok(error instanceof P.ProtocolError, String(error));
          assert.match(error.code, /^ERR_PROTOCOL_(MALFORMED|HANDSHAKE)$/);
        }
      }
    }
  });

  test('fuzz: mutated frames decode, need more, or throw ProtocolError; nothing else', () => {
    const g = generator(7);
    for (let i = 0; i < 20_000; i++) {
      const out = P.encodeFrame(g.frame());
      for (let k = 1 + g.int(3); k > 0; k--) out[g.int(out.length)] = g.int(256);
      try {
        const result = P.decodeFrame(out, 0, 1 << 20);
        // Whatever decodes must encode again (canonically) and decode to the same frame.
        if (result) assert.deepEqual(toJson(P.decodeFrame(P.encodeFrame(result.frame), 0, 1 << 20).frame), toJson(result.frame));
      } catch (error) {
        assert.ok(error instanceof P.ProtocolError, `${error}`);
      }
    }
  });

  test('ASCII fields reject bytes above 0x7f even when the same bytes were seen as UTF-8', () => {
    // MESSAGE action "é" (c3 a9) first, so those bytes are in the string cache.
    const message = P.encodeFrame({ type: 'message', callId: 1, expectsReply: false, uuid: null, attachments: 0, action: 'é', payload: new Uint8Array(0) });
    assert.equal(P.decodeFrame(message, 0, DEFAULT_MAX).frame.action, 'é');
    // STOP stream 1 with code bytes c3 a9.
    throwsCode(() => P.decodeFrame(bytes('0c0004' + '01' + '02c3a9'), 0, DEFAULT_MAX), 'ERR_PROTOCOL_MALFORMED', 'STOP code');
    // Invalid UTF-8 in an action: a lone continuation byte, an encoded surrogate, an overlong form.
    for (const action of ['80', 'eda080', 'c0af']) {
      const len = action.length / 2;
      const frame = bytes(`0300${(2 + len).toString(16).padStart(2, '0')}01${len.toString(16).padStart(2, '0')}${action}`);
      throwsCode(() => P.decodeFrame(frame, 0, DEFAULT_MAX), 'ERR_PROTOCOL_MALFORMED', `action ${action}`);
    }
  });

  test('codes are printable ASCII: control bytes, space and DEL are refused even when cached as UTF-8', () => {
    // An action of the same bytes first, so they are in the string cache.
    for (const code of ['a\x01', 'ERR X', '\x7f', '\t', '\x00']) {
      const message = P.encodeFrame({ type: 'message', callId: 1, expectsReply: false, uuid: null, attachments: 0, action: code, payload: new Uint8Array(0) });
      assert.equal(P.decodeFrame(message, 0, DEFAULT_MAX).frame.action, code);
      const codeHex = Buffer.from(code, 'latin1').toString('hex');
      const stop = bytes('0c00' + (2 + code.length).toString(16).padStart(2, '0') + '01' + code.length.toString(16).padStart(2, '0') + codeHex);
      throwsCode(() => P.decodeFrame(stop, 0, DEFAULT_MAX), 'ERR_PROTOCOL_MALFORMED', `STOP code ${JSON.stringify(code)}`);
      // A long one takes the path without the cache.
      const long = 'E'.repeat(100) + code;
      const longStop = bytes('0c00' + (2 + long.length).toString(16).padStart(2, '0') + '01' + long.length.toString(16).padStart(2, '0') + Buffer.from(long, 'latin1').toString('hex'));
      throwsCode(() => P.decodeFrame(longStop, 0, DEFAULT_MAX), 'ERR_PROTOCOL_MALFORMED', `long STOP code ${JSON.stringify(code)}`);
      assert.throws(() => P.encodeFrame({ type: 'stop', streamId: 1, code }), RangeError);
    }
    assert.equal(P.decodeFrame(P.encodeFrame({ type: 'stop', streamId: 1, code: '!~' }), 0, DEFAULT_MAX).frame.code, '!~');
  });

  test('interned strings are not confused across lengths and contents', () => {
    const names = [];
    for (let i = 0; i < 3000; i++) names.push(`a${i.toString(36)}`, `a${i.toString(36)}x`);
    for (const name of [...names, ...names.reverse()]) {
      const out = P.encodeFrame({ type: 'message', callId: 1, expectsReply: true, uuid: null, attachments: 0, action: name, payload: new Uint8Array(0) });
      assert.equal(P.decodeFrame(out, 0, DEFAULT_MAX).frame.action, name);
    }
  });
});

// --- streaming ---------------------------------------------------------------

describe('FrameDecoder', () => {
  const { frames, buf } = randomStream(4, 400);
  const expected = frames.map(toJson);

  test('whole-buffer decoding matches the frames encoded', () => {
    assert.deepEqual(decodeAll(buf).map(toJson), expected);
  });

  test('one byte at a time', () => {
    assert.deepEqual(streamAll(buf, () => 1).map(toJson), expected);
  });

  test('random chunk sizes (seeded), from 1 byte to larger than the stream', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const random = prng(seed);
      const max = [2, 7, 64, 1000, 100_000][seed % 5];
      assert.deepEqual(streamAll(buf, () => 1 + Math.floor(random() * max)).map(toJson), expected, `seed ${seed}`);
    }
  });

  test('all at once, and with the preface in front, split anywhere', () => {
    assert.deepEqual(streamAll(buf, () => buf.length).map(toJson), expected);
    const withPreface = concat([P.PREFACE, buf]);
    const options = { maxFrameSize: DEFAULT_MAX, expectPreface: true };
    assert.deepEqual(streamAll(withPreface, () => 1, options).map(toJson), expected);
    const random = prng(9);
    assert.deepEqual(streamAll(withPreface, () => 1 + Math.floor(random() * 9), options).map(toJson), expected);
  });

  test('the preface is checked byte by byte, as soon as each byte is there', () => {
    for (const [input, code] of [['47', 'ERR_PROTOCOL_PREFACE'], ['5358', 'ERR_PROTOCOL_PREFACE'], ['535742', null], ['53574202', 'ERR_PROTOCOL_VERSION'], ['53574200', 'ERR_PROTOCOL_VERSION']]) {
      const decoder = new P.FrameDecoder({ maxFrameSize: 1024, expectPreface: true });
      decoder.push(bytes(input));
      if (code === null) assert.equal(decoder.next(), null);
      else throwsCode(() => decoder.next(), code, input);
    }
    assert.equal(P.checkPreface(new Uint8Array(0)), 'need-more');
    assert.equal(P.checkPreface(bytes('5357420103')), 'ok');
  });

  test('without expectPreface, a preface is not a frame', () => {
    const decoder = new P.FrameDecoder({ maxFrameSize: 1024 });
    decoder.push(P.PREFACE);
    throwsCode(() => decoder.next(), 'ERR_PROTOCOL_FRAME_TYPE', 'preface as a frame');
  });

  test('maxFrameSize can change between frames (after the handshake)', () => {
    const big = P.encodeFrame({ type: 'streamData', streamId: 1, data: new Uint8Array(2000) });
    const decoder = new P.FrameDecoder({ maxFrameSize: 1024 });
    decoder.push(big);
    throwsCode(() => decoder.next(), 'ERR_PROTOCOL_FRAME_TOO_LARGE', 'at 1024');
    const raised = new P.FrameDecoder({ maxFrameSize: 1024 });
    raised.push(big);
    raised.maxFrameSize = 4096;
    assert.equal(raised.maxFrameSize, 4096);
    assert.equal(raised.next().data.length, 2000);
    assert.throws(() => (raised.maxFrameSize = -1), RangeError);
  });

  test('buffered counts bytes not yet returned', () => {
    const decoder = new P.FrameDecoder({ maxFrameSize: 1024 });
    assert.equal(decoder.buffered, 0);
    decoder.push(bytes('0e00000e'));
    assert.equal(decoder.buffered, 4);
    assert.deepEqual(decoder.next(), { type: 'heartbeat', pong: false });
    assert.equal(decoder.buffered, 1);
    assert.equal(decoder.next(), null);
    decoder.push(new Uint8Array(0));
    decoder.push(bytes('10'));
    assert.equal(decoder.buffered, 2);
    assert.equal(decoder.next(), null, 'the length byte is missing');
    decoder.push(bytes('00'));
    assert.deepEqual(decoder.next(), { type: 'heartbeat', pong: true });
    assert.equal(decoder.buffered, 0);
  });

  test('views handed out stay valid while more data arrives, and pushed chunks may be reused', () => {
    const decoder = new P.FrameDecoder({ maxFrameSize: DEFAULT_MAX });
    const kept = [];
    const g = generator(5);
    const chunk = new Uint8Array(50_000);
    for (let round = 0; round < 40; round++) {
      const frames = Array.from({ length: 30 }, () => ({ type: 'streamData', streamId: round + 1, data: g.makers[8]().data }));
      frames.push({ type: 'streamData', streamId: 1, data: new Uint8Array(g.int(200_000)).fill(round) });
      const out = concat(frames.map((f) => P.encodeFrame(f)));
      for (let offset = 0; offset < out.length; offset += chunk.length) {
        // One caller-owned chunk, refilled each time, as a socket reader might.
        const n = Math.min(chunk.length, out.length - offset);
        chunk.set(out.subarray(offset, offset + n));
        decoder.push(chunk.subarray(0, n));
        chunk.fill(0xaa);
        for (let frame = decoder.next(); frame !== null; frame = decoder.next()) {
          kept.push([frame.data, Uint8Array.from(frame.data)]);
        }
      }
    }
    assert.ok(kept.length > 1000);
    for (const [view, copy] of kept) assert.deepEqual(view, copy);
  });

  test('a 16 MiB frame in 64 KiB chunks: linear copying, and the data intact', () => {
    const data = new Uint8Array(DEFAULT_MAX - 1);
    for (let i = 0; i < data.length; i += 4096) data[i] = i >>> 12;
    const out = P.encodeFrame({ type: 'streamData', streamId: 1, data });
    assert.equal(out.length, 2 + 4 + DEFAULT_MAX, 'a 16 MiB body behind a 4-byte length');
    const decoder = new P.FrameDecoder({ maxFrameSize: DEFAULT_MAX });
    // Count the bytes the decoder copies through Uint8Array.prototype.set.
    const set = Uint8Array.prototype.set;
    let copied = 0;
    Uint8Array.prototype.set = function (source, offset) {
      copied += source.length;
      return set.call(this, source, offset);
    };
    let frame = null;
    const started = performance.now();
    try {
      for (let offset = 0; offset < out.length; offset += 65536) {
        decoder.push(out.subarray(offset, offset + 65536));
        frame = decoder.next() ?? frame;
      }
    } finally {
      Uint8Array.prototype.set = set;
    }
    const elapsed = performance.now() - started;
    assert.ok(frame, 'decoded');
    assert.equal(frame.data.length, data.length);
    assert.ok(Buffer.from(frame.data.buffer, frame.data.byteOffset, frame.data.length).equals(Buffer.from(data.buffer)));
    assert.ok(copied < 2.5 * out.length, `copied ${copied} bytes for a ${out.length}-byte frame`);
    assert.ok(elapsed < 2000, `${elapsed.toFixed(0)} ms`);
  });

  test('many frames per chunk, split frames across chunks, with a big frame in between', () => {
    const g = generator(6);
    const frames = [];
    for (let i = 0; i < 200; i++) frames.push(g.frame());
    frames.splice(100, 0, { type: 'streamData', streamId: 7, data: new Uint8Array(300_000).fill(7) });
    const buf = concat(frames.map((f) => P.encodeFrame(f)));
    const random = prng(6);
    assert.deepEqual(streamAll(buf, () => 1 + Math.floor(random() * 70_000)).map(toJson), frames.map(toJson));
  });

  test('an error is final: later calls throw it again, even after more bytes', () => {
    const decoder = new P.FrameDecoder({ maxFrameSize: 1024 });
    decoder.push(bytes('0e00001f'));
    assert.deepEqual(decoder.next(), { type: 'heartbeat', pong: false });
    throwsCode(() => decoder.next(), 'ERR_PROTOCOL_FRAME_TYPE', 'first');
    decoder.push(bytes('0e0000'));
    throwsCode(() => decoder.next(), 'ERR_PROTOCOL_FRAME_TYPE', 'second');
  });
});

// --- sequence checks ---------------------------------------------------------

describe('SequenceCheck', () => {
  const message = (callId, attachments = 0) => ({ type: 'message', callId, expectsReply: true, uuid: null, attachments, action: 'a', payload: new Uint8Array(0) });
  const response = (attachments) => ({ type: 'response', callId: 1, last: true, attachments, payload: new Uint8Array(0) });
  const open = (streamId) => ({ type: 'streamOpen', streamId, file: null });
  const run = (frames) => {
    const check = new P.SequenceCheck();
    for (const [i, frame] of frames.entries()) {
      try {
        check.check(frame);
      } catch (error) {
        assert.ok(error instanceof P.ProtocolError);
        return `${error.code} at ${i}`;
      }
    }
    return 'ok';
  };

  test('call ids start at 1 and increase strictly; gaps are fine', () => {
    assert.equal(run([message(1), message(2), message(10)]), 'ok');
    assert.equal(run([message(0)]), 'ERR_PROTOCOL_CALL_ID at 0');
    assert.equal(run([message(3), message(3)]), 'ERR_PROTOCOL_CALL_ID at 1');
    assert.equal(run([message(3), message(2)]), 'ERR_PROTOCOL_CALL_ID at 1');
    assert.equal(run([message(2 ** 48 - 1)]), 'ok');
  });

  test('attachments: exactly n STREAM_OPEN frames next, with increasing stream ids', () => {
    assert.equal(run([message(1, 2), open(1), open(2), message(2), response(1), open(5), { type: 'heartbeat', pong: false }]), 'ok');
    assert.equal(run([message(1, 2), open(1), message(2)]), 'ERR_PROTOCOL_SEQUENCE at 2');
    assert.equal(run([message(1, 1), open(1), open(2)]), 'ERR_PROTOCOL_SEQUENCE at 2');
    assert.equal(run([open(1)]), 'ERR_PROTOCOL_SEQUENCE at 0');
    assert.equal(run([response(1), { type: 'heartbeat', pong: true }]), 'ERR_PROTOCOL_SEQUENCE at 1');
    assert.equal(run([message(1, 1), open(0)]), 'ERR_PROTOCOL_STREAM_ID at 1');
    assert.equal(run([message(1, 2), open(2), open(2)]), 'ERR_PROTOCOL_STREAM_ID at 2');
    assert.equal(run([response(1), open(4), response(1), open(3)]), 'ERR_PROTOCOL_STREAM_ID at 3');
  });

  test('HELLO / WELCOME after the handshake', () => {
    const settings = { seed: P.randomSeed(), maxFrameSize: 1024, initialWindow: 1024, maxConcurrentCalls: 1, heartbeatMs: 0, features: 0, data: new Uint8Array(0) };
    assert.equal(run([message(1), { type: 'hello', ...settings, codecs: ['raw'] }]), 'ERR_PROTOCOL_HANDSHAKE at 1');
    assert.equal(run([{ type: 'welcome', ...settings, codec: 'raw' }]), 'ERR_PROTOCOL_HANDSHAKE at 0');
  });
});

// --- UUIDs -------------------------------------------------------------------

describe('UUIDs (§6)', () => {
  const seed = bytes('0123456789ab4def8123fffffffffffe');

  test('message: seed + call id in the last 6 bytes, modulo 2^48', () => {
    assert.equal(P.uuidToString(P.messageUuid(seed, 0)), '01234567-89ab-4def-8123-fffffffffffe');
    assert.equal(P.uuidToString(P.messageUuid(seed, 1)), '01234567-89ab-4def-8123-ffffffffffff');
    assert.equal(P.uuidToString(P.messageUuid(seed, 2)), '01234567-89ab-4def-8123-000000000000');
    assert.equal(P.uuidToString(P.messageUuid(seed, 0x1_0000_0003)), '01234567-89ab-4def-8123-000100000001');
    assert.equal(P.uuidToString(P.messageUuid(seed, 2 ** 48 - 1)), '01234567-89ab-4def-8123-fffffffffffd');
    const low = bytes('00000000000040008000000000000000');
    assert.equal(P.uuidToString(P.messageUuid(low, 0xabcdef)), '00000000-0000-4000-8000-000000abcdef');
    assert.equal(P.uuidToString(P.messageUuid(low, 0x1234_5678_9abc)), '00000000-0000-4000-8000-123456789abc');
  });

  test('response: byte 8 bit 0x20 flipped, plus the sequence number', () => {
    assert.equal(P.uuidToString(P.responseUuid(seed, 1)), '01234567-89ab-4def-a123-ffffffffffff');
    assert.equal(P.uuidToString(P.responseUuid(P.responseUuid(seed, 0), 0)), P.uuidToString(seed));
  });

  test('derivations keep the v4 marks and do not change the seed', () => {
    const before = hex(seed);
    for (const n of [0, 1, 2 ** 24, 2 ** 24 - 1, 2 ** 47, 2 ** 48 - 1]) {
      for (const uuid of [P.messageUuid(seed, n), P.responseUuid(seed, n)]) {
        assert.equal(uuid[6] & 0xf0, 0x40);
        assert.equal(uuid[8] & 0xc0, 0x80);
      }
    }
    assert.equal(hex(seed), before);
    assert.throws(() => P.messageUuid(seed, -1), RangeError);
    assert.throws(() => P.messageUuid(new Uint8Array(15), 1), RangeError);
  });

  test('randomSeed: 16 random bytes with the v4 marks', () => {
    const seen = new Set();
    for (let i = 0; i < 100; i++) {
      const s = P.randomSeed();
      assert.equal(s.length, 16);
      assert.equal(s[6] & 0xf0, 0x40);
      assert.equal(s[8] & 0xc0, 0x80);
      seen.add(hex(s));
      assert.match(P.uuidToString(s), /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    }
    assert.equal(seen.size, 100);
  });
});

// --- handshake frames ----------------------------------------------------------

describe('HELLO / WELCOME field checks', () => {
  const hello = () => ({ type: 'hello', seed: P.randomSeed(), maxFrameSize: 1024, initialWindow: 1024, maxConcurrentCalls: 0, heartbeatMs: 0, features: P.ALL_FEATURES, codecs: ['msgpack', 'raw'], data: bytes('cafe') });

  test('a valid HELLO and WELCOME round-trip', () => {
    const h = hello();
    assert.deepEqual(toJson(P.decodeFrame(P.encodeFrame(h), 0, DEFAULT_MAX).frame), toJson(h));
    const w = { ...h, type: 'welcome', codec: 'raw' };
    delete w.codecs;
    assert.deepEqual(toJson(P.decodeFrame(P.encodeFrame(w), 0, DEFAULT_MAX).frame), toJson(w));
  });

  test('seed without v4 marks, limits below 1024, undefined feature bits → ERR_PROTOCOL_HANDSHAKE', () => {
    const cases = [
      (f) => (f.seed[6] = 0x30),
      (f) => (f.seed[8] = 0x40),
      (f) => (f.maxFrameSize = 1023),
      (f) => (f.initialWindow = 0),
      (f) => (f.features = 8),
      (f) => (f.features = 0x8000_0000),
    ];
    for (const mutate of cases) {
      const f = hello();
      mutate(f);
      throwsCode(() => P.decodeFrame(P.encodeFrame(f), 0, DEFAULT_MAX), 'ERR_PROTOCOL_HANDSHAKE', mutate.toString());
    }
  });
});

// --- portability -----------------------------------------------------------------

test('the built package uses no Node APIs (it runs in browsers)', () => {
  const dist = path.join(root, 'packages', 'rpc', 'dist', 'codec');
  for (const file of readdirSync(dist).filter((f) => f.endsWith('.js'))) {
    // Code only: the comments may well mention Node.
    const source = readFileSync(path.join(dist, file), 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
    assert.doesNotMatch(source, /from ['"]node:|require\(|\bBuffer\b|\bprocess\./, file);
  }
});
