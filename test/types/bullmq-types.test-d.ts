/**
 * Type tests of `withUniqueness(queue)`: the queue's generics flow through `add`/`addBulk`, the
 * wrapper goes wherever a `Queue` does, and each method's return type says what the runtime
 * returns (`unique` present exactly when the add had a policy; the outcomes that method can give).
 * Compiled by `npm run typecheck`, never run.
 *
 * Each `@ts-expect-error` is a test: it fails compilation if the line below it compiles. `exact`
 * fails compilation unless its two types are the same (not merely assignable).
 */
import { FlowProducer, Queue, Worker, type Job, type JobNode, type Processor } from 'bullmq';
import {
  createBullMQBackend,
  makeUniqueSchedulerProcessor,
  readUniqueFields,
  removeUniquenessIndex,
  UNIQUE_SCHEDULER_JOB_NAME,
  withUniqueness,
  type RelayData,
  type RelayResult,
  type UniqueJob,
  type UniqueJobsOptions,
  type UniqueOutcome,
  type UniqueQueue,
  type UniqueQueueOptions,
} from '../../adapters/bullmq/index.js';
import type { EnqueueResult, OjsJob, OjsJobState, OjsUniqueError, UniquePolicyInput, WouldBe } from '../../src/index.js';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function exact<A, B>(proof: Equal<A, B>): void {
  void proof;
}

interface Payload {
  userId: number;
}
interface Receipt {
  sent: boolean;
}
type Names = 'email.send' | 'email.digest';
type MailQueue = Queue<Payload, Receipt, Names>;

const policy = { keys: ['type', 'args'], on_conflict: 'ignore' } as const satisfies UniquePolicyInput;

// Not called: these functions only have to compile.
export async function dataResultAndNameFlow(queue: MailQueue): Promise<void> {
  const q = withUniqueness(queue);
  const job = await q.add('email.send', { userId: 1 }, { unique: policy });
  exact<typeof job.data, Payload>(true);
  exact<typeof job.returnvalue, Receipt>(true);
  exact<typeof job.name, Names>(true);
  exact<typeof job, UniqueJob<Payload, Receipt, Names, 'created' | 'deduplicated' | 'replaced' | 'updated'>>(true);
  const [bulk] = await q.addBulk([{ name: 'email.digest', data: { userId: 2 }, opts: { unique: policy } }]);
  exact<NonNullable<typeof bulk>['data'], Payload>(true);
  exact<typeof q.unwrapped, MailQueue>(true);

  // @ts-expect-error misspelt job name
  await q.add('email.sned', { userId: 1 }, { unique: policy });
  // @ts-expect-error misspelt job name, plain add
  await q.add('email.sned', { userId: 1 });
  // @ts-expect-error misspelt job name in a batch
  await q.addBulk([{ name: 'email.sned', data: { userId: 1 }, opts: { unique: policy } }]);
  // @ts-expect-error data of the wrong type
  await q.add('email.send', { userId: '1' }, { unique: policy });
}

/** A queue typed by its Job, BullMQ's other way of writing the generics. */
export async function queueTypedByJob(queue: Queue<Job<Payload, Receipt, Names>>): Promise<void> {
  const job = await withUniqueness(queue).add('email.digest', { userId: 1 }, { unique: policy });
  exact<typeof job.data, Payload>(true);
  exact<typeof job.name, Names>(true);
}

/** A subclass keeps its own members and its generics. */
declare class MailQueueWithExtras extends Queue<Payload, Receipt, Names> {
  drainSoon(): Promise<void>;
}
export async function subclassedQueue(queue: MailQueueWithExtras): Promise<void> {
  const q = withUniqueness(queue);
  await q.drainSoon();
  const job = await q.add('email.send', { userId: 1 }, { unique: policy });
  exact<typeof job.data, Payload>(true);
  exact<typeof q.unwrapped, MailQueueWithExtras>(true);
  const asBase: Queue<Payload, Receipt, Names> = q;
  void asBase;
}

