/**
 * Which fingerprints this process saw holding a job moments ago: the adapter's guess that the
 * next `reject`/`ignore` add of one of them is a duplicate, answered by the small `unique-probe`
 * script instead of a full `unique-add` (lua/unique-probe-3.lua).
 *
 * A hint only chooses which script runs first; every decision is still made in Redis, atomically.
 * A right guess spares BullMQ's job encoding and a ~30-argument command; a wrong one (the job
 * finished and no longer counts, or was removed) costs one probe round trip, after which the
 * hint is dropped, so a fingerprint that keeps missing pays at most one probe per job it creates.
 *
 * Bounded: at most `capacity` fingerprints, the least recently used dropped first (a Map keeps
 * insertion order; `remember` re-inserts). Nothing of a job is kept, only fingerprint set keys.
 */
export class ProbeHints {
  readonly #capacity: number;
  readonly #keys = new Map<string, true>();

  constructor(capacity = 4096) {
    this.#capacity = capacity;
  }

  has(fingerprintKey: string): boolean {
    return this.#keys.has(fingerprintKey);
  }

  remember(fingerprintKey: string): void {
    this.#keys.delete(fingerprintKey);
    this.#keys.set(fingerprintKey, true);
    if (this.#keys.size > this.#capacity) this.#keys.delete(this.#keys.keys().next().value!);
  }

  forget(fingerprintKey: string): void {
    this.#keys.delete(fingerprintKey);
  }

  get size(): number {
    return this.#keys.size;
  }
}
