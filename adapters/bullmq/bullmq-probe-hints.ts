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
 * A hint lasts `ttlMs` after the add that last saw the job. A fingerprint added again and again
 * (the hot key deduplication exists for) keeps its hint, since every duplicate renews it; one added
 * now and then, whose job has likely run by the next add ("sync user 42 every five minutes"),
 * goes straight to the full add and never pays a miss. Without the expiry that pattern would
 * pay a probe on every add.
 *
 * Bounded: at most `capacity` fingerprints, the least recently used dropped first (a Map keeps
 * insertion order; `remember` re-inserts). Nothing of a job is kept, only uniqueness keys.
 */
export class ProbeHints {
  readonly #capacity: number;
  readonly #ttlMs: number;
  readonly #expiry = new Map<string, number>();

  /** (Defaults: 4,096 fingerprints, 2 s.) */
  constructor(capacity = 4096, ttlMs = 2000) {
    this.#capacity = capacity;
    this.#ttlMs = ttlMs;
  }

  has(fingerprintKey: string, now = Date.now()): boolean {
    const expiry = this.#expiry.get(fingerprintKey);
    if (expiry === undefined) return false;
    if (now < expiry) return true;
    this.#expiry.delete(fingerprintKey);
    return false;
  }

  remember(fingerprintKey: string, now = Date.now()): void {
    this.#expiry.delete(fingerprintKey);
    this.#expiry.set(fingerprintKey, now + this.#ttlMs);
    if (this.#expiry.size > this.#capacity) this.#expiry.delete(this.#expiry.keys().next().value!);
  }

  forget(fingerprintKey: string): void {
    this.#expiry.delete(fingerprintKey);
  }

  get size(): number {
    return this.#expiry.size;
  }
}