export async function usableAsAQueue(queue: MailQueue, untyped: Queue): Promise<void> {
  const q = withUniqueness(queue);
  const typed: MailQueue = q;
  const plain: Queue = q;
  const takesQueue = (given: Queue): string => given.name;
  takesQueue(q);
  takesQueue(withUniqueness(untyped));
  await removeUniquenessIndex(q);
  await removeUniquenessIndex(withUniqueness(untyped), { global: true });
  const wrapped: UniqueQueue = withUniqueness(untyped);
  const wrappedTyped: UniqueQueue<MailQueue> = q;
  // Methods that return the queue return the wrapper, whose add still takes a policy.
  const chained = q.on('error', () => {}).once('waiting', () => {});
  exact<typeof chained, UniqueQueue<MailQueue>>(true);
  exact<(typeof chained)['unwrapped'], MailQueue>(true);
  await chained.add('email.send', { userId: 1 }, { unique: policy });
  void [typed, plain, wrapped, wrappedTyped];
}

export async function outcomesPerMethod(queue: MailQueue, opts: UniqueJobsOptions): Promise<void> {
  const q = withUniqueness(queue);

  // add with a policy: `unique` always there; a refusal throws, so never 'rejected'.
  const unique = await q.add('email.send', { userId: 1 }, { unique: {} });
  exact<typeof unique.unique, UniqueOutcome<'created' | 'deduplicated' | 'replaced' | 'updated'>>(true);
  exact<typeof unique.unique.outcome, 'created' | 'deduplicated' | 'replaced' | 'updated'>(true);
  // @ts-expect-error a single add never answers 'rejected'
  if (unique.unique.outcome === 'rejected') return;

  // Options held in a UniqueJobsOptions: either, told apart by `unique`.
  const either = await q.add('email.send', { userId: 1 }, opts);

  // add with `unique: null`: BullMQ's own job, no `unique`, even under the queue's default policy.
  const plain = await q.add('email.send', { userId: 1 }, { unique: null, attempts: 2 });
  exact<typeof plain, Job<Payload, Receipt, Names> & { unique?: undefined }>(true);
  const plainJob: Job<Payload, Receipt, Names> = plain;
  void plainJob;
  // add naming no policy: the queue's defaultJobOptions.unique may apply one, so `unique` may be there.
  for (const defaulted of [await q.add('email.send', { userId: 1 }), await q.add('email.send', { userId: 1 }, { attempts: 2 })]) {
    exact<typeof defaulted.unique, UniqueOutcome<'created' | 'deduplicated' | 'replaced' | 'updated'> | undefined>(true);
    exact<typeof defaulted.unique, typeof either.unique>(true);
    const outcome: 'created' | 'deduplicated' | 'replaced' | 'updated' | undefined = defaulted.unique?.outcome;
    // @ts-expect-error it may have no policy: `unique` must be checked first
    void defaulted.unique.outcome;
    const job: Job<Payload, Receipt, Names> = defaulted;
    void [job, outcome];
  }

  exact<typeof either.unique, UniqueOutcome<'created' | 'deduplicated' | 'replaced' | 'updated'> | undefined>(true);
  exact<Parameters<typeof q.add>[2], UniqueJobsOptions | undefined>(true);
  exact<Awaited<ReturnType<typeof q.add>>, typeof either>(true);

  // addBulk of unique entries: each has `unique`, and may be 'rejected' (reported, not thrown).
  const bulk = await q.addBulk([
    { name: 'email.send', data: { userId: 1 }, opts: { unique: {} } },
    { name: 'email.send', data: { userId: 1 }, opts: { unique: policy, attempts: 3 } },
  ]);
  exact<typeof bulk, UniqueJob<Payload, Receipt, Names>[]>(true);
  exact<NonNullable<(typeof bulk)[number]>['unique']['outcome'], 'created' | 'deduplicated' | 'replaced' | 'updated' | 'rejected'>(true);

  // addBulk with `unique: null`: BullMQ's own addBulk.
  const plainBulk = await q.addBulk([{ name: 'email.digest', data: { userId: 2 }, opts: { unique: null } }]);
  exact<typeof plainBulk, (Job<Payload, Receipt, Names> & { unique?: undefined })[]>(true);
  // addBulk naming no policy: the queue's default may apply one per entry.
  const defaultedBulk = await q.addBulk([
    { name: 'email.send', data: { userId: 1 } },
    { name: 'email.digest', data: { userId: 2 }, opts: { unique: null } },
  ]);
  exact<(typeof defaultedBulk)[number]['unique'], UniqueOutcome | undefined>(true);

  // A mixed batch: a plain entry has no `unique`, or is 'rejected' if it was not added.
  const mixed = await q.addBulk([
    { name: 'email.send', data: { userId: 1 }, opts: { unique: {} } },
    { name: 'email.send', data: { userId: 1 } },
  ]);
  exact<NonNullable<(typeof mixed)[number]['unique']>['outcome'], 'created' | 'deduplicated' | 'replaced' | 'updated' | 'rejected'>(true);
  exact<Extract<(typeof mixed)[number]['unique'], undefined>, undefined>(true);
  exact<Awaited<ReturnType<typeof q.addBulk>>, typeof mixed>(true);
  // Read-only batches are accepted too, and answer the same.
  const frozen = [{ name: 'email.send', data: { userId: 1 }, opts: { unique: policy } }] as const;
  const frozenJobs = await q.addBulk(frozen);
  exact<typeof frozenJobs, typeof bulk>(true);
}

