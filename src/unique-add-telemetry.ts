/**
 * What every backend reports of a unique add through OpenTelemetry: the `ojs.unique.adds`
 * counter, its attributes, and the producer span of the hosts without telemetry of their own
 * (Graphile Worker, memory). Names only: the calls to the OpenTelemetry API live in telemetry/
 * (an optional peer, loaded on first use), never here.
 *
 * No attribute ever carries the uniqueness key, args or meta (spec §12): only the outcome, the
 * job type, the queue, the host and, on a span, the id of the job returned or met.
 */

/** The counter of unique adds, one per add that carried a policy, by outcome. */
export const UNIQUE_ADDS_METRIC = {
  name: 'ojs.unique.adds',
  unit: '{add}',
  description: 'Adds that carried an OJS unique policy, by what the uniqueness check decided',
} as const;

/** What the uniqueness check decided for an add; `rejected` is a `DuplicateJobError`. */
export type UniqueAddOutcome = 'created' | 'deduplicated' | 'updated' | 'replaced' | 'rejected';

export const UNIQUE_ADD_OUTCOMES: readonly UniqueAddOutcome[] = ['created', 'deduplicated', 'updated', 'replaced', 'rejected'];

/** The host, as OpenTelemetry's `messaging.system`. */
export type MessagingSystem = 'bullmq' | 'graphile-worker' | 'memory';

export const OUTCOME_ATTRIBUTE = 'ojs.unique.outcome';
export const JOB_TYPE_ATTRIBUTE = 'ojs.job.type';
/** The OJS queue the add was made to (BullMQ: the queue's name; Graphile Worker: `spec.queue`, not `queueName`). */
export const DESTINATION_ATTRIBUTE = 'messaging.destination.name';
export const SYSTEM_ATTRIBUTE = 'messaging.system';
/** On a span: the operation (`add`), as BullMQ's `bullmq.queue.operation`. */
export const OPERATION_ATTRIBUTE = 'messaging.operation.name';
/** On a span: the job added or met (a deduplicated add names the existing job), as BullMQ's `bullmq.job.id`. */
export const MESSAGE_ID_ATTRIBUTE = 'messaging.message.id';

/**
 * Set (to `true`) on an add under a report-only policy (`x_report_only`): the job was inserted
 * whatever the outcome says, which is what the policy would have done (src/report-only.ts).
 */
export const REPORT_ONLY_ATTRIBUTE = 'ojs.unique.report_only';

/** The counter's attributes for one add. */
export function uniqueAddAttributes(
  system: MessagingSystem,
  queue: string,
  type: string,
  outcome: UniqueAddOutcome,
  reportOnly = false,
): Record<string, string | boolean> {
  const attributes: Record<string, string | boolean> = {
    [OUTCOME_ATTRIBUTE]: outcome,
    [JOB_TYPE_ATTRIBUTE]: type,
    [DESTINATION_ATTRIBUTE]: queue,
    [SYSTEM_ATTRIBUTE]: system,
  };
  if (reportOnly) attributes[REPORT_ONLY_ATTRIBUTE] = true;
  return attributes;
}

/**
 * What a report-only add counts as: what its policy would have done (`wouldBe`), else `created`;
 * an enforced add, its own outcome.
 */
export function countedOutcome(
  outcome: UniqueAddOutcome,
  report: { reportOnly?: true; wouldBe?: UniqueAddOutcome } | undefined,
): UniqueAddOutcome {
  return report?.reportOnly === true ? (report.wouldBe ?? 'created') : outcome;
}

/** A producer span's name, as BullMQ names its add's: `add <queue>.<type>`. */
export function uniqueAddSpanName(queue: string, type: string): string {
  return `add ${queue}.${type}`;
}
