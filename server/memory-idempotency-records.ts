/**
 * `Idempotency-Key` records of the memory gateway: a map in the process, each record with its
 * expiry. One process is the whole server here, so nothing is shared; a record is dropped when
 * it is read after its expiry, and the map is swept of expired records at most once a minute.
 */
import type { IdempotencyClaim, IdempotencyClaimResult, IdempotencyRecordKey, IdempotencyRecords, StoredAnswer } from './gateway-store.js';

interface MemoryRecord {
  fingerprint: string;
  ids: string[];
  owner: string;
  leaseUntil: number;
  expiresAt: number;
  answer?: StoredAnswer;
}

const SWEEP_EVERY_MS = 60_000;

/** `clock`: the store's (epoch ms), so that a test moving it moves leases and expiries too. */
export function createMemoryIdempotencyRecords(
  clock: { now(): number } = { now: () => Date.now() },
): IdempotencyRecords & { clear(): void } {
  const records = new Map<string, MemoryRecord>();
  let sweptAt = clock.now();
  const idOf = ({ scope, keyHash }: IdempotencyRecordKey) => `${scope}\u0000${keyHash}`;
  const live = (id: string, now: number) => {
    const record = records.get(id);
    if (record && record.expiresAt <= now) records.delete(id);
    return record && record.expiresAt > now ? record : undefined;
  };
  const sweep = (now: number) => {
    if (now - sweptAt < SWEEP_EVERY_MS) return;
    sweptAt = now;
    for (const [id, record] of records) if (record.expiresAt <= now) records.delete(id);
  };
  return {
    async claim(claim: IdempotencyClaim): Promise<IdempotencyClaimResult> {
      const now = clock.now();
      sweep(now);
      const id = idOf(claim);
      const record = live(id, now);
      if (!record) {
        records.set(id, {
          fingerprint: claim.fingerprint,
          ids: [...claim.ids],
          owner: claim.owner,
          leaseUntil: now + claim.leaseMs,
          expiresAt: now + claim.retentionMs,
        });
        return { outcome: 'claimed', ids: [...claim.ids], resumed: false };
      }
      if (record.fingerprint !== claim.fingerprint) return { outcome: 'mismatch' };
      if (record.answer) return { outcome: 'done', answer: record.answer };
      if (record.leaseUntil > now) return { outcome: 'in_progress', retryAfterMs: record.leaseUntil - now };
      record.owner = claim.owner;
      record.leaseUntil = now + claim.leaseMs;
      return { outcome: 'claimed', ids: [...record.ids], resumed: true };
    },
    async finish(key, owner, answer, retentionMs) {
      const now = clock.now();
      const record = live(idOf(key), now);
      if (!record || record.owner !== owner || record.answer) return false;
      record.answer = answer;
      record.expiresAt = now + retentionMs;
      return true;
    },
    async abandon(key, owner) {
      const record = live(idOf(key), clock.now());
      if (record && record.owner === owner && !record.answer) record.leaseUntil = 0;
    },
    clear() {
      records.clear();
    },
  };
}
