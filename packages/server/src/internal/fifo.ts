/**
 * A first-in first-out queue over one array that keeps its slots.
 *
 * `Array.prototype.shift` trims the array's front and `push` then grows its
 * back again: a connection with 16 pipelined requests per batch paid a
 * reallocation of its queue every few requests. Here the slots stay: the
 * queue reads from `head`, writes at `tail`, and both go back to 0 when it
 * empties, so a steady load reuses the same array without allocating.
 */
export class Fifo<T> {
  private readonly items: (T | undefined)[] = [];
  private head = 0;
  private tail = 0;

  get length(): number {
    return this.tail - this.head;
  }

  /** The oldest item, left in place. */
  first(): T | undefined {
    return this.head < this.tail ? this.items[this.head] : undefined;
  }

  push(item: T): void {
    this.items[this.tail++] = item;
  }

  /** Remove and return the oldest item. */
  shift(): T | undefined {
    if (this.head === this.tail) return undefined;
    const item = this.items[this.head];
    // Cleared, so that a finished item is not kept alive by its slot.
    this.items[this.head++] = undefined;
    if (this.head === this.tail) this.head = this.tail = 0;
    return item;
  }

  /** Remove every item; returns them, oldest first. */
  drain(): T[] {
    const items = this.items.slice(this.head, this.tail) as T[];
    this.items.length = 0;
    this.head = this.tail = 0;
    return items;
  }

  /** The first item that `test` accepts. */
  find(test: (item: T) => boolean): T | undefined {
    for (let i = this.head; i < this.tail; i++) {
      const item = this.items[i] as T;
      if (test(item)) return item;
    }
    return undefined;
  }
}
