/**
 * `Idempotency-Key` records of the Graphile Worker gateway: the table `gateway_idempotency` in
 * the adapter's schema (the adapter's migration 0001), one row per scope and key digest, shared
 * by every gateway process over the database. Each operation is one statement
 * (server/sql/gateway-idempotency-*.sql) on the database's clock. An expired
 * row is ignored (and replaced) by the claim at once; the rows themselves are swept lazily: at
 * most once a minute a claim also deletes a bounded batch of expired rows, without waiting for it.
 */
import { translatePgError } from '../adapters/graphile-worker/graphile-worker-errors.js';
import type { SchemaNames } from '../adapters/graphile-worker/graphile-worker-sql.js';
import { GatewaySql } from './graphile-worker-gateway-sql.js';
import type pg from 'pg';
import type { IdempotencyClaim, IdempotencyClaimResult, IdempotencyRecordKey, IdempotencyRecords, StoredAnswer } from './gateway-store.js';

const SWEEP_EVERY_MS = 60_000;
const SWEEP_ROWS = 1000;
/** A claim whose conflicting row another session committed after its snapshot returns no row: run again. */
const CLAIM_ATTEMPTS = 3;

interface ClaimRow {
  outcome: 'claimed' | 'mismatch' | 'done' | 'in_progress';
  ids: string[] | null;
  resumed: boolean | null;
  status: number | null;
  body: string | null;
  location: string | null;
  retry_after_ms: number | null;
}

export interface GraphileIdempotencyRecords extends IdempotencyRecords {
  /** Waits for a sweep under way (before the pool ends). */
  close(): Promise<void>;
}

export function createGraphileIdempotencyRecords(
  pool: pg.Pool,
  schemas: SchemaNames,
  ready: () => Promise<void>,
): GraphileIdempotencyRecords {
  const sql = GatewaySql.for(schemas);
  let sweptAt = 0;
  let sweeping: Promise<unknown> | null = null;
  const run = sql.runner(pool);
  const sweep = () => {
    const now = Date.now();
    if (sweeping || now - sweptAt < SWEEP_EVERY_MS) return;
    sweptAt = now;
    sweeping = run('gateway-idempotency-sweep', [SWEEP_ROWS], 'sweeping idempotency keys')
      .catch(() => undefined)
      .finally(() => (sweeping = null));
  };
  return {
    async claim(claim: IdempotencyClaim): Promise<IdempotencyClaimResult> {
      await ready();
      sweep();
      const values = [
        claim.scope,
        claim.keyHash,
        claim.fingerprint,
        JSON.stringify(claim.ids),
        claim.owner,
        claim.leaseMs,
        claim.retentionMs,
      ];
      for (let attempt = 1; attempt <= CLAIM_ATTEMPTS; attempt++) {
        const row = (await run<ClaimRow>('gateway-idempotency-claim', values, 'claiming an idempotency key'))[0];
        if (!row) continue;
        switch (row.outcome) {
          case 'claimed':
            return { outcome: 'claimed', ids: row.ids!, resumed: row.resumed === true };
          case 'mismatch':
            return { outcome: 'mismatch' };
          case 'in_progress':
            return { outcome: 'in_progress', retryAfterMs: Math.ceil(row.retry_after_ms ?? 0) };
          case 'done': {
            const answer: StoredAnswer = { status: row.status!, body: row.body! };
            if (row.location) answer.location = row.location;
            return { outcome: 'done', answer };
          }
        }
      }
      throw translatePgError(new Error('the idempotency key changed under every attempt to claim it'), {
        operation: 'claiming an idempotency key',
        rolledBack: true,
      });
    },
    async finish(key: IdempotencyRecordKey, owner, answer, retentionMs) {
      const rows = await run(
        'gateway-idempotency-finish',
        [key.scope, key.keyHash, owner, answer.status, answer.body, answer.location ?? null, retentionMs],
        'storing an idempotent answer',
      );
      return rows.length > 0;
    },
    async abandon(key: IdempotencyRecordKey, owner) {
      await run('gateway-idempotency-abandon', [key.scope, key.keyHash, owner], 'ending an idempotency claim');
    },
    async close() {
      await sweeping;
    },
  };
}
