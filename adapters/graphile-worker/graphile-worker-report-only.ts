/**
 * A report-only add on Graphile Worker (src/report-only.ts): the enqueue under the report-only
 * key with `ignore`, then, when that met a duplicate, the job added as a plain job (recorded in
 * the ledger without a key, as a plain entry of a unique batch). Inside one transaction when the
 * caller holds one (`addJobWithClient`, `addJobs`); otherwise two, since a report-only add
 * inserts whatever the decision and needs no atomicity between them.
 */
import { randomUUID } from 'node:crypto';
import { reportOnlyShadow, wouldBeFor } from '../../src/report-only.js';
import type { PreparedUnique } from '../../src/unique-enqueue.js';
import type { EnqueueResult } from '../../src/unique-jobs-backend.js';
import type { PreparedGraphileEnqueue } from './graphile-worker-request.js';

export async function reportOnlyEnqueue(
  request: PreparedGraphileEnqueue,
  real: PreparedUnique,
  replaceActive: boolean,
  enqueue: (request: PreparedGraphileEnqueue) => Promise<EnqueueResult>,
): Promise<EnqueueResult> {
  const tried = await enqueue({ ...request, prepared: reportOnlyShadow(real) });
  if (tried.outcome === 'created') return { ...tried, reportOnly: true };
  const existing = tried.job;
  const plain = await enqueue({ ...request, prepared: null, token: randomUUID() });
  return {
    outcome: 'created',
    job: plain.job,
    reportOnly: true,
    wouldBe: wouldBeFor(real.policy, existing.state, replaceActive),
    existingJobId: existing.id,
    existingJobState: existing.state,
  };
}