export function outcomesNarrow(outcome: UniqueOutcome): void {
  // Any field reads before narrowing; narrowing gives each outcome its own fields.
  exact<typeof outcome.replaced, OjsJob | undefined>(true);
  // @ts-expect-error the superseded jobs are `replaced` and `also_replaced`, as in EnqueueResult
  void outcome.replacedJobIds;
  switch (outcome.outcome) {
    case 'created':
      // Only a report-only add names the job its policy would have met.
      exact<typeof outcome.existingJobId, string | undefined>(true);
      exact<typeof outcome.wouldBe, WouldBe | undefined>(true);
      break;
    case 'deduplicated':
      exact<typeof outcome.existingJobId, string>(true);
      exact<typeof outcome.existingJobState, OjsJobState>(true);
      break;
    case 'replaced': {
      // The shape of the backends' EnqueueResult: one `replaced` job view, `also_replaced` when there were several.
      exact<typeof outcome.replaced, OjsJob>(true);
      exact<typeof outcome.also_replaced, OjsJob[] | undefined>(true);
      exact<Pick<typeof outcome, 'replaced' | 'also_replaced'>, Omit<Extract<EnqueueResult, { outcome: 'replaced' }>, 'outcome' | 'job'>>(
        true,
      );
      // @ts-expect-error a misspelt field
      void outcome.also_replace;
      break;
    }
    case 'rejected':
      exact<typeof outcome.error, OjsUniqueError>(true);
      exact<typeof outcome.existingJobId, string | undefined>(true);
      break;
  }
}

export async function policyTyposFail(queue: MailQueue): Promise<void> {
  const q = withUniqueness(queue);
  // @ts-expect-error misspelt strategy
  await q.add('email.send', { userId: 1 }, { unique: { on_conflict: 'ignroe' } });
  // @ts-expect-error misspelt field
  await q.add('email.send', { userId: 1 }, { unique: { periood: 5 } });
  // @ts-expect-error not a policy
  await q.add('email.send', { userId: 1 }, { unique: true });
  // @ts-expect-error unknown dimension
  await q.add('email.send', { userId: 1 }, { unique: { keys: ['argz'] } });
  // @ts-expect-error misspelt field in a batch
  await q.addBulk([{ name: 'email.send', data: { userId: 1 }, opts: { unique: { periood: 5 } } }]);
  await q.addBulk([
    { name: 'email.send', data: { userId: 1 } },
    // @ts-expect-error misspelt field in a mixed batch
    { name: 'email.send', data: { userId: 1 }, opts: { unique: { periood: 5 } } },
  ]);
  // @ts-expect-error misspelt field, options held in a variable
  const held: UniqueJobsOptions = { unique: { periood: 5 } };
  void held;
}

