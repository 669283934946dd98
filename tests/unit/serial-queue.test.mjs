// The dispatcher's serial queue (packages/server/src/internal/serial-queue.ts)
// on its own: order, steps that return promises, failures, a backlog whose
// steps go async again, discard, re-entrancy. An internal module, so the
// built file is imported by path (as tests/addon does for native.js).
import test from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const pkg = path.resolve(here, '../../packages/server');
const { SerialQueue, isThenable } = await import(pathToFileURL(path.join(pkg, 'dist/esm/internal/serial-queue.js')).href);

function deferred() {
  let resolve;
  let reject;
  const promise = new Promise((yes, no) => {
    resolve = yes;
    reject = no;
  });
  return { promise, resolve, reject };
}

/** Let every pending promise callback run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

/**
 * A queue whose items say what their step does: `{ name }` returns nothing,
 * `{ name, wait }` returns `wait` (a promise), `{ name, throws }` throws it,
 * `{ name, then(queue) }` calls `then` first. `log` records every step run
 * and every failure.
 */
function recordingQueue() {
  const log = [];
  const failures = [];
  const queue = new SerialQueue({
    runStep(item) {
      log.push(item.name);
      item.then?.(queue);
      if (item.throws) throw item.throws;
      return item.wait;
    },
    stepFailed(error, item) {
      failures.push([item.name, error.message]);
    },
  });
  return { queue, log, failures };
}

test('synchronous steps run at once, inside push, in push order', () => {
  const { queue, log } = recordingQueue();
  queue.push({ name: 'a' });
  assert.deepEqual(log, ['a']);
  queue.push({ name: 'b' });
  queue.push({ name: 'c' });
  assert.deepEqual(log, ['a', 'b', 'c']);
  assert.equal(queue.busy, false);
  assert.equal(queue.length, 0);
});

test('a step that returns a promise holds later items until it settles, then they run in order', async () => {
  const { queue, log } = recordingQueue();
  const open = deferred();
  queue.push({ name: 'open', wait: open.promise });
  queue.push({ name: 'm1' });
  queue.push({ name: 'm2' });
  assert.deepEqual(log, ['open']);
  assert.equal(queue.busy, true);
  assert.equal(queue.length, 2);
  await settle();
  assert.deepEqual(log, ['open'], 'nothing runs while the promise is pending');
  open.resolve();
  await settle();
  assert.deepEqual(log, ['open', 'm1', 'm2']);
  assert.equal(queue.busy, false);
  assert.equal(queue.length, 0);
  // Idle again: the next push runs at once.
  queue.push({ name: 'm3' });
  assert.deepEqual(log, ['open', 'm1', 'm2', 'm3']);
});

test('thenables that are not promises are awaited too', async () => {
  const { queue, log } = recordingQueue();
  let fulfil;
  const thenable = { then: (onFulfilled) => (fulfil = onFulfilled) };
  assert.equal(isThenable(thenable), true);
  assert.equal(isThenable(Promise.resolve()), true);
  for (const value of [undefined, null, 0, 'then', { then: 1 }]) assert.equal(isThenable(value), false);
  queue.push({ name: 'a', wait: thenable });
  queue.push({ name: 'b' });
  await settle();
  assert.deepEqual(log, ['a']);
  fulfil();
  await settle();
  assert.deepEqual(log, ['a', 'b']);
});

test('a rejection is reported with its item, and the queue goes on', async () => {
  const { queue, log, failures } = recordingQueue();
  const first = deferred();
  queue.push({ name: 'a', wait: first.promise });
  queue.push({ name: 'b' });
  first.reject(new Error('boom'));
  await settle();
  assert.deepEqual(failures, [['a', 'boom']]);
  assert.deepEqual(log, ['a', 'b']);
  assert.equal(queue.busy, false);
});

test('a step that throws is reported like a rejection, and the next item runs at once', () => {
  const { queue, log, failures } = recordingQueue();
  queue.push({ name: 'a', throws: new Error('sync boom') });
  assert.deepEqual(failures, [['a', 'sync boom']]);
  assert.equal(queue.busy, false);
  queue.push({ name: 'b' });
  assert.deepEqual(log, ['a', 'b']);
});

test('a step that goes async again in the middle of a drained backlog holds the rest, ahead of later pushes', async () => {
  const { queue, log, failures } = recordingQueue();
  const first = deferred();
  const middle = deferred();
  queue.push({ name: 'a', wait: first.promise });
  queue.push({ name: 'b' });
  queue.push({ name: 'c', wait: middle.promise });
  queue.push({ name: 'd' });
  queue.push({ name: 'e', throws: new Error('e failed') });
  queue.push({ name: 'f' });
  first.resolve();
  await settle();
  assert.deepEqual(log, ['a', 'b', 'c'], 'the backlog stops at the step that went async');
  assert.equal(queue.length, 3);
  queue.push({ name: 'g' });
  await settle();
  assert.deepEqual(log, ['a', 'b', 'c']);
  middle.resolve();
  await settle();
  assert.deepEqual(log, ['a', 'b', 'c', 'd', 'e', 'f', 'g']);
  assert.deepEqual(failures, [['e', 'e failed']]);
  assert.equal(queue.busy, false);
  assert.equal(queue.length, 0);
});

