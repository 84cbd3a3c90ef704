/**
 * The report-only scenario every backend and entry point runs (src/report-only.ts): a policy
 * marked `x_report_only` always inserts and says what it would have done; its jobs hold no key
 * the enforced policy sees; each add is counted once, as what the policy would have done, with
 * `ojs.unique.report_only`; the job holding the report-only key counts the adds that met it.
 */
import { expect } from 'chai';
import type { UniquePolicyInput, WouldBe } from '../src/index.js';
import type { TelemetryCapture } from './telemetry/telemetry-capture.js';

/** One add through an entry point, normalised: its outcome, report-only fields and the job's id. */
export interface ReportOnlyAdd {
  outcome: string;
  id: string;
  reportOnly?: true;
  wouldBe?: WouldBe;
  existingJobId?: string;
}

export type AddThrough = (type: string, args: Record<string, unknown>, unique: UniquePolicyInput) => Promise<ReportOnlyAdd>;

/**
 * Runs the scenario on `add` under `type` (its jobs go to `queue`); `jobs` counts the jobs of
 * `type` stored, `system` names the host in the counter.
 */
export async function expectReportOnlyScenario(
  add: AddThrough,
  options: {
    type: string;
    queue: string;
    system: string;
    capture: TelemetryCapture;
    jobs: () => Promise<number>;
    /** The job's duplicate count (OjsJob.duplicate_count), undefined for none. */
    duplicateCount: (id: string) => Promise<number | undefined>;
  },
): Promise<void> {
  const { type, capture } = options;
  const enforced = { keys: ['type'], on_conflict: 'reject' } as const;
  const reportOnly = { ...enforced, x_report_only: true } as const;
  const first = await add(type, { n: 1 }, reportOnly);
  expect(first).to.include({ outcome: 'created', reportOnly: true });
  expect(first.wouldBe).to.equal(undefined);
  const second = await add(type, { n: 2 }, reportOnly);
  expect(second).to.include({ outcome: 'created', reportOnly: true, wouldBe: 'rejected', existingJobId: first.id });
  expect(second.id).to.not.equal(first.id);
  // Report-only adds see one another: a third meets the first again, not the second (which holds no key).
  const third = await add(type, { n: 3 }, { ...reportOnly, on_conflict: 'ignore' });
  expect(third).to.include({ wouldBe: 'deduplicated', existingJobId: first.id });
  // Duplicate counts: the job holding the report-only key counts every add that met it, whatever
  // the policy would have done (docs/decisions.md); the jobs inserted beside it count none.
  expect(await options.duplicateCount(first.id)).to.equal(2);
  expect(await options.duplicateCount(second.id)).to.equal(undefined);
  // Enforcing later is clean: no report-only job holds the enforced key.
  const enforcedFirst = await add(type, { n: 4 }, enforced);
  expect(enforcedFirst.outcome).to.equal('created');
  expect(enforcedFirst.reportOnly).to.equal(undefined);
  let refused: unknown;
  try {
    await add(type, { n: 5 }, enforced);
  } catch (error) {
    refused = error;
  }
  expect((refused as { code?: string } | undefined)?.code).to.equal('duplicate');
  expect(await options.jobs()).to.equal(4);
  const points = (await capture.adds())
    .filter(({ attributes }) => attributes['ojs.job.type'] === type)
    .map(({ attributes, value }) => ({
      outcome: attributes['ojs.unique.outcome'],
      reportOnly: attributes['ojs.unique.report_only'] ?? false,
      queue: attributes['messaging.destination.name'],
      system: attributes['messaging.system'],
      value,
    }));
  const base = { queue: options.queue, system: options.system };
  expect(points).to.have.deep.members([
    { ...base, outcome: 'created', reportOnly: true, value: 1 },
    { ...base, outcome: 'rejected', reportOnly: true, value: 1 },
    { ...base, outcome: 'deduplicated', reportOnly: true, value: 1 },
    { ...base, outcome: 'created', reportOnly: false, value: 1 },
    { ...base, outcome: 'rejected', reportOnly: false, value: 1 },
  ]);
}