// defaultJobOptions.unique: typed by UniqueQueueOptions, which goes wherever QueueOptions does.
{
  const options: UniqueQueueOptions = { connection: {}, defaultJobOptions: { unique: { on_conflict: 'ignore' } } };
  new Queue('typed-defaults', options);
  // @ts-expect-error a misspelt policy field in a default policy
  const bad: UniqueQueueOptions = { connection: {}, defaultJobOptions: { unique: { on_conflit: 'ignore' } } };
  void bad;
}

// Key lookups: by a job as `add` names it, or by `{ uniqueness_key }`.
{
  const queue = withUniqueness(new Queue<{ n: number }>('lookups'));
  const found = queue.findUniqueJob('f', { n: 1 }, { unique: {} });
  exact<typeof found, Promise<(Job<{ n: number }, any, string> & { ojsState: OjsJobState }) | null>>(true);
  const released = queue.releaseUniqueKey({ uniqueness_key: 'k' });
  exact<typeof released, Promise<number>>(true);
  // @ts-expect-error the data type is the queue's
  void queue.findUniqueJob('f', { m: 1 }, { unique: {} });
  // @ts-expect-error a key ref is { uniqueness_key }
  void queue.releaseUniqueKey({ uniquenessKey: 'k' });
}

// Flow trees: `unique` on a leaf is typed as on a queue's add; the node's job may be a UniqueJob.
export async function flowLeaves(producer: FlowProducer): Promise<void> {
  const flow = withUniqueness(producer);
  const node = await flow.add({
    name: 'report',
    queueName: 'reports',
    children: [{ name: 'fetch', queueName: 'fetches', data: { customer: 1 }, opts: { unique: policy, attempts: 2 } }],
  });
  // @ts-expect-error misspelt strategy on a child (reported at the call: no overload takes it)
  await flow.add({
    name: 'report',
    queueName: 'reports',
    children: [{ name: 'fetch', queueName: 'fetches', opts: { unique: { on_conflict: 'ignroe' } } }],
  });
  // @ts-expect-error misspelt field on a grandchild in a batch
  await flow.addBulk([
    {
      name: 'r',
      queueName: 'r',
      children: [{ name: 'p', queueName: 'p', children: [{ name: 'c', queueName: 'c', opts: { unique: { periood: 5 } } }] }],
    },
  ]);
  // A node's job reads `.unique` without a cast: a unique node's outcome (never 'rejected': a
  // refused node throws), or undefined on a plain node.
  const job = node.children![0]!.job;
  exact<typeof job.unique, UniqueOutcome<'created' | 'deduplicated' | 'replaced' | 'updated'> | undefined>(true);
  exact<typeof node.job.unique, typeof job.unique>(true);
  exact<NonNullable<NonNullable<typeof node.children>[number]['children']>[number]['job']['unique'], typeof job.unique>(true);
  // @ts-expect-error `unique` is not on every node's job: check it first
  void job.unique.outcome;
  // @ts-expect-error a misspelt field
  void job.unique?.outcom;
  // @ts-expect-error a node's outcome is never 'rejected'
  if (job.unique?.outcome === 'rejected') return;
  const outcome = job.unique;
  if (outcome?.outcome === 'replaced') exact<typeof outcome.replaced, OjsJob>(true);
  // Still BullMQ's JobNode, and its job BullMQ's Job.
  const asNode: JobNode = node;
  const read: Job = job;
  exact<typeof flow.unwrapped, FlowProducer>(true);
  const [bulk] = await flow.addBulk([{ name: 'fetch', queueName: 'fetches', opts: { unique: policy } }]);
  exact<NonNullable<typeof bulk>['job']['unique'], typeof job.unique>(true);
  void [asNode, read];
}

