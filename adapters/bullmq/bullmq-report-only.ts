/**
 * A report-only add on BullMQ (src/report-only.ts): the add's own unique-add script under the
 * report-only key with `ignore`, then, when that met a duplicate, the job added as a plain job
 * (unique-add without a policy: BullMQ's add, with the id claim a backend's chosen id needs).
 * Two scripts, not one: a report-only add must insert whatever the decision, so nothing is lost
 * between them but the decision's atomicity with the insert, which only an enforced policy needs.
 * Counted once here, as what the policy would have done (`ojs.unique.report_only`).
 */
import { countUniqueAdd } from '../../telemetry/unique-add-counter.js';
import { countedOutcome } from '../../src/unique-add-telemetry.js';
import { reportOnlyShadow, wouldBeFor, type ReportOnlyAnswer } from '../../src/report-only.js';
import type { PreparedUnique } from '../../src/unique-enqueue.js';
import type { OjsJobState } from '../../src/job-state.js';

/** unique-add's request and replies (bullmq-enqueue.ts, which calls this), by the shape read here. */
interface Request {
  queue: { name: string };
  name: string;
  prepared: PreparedUnique | null;
}
type Reply = { outcome: string; existing?: { id: string; state: OjsJobState } };

export async function reportOnlyAdd<R extends Request, P extends Reply>(
  request: R,
  real: PreparedUnique,
  add: (request: R) => Promise<P>,
): Promise<P & { report: ReportOnlyAnswer }> {
  return reportOnlyAnswer(request, real, await add({ ...request, prepared: reportOnlyShadow(real) }), add);
}

/** The answer of a report-only add whose shadow answered `tried` (addBulk sends the shadow in its pipeline). */
export async function reportOnlyAnswer<R extends Request, P extends Reply>(
  request: R,
  real: PreparedUnique,
  tried: P,
  add: (request: R) => Promise<P>,
): Promise<P & { report: ReportOnlyAnswer }> {
  let reply: P & { report: ReportOnlyAnswer };
  if (tried.outcome === 'created') reply = { ...tried, report: { reportOnly: true } };
  else if (tried.outcome === 'deduplicated' && tried.existing !== undefined) {
    const plain = await add({ ...request, prepared: null });
    const report: ReportOnlyAnswer = {
      reportOnly: true,
      // BullMQ never replaces an active job (§5.2's fallback).
      wouldBe: wouldBeFor(real.policy, tried.existing.state, false),
      existingJobId: tried.existing.id,
      existingJobState: tried.existing.state,
    };
    reply = { ...plain, report };
  } else {
    // `ignore` without `x_update` answers created or deduplicated only.
    throw new Error(`ojs-unique: a report-only add answered ${tried.outcome}`);
  }
  countUniqueAdd('bullmq', request.queue.name, request.name, countedOutcome('created', reply.report), true);
  return reply;
}
