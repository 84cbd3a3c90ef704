/**
 * Which fingerprints this process saw holding a job moments ago: the adapter's guess that the
 * next `reject`/`ignore` add of one of them is a duplicate, answered by the small `unique-probe`
 * script instead of a full `unique-add` (lua/unique-probe-3.lua).
 *
 * A hint only chooses which script runs first; every decision is still made in Redis, atomically.
 * A right guess spares BullMQ's job encoding and the full add's long command; a wrong one (the
 * job finished and no longer counts, or was removed) costs one probe round trip
 * (bench/bullmq-probe-miss.ts), after which the hint is dropped.
 *
 * A hint is set by a duplicate (the add that created the job sets none: most keys are never added
 * again soon, and an insert then pays a lookup only), and lasts `ttlMs` after the full add that
 * last saw the job. A fingerprint added again and again (the hot key deduplication exists for)
 * gets its hint at its first duplicate; one added now and then, whose job has likely run by the
 * next add ("sync user 42 every five minutes"), goes straight to the full add and never pays a
 * miss. Without the expiry that pattern would pay a probe on every add.
 *
 * Bounded: at most `capacity` fingerprints, the least recently used dropped first (a list in
 * remembering order beside the Map: taking a Map's first entry walks the holes its deletions
 * left, on every insert of a new fingerprint once the Map is full). Nothing of a job is kept,
 * only uniqueness keys.
 */
export class ProbeHints {
  readonly #capacity: number;
  readonly #ttlMs: number;
  readonly #hints = new Map<string, Hint>();
  /** Least and most recently remembered: a list, so that dropping the oldest never walks the Map. */
  #oldest: Hint | undefined;
  #newest: Hint | undefined;

  /** (Defaults: 4,096 fingerprints, 2 s.) */
  constructor(capacity = 4096, ttlMs = 2000) {
    this.#capacity = capacity;
    this.#ttlMs = ttlMs;
  }

  has(fingerprintKey: string, now = Date.now()): boolean {
    const hint = this.#hints.get(fingerprintKey);
    if (hint === undefined) return false;
    if (now < hint.expiry) return true;
    this.#drop(hint);
    return false;
  }

  remember(fingerprintKey: string, now = Date.now()): void {
    let hint = this.#hints.get(fingerprintKey);
    if (hint !== undefined) {
      this.#unlink(hint);
      hint.expiry = now + this.#ttlMs;
    } else {
      hint = { key: fingerprintKey, expiry: now + this.#ttlMs, older: undefined, newer: undefined };
      this.#hints.set(fingerprintKey, hint);
    }
    hint.older = this.#newest;
    if (this.#newest !== undefined) this.#newest.newer = hint;
    else this.#oldest = hint;
    this.#newest = hint;
    if (this.#hints.size > this.#capacity) this.#drop(this.#oldest!);
  }

  forget(fingerprintKey: string): void {
    const hint = this.#hints.get(fingerprintKey);
    if (hint !== undefined) this.#drop(hint);
  }

  get size(): number {
    return this.#hints.size;
  }

  #drop(hint: Hint): void {
    this.#hints.delete(hint.key);
    this.#unlink(hint);
  }

  #unlink(hint: Hint): void {
    if (hint.older !== undefined) hint.older.newer = hint.newer;
    else this.#oldest = hint.newer;
    if (hint.newer !== undefined) hint.newer.older = hint.older;
    else this.#newest = hint.older;
    hint.older = undefined;
    hint.newer = undefined;
  }
}

interface Hint {
  key: string;
  expiry: number;
  older: Hint | undefined;
  newer: Hint | undefined;
}
