/**
 * One scenario for the `ojs.unique.adds` counter and the producer spans on every backend and
 * entry point: each outcome once, each under a type of its own (`tel.<outcome>`), args and meta
 * carrying values no attribute may contain (spec §12).
 *
 *   1. the first add of every type: all `created`;
 *   2. the second add of every type but `tel.created`: `deduplicated`, `updated`, `replaced`,
 *      `rejected` (its `DuplicateJobError` is expected);
 *   3. for an all-or-nothing batch, step 2 without the rejected add, then a batch of a new job
 *      (`tel.undone`) and the rejected add: the batch writes nothing, so only `rejected` counts.
 */
import { expect } from 'chai';
import { isDuplicateJobError } from '../../src/errors.js';
import { prepareUnique } from '../../src/unique-enqueue.js';
import type { UniquePolicyInput } from '../../src/unique-policy.js';
import { UNIQUE_ADD_OUTCOMES, type UniqueAddOutcome } from '../../src/unique-add-telemetry.js';
import type { AddCount, TelemetryCapture } from './telemetry-capture.js';

/** Values that must appear in no attribute: in args, in meta, and the uniqueness keys the adds compute. */
export const SECRET_ARG = 'arg-secret-7f3a20';
export const SECRET_META = 'meta-secret-91bc44';

export interface TelemetryJob {
  type: string;
  args: { account: string; n: number };
  meta: { note: string };
  unique: UniquePolicyInput;
}

const POLICIES: Record<UniqueAddOutcome, UniquePolicyInput> = {
  created: { keys: ['type', 'args'] },
  deduplicated: { keys: ['type', 'args'], on_conflict: 'ignore' },
  updated: { keys: ['type', 'args'], x_update: { available: ['args'] } },
  replaced: { keys: ['type', 'args'], on_conflict: 'replace' },
  rejected: { keys: ['type', 'args'], on_conflict: 'reject' },
};

export function telemetryJob(outcome: UniqueAddOutcome | 'undone'): TelemetryJob {
  return {
    type: `tel.${outcome}`,
    args: { account: SECRET_ARG, n: 1 },
    meta: { note: SECRET_META },
    unique: POLICIES[outcome === 'undone' ? 'created' : outcome],
  };
}

export const FIRST_ADDS: readonly TelemetryJob[] = UNIQUE_ADD_OUTCOMES.map(telemetryJob);
export const SECOND_ADDS: readonly TelemetryJob[] = UNIQUE_ADD_OUTCOMES.filter((outcome) => outcome !== 'created').map(telemetryJob);

/** Runs the scenario one add at a time. */
export async function addOneByOne(add: (job: TelemetryJob) => Promise<unknown>): Promise<void> {
  for (const job of FIRST_ADDS) await add(job);
  for (const job of SECOND_ADDS) await expectOutcomeOf(job, () => add(job));
}

/**
 * Runs the scenario in batches: `atomic` (all-or-nothing: a reject refuses the batch and writes
 * nothing, step 3) or entry by entry (BullMQ's addBulk: each entry's own outcome).
 */
export async function addInBatches(addMany: (jobs: readonly TelemetryJob[]) => Promise<unknown>, atomic: boolean): Promise<void> {
  await addMany(FIRST_ADDS);
  if (!atomic) {
    await addMany(SECOND_ADDS);
    return;
  }
  await addMany(SECOND_ADDS.filter((job) => job.type !== 'tel.rejected'));
  await expectOutcomeOf(telemetryJob('rejected'), () => addMany([telemetryJob('undone'), telemetryJob('rejected')]));
}

async function expectOutcomeOf(job: TelemetryJob, add: () => Promise<unknown>): Promise<void> {
  if (job.type !== 'tel.rejected') {
    await add();
    return;
  }
  const error = await add().then(
    () => null,
    (thrown: unknown) => thrown,
  );
  if (error !== null && !isDuplicateJobError(error)) throw error;
}

/** The data points the scenario leaves, in the order `TelemetryCapture.adds` sorts them. */
export function expectedAdds(system: string, queue: string): AddCount[] {
  const point = (outcome: UniqueAddOutcome, type: string): AddCount => ({
    attributes: {
      'ojs.unique.outcome': outcome,
      'ojs.job.type': type,
      'messaging.destination.name': queue,
      'messaging.system': system,
    },
    value: 1,
  });
  const points = [
    ...UNIQUE_ADD_OUTCOMES.map((outcome) => point('created', `tel.${outcome}`)),
    ...UNIQUE_ADD_OUTCOMES.filter((outcome) => outcome !== 'created').map((outcome) => point(outcome, `tel.${outcome}`)),
  ];
  return points.sort((a, b) => JSON.stringify(a.attributes).localeCompare(JSON.stringify(b.attributes)));
}

/** The uniqueness keys of the scenario's jobs (as computed for `queue`): no attribute may carry one. */
export function scenarioKeys(queue: string): string[] {
  return [...FIRST_ADDS, telemetryJob('undone')].map((job) => prepareUnique({ ...job, queue }, { extensions: ['x_update'] })!.key);
}

/** The counter holds exactly the scenario's adds, each counted once, and no attribute carries a key, args or meta. */
export async function expectScenarioCounted(capture: TelemetryCapture, system: string, queue: string): Promise<void> {
  expect(await capture.adds()).to.deep.equal(expectedAdds(system, queue));
  await capture.expectNoSecrets([SECRET_ARG, SECRET_META, ...scenarioKeys(queue)]);
}