// The scheduler processor: the queue's jobs typed by the queue, as BullMQ's Worker types them; the
// processor returned also takes the relay jobs, and the worker sees both.
export function schedulerProcessor(queue: MailQueue, untyped: Queue): void {
  const q = withUniqueness(queue);
  const processor = makeUniqueSchedulerProcessor(q, async (job) => {
    exact<typeof job, Job<Payload, Receipt, Names>>(true);
    exact<typeof job.data.userId, number>(true);
    // @ts-expect-error a misspelt data field
    void job.data.userid;
    // @ts-expect-error a misspelt job name
    if (job.name === 'email.sned') return { sent: false };
    return { sent: true };
  });
  exact<typeof processor, Processor<Payload | RelayData, Receipt | RelayResult, Names | typeof UNIQUE_SCHEDULER_JOB_NAME>>(true);
  // @ts-expect-error the processor answers the queue's result type
  makeUniqueSchedulerProcessor(q, async () => 'not a receipt');
  const worker = new Worker('mail', processor);
  exact<typeof worker, Worker<Payload | RelayData, Receipt | RelayResult, Names | typeof UNIQUE_SCHEDULER_JOB_NAME>>(true);
  // An untyped queue's jobs are BullMQ's defaults, as for an untyped Worker.
  makeUniqueSchedulerProcessor(withUniqueness(untyped), async (job) => {
    exact<typeof job, Job<any, any, string>>(true);
  });
}

export async function backendEnqueueMany(): Promise<void> {
  const backend = createBullMQBackend({ connection: 'redis://127.0.0.1:6379' });
  const results = await backend.enqueueMany([
    { type: 't', args: {}, unique: policy },
    { type: 't', args: [] },
  ]);
  exact<typeof results, EnqueueResult[]>(true);
  // @ts-expect-error a misspelt policy field in a batch job
  await backend.enqueueMany([{ type: 't', args: {}, unique: { on_conflcit: 'ignore' } }]);
  // @ts-expect-error a BullMQ add's arguments are not an OJS job
  await backend.enqueueMany([{ name: 't', data: {} }]);
}

export function registeredPolicies(queue: Queue<{ userId: number }, void, 'report.build' | 'email.send'>, plain: Queue): void {
  withUniqueness(queue, { policies: { 'report.build': { keys: ['type', 'queue'], on_conflict: 'ignore' } }, reportOnly: true });
  withUniqueness(plain, { policies: { anything: { x_report_only: true } } });
  // @ts-expect-error a misspelt strategy in a registered policy fails to compile
  withUniqueness(queue, { policies: { 'report.build': { on_conflict: 'ignroe' } } });
  // @ts-expect-error a misspelt field too
  withUniqueness(queue, { policies: { 'report.build': { periood: 'PT1H' } } });
  // @ts-expect-error a job name the queue's name type does not have
  withUniqueness(queue, { policies: { 'report.biuld': { keys: ['type'] } } });
  // @ts-expect-error report-only is a boolean
  withUniqueness(queue, { reportOnly: 'yes' });
  // @ts-expect-error so is a policy's mark
  withUniqueness(plain, { policies: { anything: { x_report_only: 1 } } });
}

// readUniqueFields: a job or its id, and a read-only answer (null for a job without a policy).
declare const fieldsQueue: Queue;
async function readsUniqueFields(job: Job): Promise<void> {
  const fields = await readUniqueFields(fieldsQueue, job);
  await readUniqueFields(fieldsQueue, 'job-id');
  // @ts-expect-error a number is no job id
  await readUniqueFields(fieldsQueue, 7);
  // @ts-expect-error possibly null
  void fields.duplicate_count;
  if (fields) {
    exact<typeof fields.duplicate_count, number>(true);
    // @ts-expect-error the answer is read-only
    fields.duplicate_count = 2;
  }
}
void readsUniqueFields;
