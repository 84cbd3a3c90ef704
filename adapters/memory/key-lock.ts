/**
 * A per-key async mutex: callers with the same key run one at a time, in arrival order; other
 * keys are not held up. The memory backend's check-and-insert is serialised on it (spec §8.1).
 */
export class KeyLock {
  readonly #tails = new Map<string, Promise<void>>();

  async run<T>(key: string, body: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    const tail = previous.then(() => mine);
    this.#tails.set(key, tail);
    await previous;
    try {
      return await body();
    } finally {
      release();
      // Forget the key once nobody queued behind us, so the map does not grow with every key ever seen.
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }
}
