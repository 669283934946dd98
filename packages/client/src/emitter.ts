/**
 * A tiny typed event emitter that runs in browsers and Node alike
 * (`EventTarget` would do, but its events are untyped in TypeScript).
 */

/** `on` returns this: call it to remove the listener. */
export type Unsubscribe = () => void;

export class Emitter<Events extends { [K in keyof Events]: unknown }> {
  private readonly listeners = new Map<keyof Events, Set<(event: never) => void>>();

  /** Adds a listener; returns a function that removes it. */
  on<K extends keyof Events>(type: K, listener: (event: Events[K]) => void): Unsubscribe {
    let set = this.listeners.get(type);
    if (set === undefined) {
      set = new Set();
      this.listeners.set(type, set);
    }
    set.add(listener);
    return () => this.off(type, listener);
  }

  /** Adds a listener that runs once. */
  once<K extends keyof Events>(type: K, listener: (event: Events[K]) => void): Unsubscribe {
    const wrapper = (event: Events[K]): void => {
      unsubscribe();
      listener(event);
    };
    const unsubscribe = this.on(type, wrapper);
    return unsubscribe;
  }

  off<K extends keyof Events>(type: K, listener: (event: Events[K]) => void): void {
    this.listeners.get(type)?.delete(listener);
  }

  /**
   * Calls every listener of `type`. A listener that throws does not stop
   * the others, nor the client's own bookkeeping: its error is rethrown in
   * a microtask, where the host reports it (an uncaught exception).
   */
  protected emit<K extends keyof Events>(type: K, event: Events[K]): void {
    const set = this.listeners.get(type);
    if (set === undefined || set.size === 0) return;
    for (const listener of [...set]) {
      try {
        (listener as (event: Events[K]) => void)(event);
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }
}
