/**
 * Graphile Worker's cron items with an OJS `unique` policy.
 *
 * Graphile's scheduler adds a tick's jobs itself, in one SQL statement that calls `add_job` right
 * after claiming the tick in `_private_known_crontabs` (so that two workers never both schedule
 * it), with nothing in between that Node, a plugin hook or a preset can reach: a policy cannot
 * ride on that statement. What the scheduler can carry is a task: {@link uniqueCronItems} points
 * each item at one relay task ({@link UNIQUE_CRON_TASK_IDENTIFIER}) whose payload holds the real
 * task, payload, options and policy; the relay ({@link makeUniqueCronTask}) then adds the real job
 * through the adapter's unique path, with exactly the payload Graphile would have given it (the
 * item's payload plus `_cron: { ts, backfilled }`) and `runAt` the tick. Graphile still claims
 * each tick once (the item keeps its identifier, so its backfill history carries over).
 *
 * The relay is at least once, as every Graphile job: should it fail or its worker die after the
 * add committed, it runs again and adds again, which the policy then answers as for any other
 * duplicate. A duplicate that the policy rejects ends the relay successfully: the tick's job was
 * refused, as asked.
 */
import { parseCronItem, type CronItem, type ParsedCronItem, type Task } from 'graphile-worker';
import { InvalidJobInputError, isDuplicateJobError } from '../../src/errors.js';
import type { ValidationIssue } from '../../src/errors.js';
import { fromGraphileWorker } from '../../src/translate/from-graphile-worker.js';
import type { UniquePolicyInput } from '../../src/unique-policy.js';
import { schemaHandle, type UniqueEnqueueOptions } from './graphile-worker-schema-handle.js';
import { taskSpecToEnqueue, type UniqueTaskSpec } from './graphile-worker-task-spec.js';
import { uniqueAddFunctions } from './graphile-worker-unique-add.js';

/** The relay task's identifier: register {@link makeUniqueCronTask} under it in the worker's task list. */
export const UNIQUE_CRON_TASK_IDENTIFIER = 'ojs_unique_cron';

/**
 * The policy of a cron item's jobs: one for every item, or per item. `null` leaves that item to
 * Graphile, unchanged; `undefined` (or no policy at all) translates the item's own `jobKey` /
 * `jobKeyMode` (`fromGraphileWorker`), and leaves an item without them unchanged.
 */
export type CronItemPolicy = UniquePolicyInput | ((item: ParsedCronItem) => UniquePolicyInput | null | undefined);

/** What the relay's job carries (the item's payload, as the scheduler adds `_cron` beside it). */
interface RelayPayload {
  task: string;
  payload: Record<string, unknown> | null;
  unique: UniquePolicyInput;
  queueName?: string;
  maxAttempts?: number;
  priority?: number;
  _cron?: { ts: string; backfilled: boolean };
}

/**
 * Cron items (Graphile's `CronItem`s, or `ParsedCronItem`s from `parseCrontab`/`parseCronItems`)
 * whose jobs are added uniquely: give the result to `run({ parsedCronItems })` and register
 * {@link makeUniqueCronTask} under {@link UNIQUE_CRON_TASK_IDENTIFIER}.
 *
 * Without `unique`, an item with a Graphile `jobKey` (and `jobKeyMode`) gets the policy
 * `fromGraphileWorker` translates it to, and an item without one is left to Graphile. An item that
 * has a `jobKey` and is given a policy is refused (`jobKey` and `unique` cannot be combined, as
 * on `addJob`).
 *
 * @throws InvalidJobInputError naming `[index].…` for a policy or an option the unique path refuses, before anything runs;
 *   UntranslatableOptionError for a `jobKeyMode` the translator does not know.
 */
export function uniqueCronItems(items: readonly (CronItem | ParsedCronItem)[], unique?: CronItemPolicy): ParsedCronItem[] {
  const issues: ValidationIssue[] = [];
  const result = items.map((raw, index) => {
    const item = parseCronItem(raw as CronItem);
    const { jobKey, jobKeyMode, queueName, maxAttempts, priority, ...kept } = item.options;
    const given = typeof unique === 'function' ? unique(item) : unique;
    let policy: UniquePolicyInput | null | undefined = given;
    if (given === undefined) {
      // Graphile's own dedupe options, as the translator states them (UntranslatableOptionError
      // naming the option otherwise).
      policy = fromGraphileWorker({ jobKey, jobKeyMode });
    } else if (given !== null && (jobKey !== undefined || jobKeyMode !== undefined)) {
      issues.push({
        path: `[${index}].options.${jobKey !== undefined ? 'jobKey' : 'jobKeyMode'}`,
        message: 'cannot be combined with unique: use unique alone (OJS) or jobKey alone (Graphile)',
      });
      return item;
    }
    if (policy === null || policy === undefined) return item;
    const relay: RelayPayload = { task: item.task, payload: item.payload, unique: policy };
    if (queueName !== undefined) relay.queueName = queueName;
    if (maxAttempts !== undefined) relay.maxAttempts = maxAttempts;
    if (priority !== undefined) relay.priority = priority;
    // Refused now rather than at every tick: the job as the relay will add it (a tick's `_cron`
    // beside the payload), validated without I/O.
    try {
      taskSpecToEnqueue(
        item.task,
        { ...item.payload, _cron: { ts: new Date().toISOString(), backfilled: false } },
        relaySpec(relay),
        `[${index}]`,
      );
    } catch (error) {
      if (!(error instanceof InvalidJobInputError)) throw error;
      // The core names the job's fields (`unique.…`); Graphile's options come named `[index].…` already.
      issues.push(...error.issues.map((issue) => (issue.path.startsWith('[') ? issue : { ...issue, path: `[${index}].${issue.path}` })));
      return item;
    }
    // The relay's own job runs in no named queue (the real job gets the item's), with the item's
    // attempts and priority, under the item's identifier: Graphile's tick claim and backfill
    // history stay the item's.
    return parseCronItem({
      task: UNIQUE_CRON_TASK_IDENTIFIER,
      match: item.match,
      options: { ...kept, ...(maxAttempts !== undefined ? { maxAttempts } : {}), ...(priority !== undefined ? { priority } : {}) },
      payload: relay as unknown as Record<string, unknown>,
      identifier: item.identifier,
    });
  });
  if (issues.length > 0) throw new InvalidJobInputError(issues);
  return result;
}

function relaySpec(relay: RelayPayload): UniqueTaskSpec {
  const spec: UniqueTaskSpec = { unique: relay.unique };
  if (relay.queueName !== undefined) spec.queueName = relay.queueName;
  if (relay.maxAttempts !== undefined) spec.maxAttempts = relay.maxAttempts;
  if (relay.priority !== undefined) spec.priority = relay.priority;
  return spec;
}

/**
 * The relay task of {@link uniqueCronItems}: adds the item's real job through the unique path.
 * Pass the schemas the worker runs with (task helpers do not say which).
 */
export function makeUniqueCronTask(options: UniqueEnqueueOptions = {}): Task {
  const handle = schemaHandle(options);
  return async (raw, helpers) => {
    const relay = raw as RelayPayload;
    const { addJob } = uniqueAddFunctions(helpers, handle);
    const spec = relaySpec(relay);
    // The tick's time, as Graphile's scheduler gives its own job (`run_at` = the tick).
    if (relay._cron !== undefined) spec.runAt = new Date(relay._cron.ts);
    try {
      await addJob(relay.task, { ...relay.payload, ...(relay._cron !== undefined ? { _cron: relay._cron } : {}) }, spec);
    } catch (error) {
      if (isDuplicateJobError(error)) return;
      throw error;
    }
  };
}
