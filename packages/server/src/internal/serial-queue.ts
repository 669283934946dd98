/**
 * A serial queue: runs its owner's step on each item pushed, one at a time,
 * and waits for a step that returns a promise before running the next. The
 * dispatcher gives each connection one, so that the connection's events
 * reach its handlers in order, each awaited, while other connections go on
 * (ARCHITECTURE.md, invariant 5): WebSocket events behind an async handler,
 * protocol frames behind an async `rpc.onOpen` hook.
 *
 * The contract:
 * - **Order.** Items run in the order they were pushed, each at most once.
 * - **Synchronous steps.** `push` on an idle queue runs the step at once,
 *   inside `push`, and keeps nothing: the common case (a handler that
 *   returns nothing) allocates nothing.
 * - **A step that returns a promise** (any thenable) holds the queue: items
 *   pushed meanwhile wait. Once it settles, the waiting items run (in the
 *   promise's reaction, not inside a later `push`), in order, until none is
 *   left or one returns a promise again; the rest then waits behind that
 *   one, ahead of anything pushed later.
 * - **A step that throws, or whose promise rejects:** `stepFailed(error,
 *   item)` is called, then the queue goes on as if the step had succeeded.
 *   What a failure means (close the connection, discard the queue) is the
 *   owner's decision.
 * - **Discard** (`discard()`): the waiting items are dropped, and so is
 *   everything pushed later; for good, as the connection it served is over
 *   or refused. A step already running or awaited is not interrupted: its
 *   failure is still reported to `stepFailed`, but nothing runs after it.
 * - **Re-entrancy.** A step (or `stepFailed`) that pushes onto its own
 *   queue does not run the new item inside itself: the item waits behind
 *   the items already waiting and runs after the step returns (or, if the
 *   step returned a promise, once it settles).
 *
 * The owner is an object, not a pair of callbacks, so that a connection's
 * state can be its own owner: no closure per connection, none per item.
 */

/** What a `SerialQueue` runs. */
export interface SerialSteps<T> {
  /** Handle one item; a returned promise holds the queue until it settles. */
  runStep(item: T): unknown;
  /** `runStep(item)` threw, or its promise rejected. Must not throw. */
  stepFailed(error: unknown, item: T): void;
}

/** What `next()` returns when no item waits (items may be `undefined`). */
const NONE: unique symbol = Symbol('none');

/**
 * Consumed slots kept at most before the waiting array is compacted (and at
 * most half of it): a queue that never runs dry, behind an async handler
 * that is always busy, would otherwise keep a slot for every item it ever
 * held. Compacting costs a copy of the items still waiting, so doing it only
 * once they are outnumbered keeps it O(1) per item, amortised.
 */
const COMPACT_AFTER = 1024;

const IDLE = 0;
/** A step is running, or its promise is pending: pushes wait. */
const BUSY = 1;
const DISCARDED = 2;
type QueueState = typeof IDLE | typeof BUSY | typeof DISCARDED;

export class SerialQueue<T> {
  private state: QueueState = IDLE;
  /**
   * Items waiting, from `head` on; `null` whenever none waits. Slots before
   * `head` are cleared as their items run, so a long backlog (with payload
   * views into drained batches) is released as it is worked through; the
   * array is compacted now and then (`COMPACT_AFTER`) and dropped once empty.
   */
  private waiting: (T | undefined)[] | null = null;
  private head = 0;

  constructor(private readonly steps: SerialSteps<T>) {}

  /** Run `item` now if the queue is idle; otherwise it waits its turn (or is dropped, once discarded). */
  push(item: T): void {
    if (this.state === IDLE) {
      this.runFrom(item);
    } else if (this.state === BUSY) {
      (this.waiting ??= []).push(item);
    }
  }

  /** Drop the waiting items and everything pushed from now on. */
  discard(): void {
    this.state = DISCARDED;
    this.waiting = null;
    this.head = 0;
  }

  /** Items pushed that have not run yet. */
  get length(): number {
    return this.waiting === null ? 0 : this.waiting.length - this.head;
  }

  /** True while a step runs or its promise is pending. */
  get busy(): boolean {
    return this.state === BUSY;
  }

  get discarded(): boolean {
    return this.state === DISCARDED;
  }

  /** Run `item`, then the items waiting, until one returns a promise or none is left. */
  private runFrom(item: T): void {
    for (;;) {
      this.state = BUSY;
      let result: unknown;
      try {
        result = this.steps.runStep(item);
      } catch (error) {
        this.steps.stepFailed(error, item);
      }
      if (isThenable(result)) {
        this.waitFor(result, item);
        return;
      }
      const next = this.next();
      if (next === NONE) return;
      item = next;
    }
  }

  private waitFor(result: PromiseLike<unknown>, item: T): void {
    // Two closures per step that returns a promise, none otherwise: the
    // cost of awaiting is paid by async handlers only.
    Promise.resolve(result).then(
      () => {
        const next = this.next();
        if (next !== NONE) this.runFrom(next);
      },
      (error: unknown) => {
        this.steps.stepFailed(error, item);
        const next = this.next();
        if (next !== NONE) this.runFrom(next);
      },
    );
  }

  /** The next waiting item, or `NONE` (the queue is then idle, or stays discarded). */
  private next(): T | typeof NONE {
    if (this.state === DISCARDED) return NONE;
    const waiting = this.waiting;
    if (waiting === null || this.head === waiting.length) {
      this.waiting = null;
      this.head = 0;
      this.state = IDLE;
      return NONE;
    }
    const item = waiting[this.head] as T;
    waiting[this.head++] = undefined;
    if (this.head >= COMPACT_AFTER && this.head * 2 >= waiting.length) {
      waiting.splice(0, this.head);
      this.head = 0;
    }
    return item;
  }
}

/** Whether `value` is a promise or another thenable (what a handler may return to be awaited). */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}