test('every item runs once, in order, through many async steps', async () => {
  const seen = [];
  const queue = new SerialQueue({
    runStep(n) {
      seen.push(n);
      // Every third step is async, after a random delay.
      if (n % 3 === 0) return new Promise((resolve) => setTimeout(resolve, Math.random() * 3));
      return undefined;
    },
    stepFailed() {},
  });
  for (let n = 0; n < 200; n++) {
    queue.push(n);
    if (n % 17 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
  }
  while (queue.busy) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.deepEqual(
    seen,
    Array.from({ length: 200 }, (_, n) => n),
  );
});

test('a queue that never runs dry keeps its order across thousands of items', async () => {
  // Every step is async and the next items are pushed before it settles,
  // so the queue stays busy throughout (and compacts what it has run).
  const seen = [];
  const queue = new SerialQueue({
    runStep(n) {
      seen.push(n);
      return Promise.resolve();
    },
    stepFailed() {},
  });
  let pushed = 0;
  while (pushed < 5000) {
    for (let i = 0; i < 50; i++) queue.push(pushed++);
    await Promise.resolve();
    assert.equal(queue.busy, true);
  }
  while (queue.busy) await settle();
  assert.equal(seen.length, 5000);
  assert.ok(seen.every((n, i) => n === i));
});

test('items may be undefined', async () => {
  const seen = [];
  const hold = deferred();
  const queue = new SerialQueue({
    runStep: (item) => {
      seen.push(item);
      return seen.length === 1 ? hold.promise : undefined;
    },
    stepFailed() {},
  });
  queue.push('first');
  queue.push(undefined);
  queue.push('last');
  hold.resolve();
  await settle();
  assert.deepEqual(seen, ['first', undefined, 'last']);
});

test('discard drops the waiting items and every later push; the awaited step still reports its failure', async () => {
  const { queue, log, failures } = recordingQueue();
  const open = deferred();
  queue.push({ name: 'open', wait: open.promise });
  queue.push({ name: 'm1' });
  queue.push({ name: 'm2' });
  queue.discard();
  assert.equal(queue.discarded, true);
  assert.equal(queue.length, 0);
  queue.push({ name: 'm3' });
  open.reject(new Error('refused'));
  await settle();
  assert.deepEqual(log, ['open']);
  assert.deepEqual(failures, [['open', 'refused']]);
  queue.push({ name: 'm4' });
  await settle();
  assert.deepEqual(log, ['open']);
});

test('discard after the awaited step resolved: nothing more runs', async () => {
  const { queue, log } = recordingQueue();
  const open = deferred();
  queue.push({ name: 'open', wait: open.promise });
  queue.push({ name: 'm1' });
  queue.discard();
  open.resolve();
  await settle();
  assert.deepEqual(log, ['open']);
  assert.equal(queue.busy, false);
});

test('a failure handler can discard: the items behind the failed step are dropped', async () => {
  const log = [];
  const hook = deferred();
  const queue = new SerialQueue({
    runStep(item) {
      log.push(item);
      return item === 'hook' ? hook.promise : undefined;
    },
    stepFailed(_error, item) {
      log.push(`failed ${item}`);
      queue.discard();
    },
  });
  queue.push('hook');
  queue.push('call 1');
  queue.push('call 2');
  hook.reject(new Error('no'));
  await settle();
  assert.deepEqual(log, ['hook', 'failed hook']);
});

test('a step that discards its own queue stops the drain after itself', async () => {
  const { queue, log } = recordingQueue();
  const first = deferred();
  queue.push({ name: 'a', wait: first.promise });
  queue.push({ name: 'b', then: (q) => q.discard() });
  queue.push({ name: 'c' });
  first.resolve();
  await settle();
  assert.deepEqual(log, ['a', 'b']);
  assert.equal(queue.discarded, true);
});

test('a step that pushes onto its own queue does not run the new item inside itself', async () => {
  const log = [];
  const queue = new SerialQueue({
    runStep(item) {
      log.push(`start ${item.name}`);
      for (const next of item.push ?? []) queue.push(next);
      log.push(`end ${item.name}`);
      return item.wait;
    },
    stepFailed() {},
  });
  // Synchronous: the pushed item runs right after the step, before push returns.
  queue.push({ name: 'a', push: [{ name: 'a1' }, { name: 'a2', push: [{ name: 'a2x' }] }] });
  assert.deepEqual(log, ['start a', 'end a', 'start a1', 'end a1', 'start a2', 'end a2', 'start a2x', 'end a2x']);
  // Async: the pushed item waits behind the items already waiting.
  log.length = 0;
  const hold = deferred();
  queue.push({ name: 'b', push: [{ name: 'b1' }], wait: hold.promise });
  queue.push({ name: 'c' });
  assert.deepEqual(log, ['start b', 'end b']);
  hold.resolve();
  await settle();
  assert.deepEqual(log, ['start b', 'end b', 'start b1', 'end b1', 'start c', 'end c']);
});
