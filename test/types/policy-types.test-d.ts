/**
 * Type tests of `UniquePolicyInput` on every entry point where a user writes a policy. Compiled by
 * `npm run typecheck` (tsconfig includes test/), never run: mocha only picks up `*.test.ts`.
 *
 * Each `@ts-expect-error` is a test: it fails compilation if the line below it compiles, so a
 * policy type that lets a typo through breaks the typecheck. The lines without one must compile.
 */
import type { Queue } from 'bullmq';
import { withUniqueness } from '../../adapters/bullmq/index.js';
import {
  addJobWithClient,
  type TransactionClientLike,
  type UniqueWorkerUtils,
  type UniqueJobHelpers,
} from '../../adapters/graphile-worker/index.js';
import { UNIQUE_STATE_GROUPS, type JobInput, type UniquePolicyInput } from '../../src/index.js';
import { createMemoryBackend } from '../../adapters/memory/index.js';

/** The README's policy, written `as const`: readonly arrays and literal types. */
const readmePolicy = { keys: ['type', 'args'], args_keys: ['user_id'], period: 'PT1H', on_conflict: 'ignore' } as const;
/** Every state, as `UNIQUE_STATE_GROUPS.all` (a readonly tuple). */
const allStates = { keys: ['type'], states: UNIQUE_STATE_GROUPS.all } as const;
/** Held in a variable without `as const`: `satisfies` keeps the literal types. */
const checked = { keys: ['type', 'meta'], meta_keys: ['tenant'], period: 3600, on_conflict: 'replace' } satisfies UniquePolicyInput;

// Not called: these functions only have to compile.
export async function memoryEnqueue(): Promise<void> {
  const backend = createMemoryBackend();
  const job = { type: 'email.send', args: { user_id: 1 } };
  await backend.enqueue({ ...job, unique: readmePolicy });
  await backend.enqueue({ ...job, unique: allStates });
  await backend.enqueue({ ...job, unique: { states: UNIQUE_STATE_GROUPS.all } });
  await backend.enqueue({ ...job, unique: checked });
  await backend.enqueue({ ...job, unique: {} });
  await backend.enqueue({ ...job, unique: null });
  // @ts-expect-error misspelt strategy
  await backend.enqueue({ ...job, unique: { on_conflict: 'ignroe' } });
  // @ts-expect-error misspelt field
  await backend.enqueue({ ...job, unique: { periood: 5 } });
  // @ts-expect-error not a policy
  await backend.enqueue({ ...job, unique: true });
  // @ts-expect-error not a policy
  await backend.enqueue({ ...job, unique: 'yes' });
  // @ts-expect-error unknown dimension
  await backend.enqueue({ ...job, unique: { keys: ['argz'] } });
  // @ts-expect-error unknown state
  await backend.enqueue({ ...job, unique: { states: ['done'] } });
  // @ts-expect-error misspelt field, on a JobInput held in a variable
  const typo: JobInput = { ...job, unique: { periood: 5 } };
  void typo;
}

export async function bullmqAdd(queue: Queue): Promise<void> {
  const q = withUniqueness(queue);
  await q.add('email.send', { user_id: 1 }, { unique: readmePolicy });
  await q.add('email.send', { user_id: 1 }, { unique: allStates });
  await q.add('email.send', { user_id: 1 }, { unique: { states: UNIQUE_STATE_GROUPS.all } });
  await q.add('email.send', { user_id: 1 }, { unique: checked, ojsMeta: { tenant: 't' } });
  await q.add('email.send', { user_id: 1 }, { unique: null });
  await q.addBulk([{ name: 'email.send', data: {}, opts: { unique: readmePolicy } }]);
  // @ts-expect-error misspelt strategy
  await q.add('email.send', {}, { unique: { on_conflict: 'ignroe' } });
  // @ts-expect-error misspelt field
  await q.add('email.send', {}, { unique: { periood: 5 } });
  // @ts-expect-error not a policy
  await q.add('email.send', {}, { unique: true });
  // @ts-expect-error not a policy
  await q.add('email.send', {}, { unique: 'yes' });
  // @ts-expect-error misspelt strategy
  await q.addBulk([{ name: 'email.send', data: {}, opts: { unique: { on_conflict: 'ignroe' } } }]);
}

export async function graphileAddJob(utils: UniqueWorkerUtils, helpers: UniqueJobHelpers): Promise<void> {
  // The README's `as const` policy and UNIQUE_STATE_GROUPS.all used to fall through to the plain
  // overload ("'unique' does not exist in type 'TaskSpec'"); now they pick the unique one.
  const result = await utils.addJob('email.send', { user_id: 1 }, { unique: readmePolicy });
  const outcome: 'created' | 'deduplicated' | 'replaced' | 'updated' = result.outcome;
  void outcome;
  await utils.addJob('email.send', {}, { unique: allStates });
  await utils.addJob('email.send', {}, { unique: { states: UNIQUE_STATE_GROUPS.all } });
  await utils.addJob('email.send', {}, { unique: checked, meta: { tenant: 't' } });
  const plain = await utils.addJob('email.send', {}, { unique: null });
  void plain.task_identifier;
  await utils.addJobs([{ identifier: 'email.send', payload: {}, unique: readmePolicy }]);
  await helpers.addJob('email.send', {}, { unique: readmePolicy });
  // @ts-expect-error misspelt strategy
  await utils.addJob('email.send', {}, { unique: { on_conflict: 'ignroe' } });
  // @ts-expect-error misspelt field
  await utils.addJob('email.send', {}, { unique: { periood: 5 } });
  // @ts-expect-error not a policy
  await utils.addJob('email.send', {}, { unique: true });
  // @ts-expect-error not a policy
  await utils.addJob('email.send', {}, { unique: 'yes' });
  // @ts-expect-error misspelt strategy
  await utils.addJobs([{ identifier: 'email.send', payload: {}, unique: { on_conflict: 'ignroe' } }]);
  // @ts-expect-error misspelt field
  await helpers.addJob('email.send', {}, { unique: { periood: 5 } });
}

export async function graphileAddJobWithClient(client: TransactionClientLike): Promise<void> {
  const result = await addJobWithClient(client, 'email.send', { user_id: 1 }, { unique: readmePolicy });
  void result.outcome;
  await addJobWithClient(client, 'email.send', {}, { unique: allStates });
  await addJobWithClient(client, 'email.send', {}, { unique: { states: UNIQUE_STATE_GROUPS.all } });
  await addJobWithClient(client, 'email.send', {}, { unique: checked });
  await addJobWithClient(client, 'email.send', {}, { unique: null });
  // @ts-expect-error misspelt strategy
  await addJobWithClient(client, 'email.send', {}, { unique: { on_conflict: 'ignroe' } });
  // @ts-expect-error misspelt field
  await addJobWithClient(client, 'email.send', {}, { unique: { periood: 5 } });
  // @ts-expect-error not a policy
  await addJobWithClient(client, 'email.send', {}, { unique: true });
  // @ts-expect-error not a policy
  await addJobWithClient(client, 'email.send', {}, { unique: 'yes' });
}
