/**
 * Random enqueue scenarios for the property test: short sequences of enqueues (and cancels) of
 * jobs drawn from small domains, so duplicates are frequent, mixed with inputs every backend must
 * refuse (bad keys and periods, unknown fields, NaN/Infinity/2^53/lone surrogates/holes, long or
 * NUL-containing identifiers, queue names with ':', deep nesting, `unique: null` …).
 *
 * Nothing here says which inputs are valid: the memory backend's answer is the oracle.
 */
import fc from 'fast-check';
import type { ConflictStrategy, JobInput } from '../../src/index.js';

export type Command = { kind: 'enqueue'; job: JobInput } | { kind: 'cancel'; pick: number };

function nested(depth: number): unknown {
  let value: unknown = { leaf: 1 };
  for (let i = 0; i < depth; i += 1) value = { n: value };
  return value;
}

const HOLE = [, 1];
const DEEP = nested(2_000);
const NESTED_5 = nested(5);

/** Values a field usually has (valid on every backend, as far as this file knows) … */
const usual: Record<string, fc.Arbitrary<unknown>> = {
  type: fc.constantFrom('email.send', 'email.send', 'sms.send', 'report.daily', 'caf\u00e9.run'),
  queue: fc.constantFrom(undefined, undefined, undefined, 'default', 'a', 'b', 'caf\u00e9', 'cafe\u0301'),
  id: fc.constantFrom(undefined, undefined, undefined, undefined, undefined, undefined, 'job-1', 'job-2'),
  args: fc.constantFrom<unknown>(
    { user_id: 1 },
    { user_id: 1 },
    { user_id: 1 },
    { user_id: 2 },
    { user_id: 1, template: 'x' },
    [{ user_id: 1 }, 'pos'],
    { user_id: 3, s: 'Jose\u0301' },
    { user_id: 3, s: 'Jos\u00e9' },
    { user_id: 1, nested: NESTED_5 },
    {},
    'text',
  ),
  meta: fc.constantFrom(
    undefined,
    { tenant_id: 'acme' },
    { tenant_id: 'acme' },
    { tenant_id: 'acme', trace: 't2' },
    { tenant_id: 'globex' },
  ),
  scheduled_at: fc.constantFrom(undefined, undefined, undefined, undefined, '2099-01-01T00:00:00Z', '2000-01-01T00:00:00.000Z'),
  max_attempts: fc.constantFrom(undefined, undefined, 1, 3),
  priority: fc.constantFrom(undefined, undefined, 0, 5, -5),
};

/** … and values that stretch or break it (memory decides which are refused). */
const unusual: Record<string, fc.Arbitrary<unknown>> = {
  type: fc.constantFrom('', 'x'.repeat(130), 't\u0000nul', 42, 'y'.repeat(120)),
  queue: fc.constantFrom('x:y', '', 'q'.repeat(130), 'q\u0000nul', 7),
  id: fc.constantFrom('123', '0', 'a:b', 'a:b:c', '', 'i'.repeat(130), 'i\u0000nul', 99, '0:x'),
  args: fc.constantFrom(
    { user_id: Number.NaN },
    { user_id: Number.POSITIVE_INFINITY },
    { user_id: 2 ** 53 },
    { s: '\uD800' },
    { ['k\uDC00']: 1 },
    HOLE,
    { user_id: 1, at: undefined },
    { big: 10n },
    { at: new Date(0) },
    { s: 'a\u0000b' },
    DEEP,
  ),
  meta: fc.constantFrom(
    { tenant_id: 'a\u0000b' },
    { ['k\u0000']: 1 },
    { tenant_id: Number.NaN },
    { tenant_id: '\uDBFF' },
    { tenant_id: 2 ** 53 },
    'not-an-object',
    [1],
    null,
    { deep: DEEP },
  ),
  scheduled_at: fc.constantFrom(
    '9999-12-31T23:59:59Z',
    '0001-01-01T00:00:00Z',
    '1969-07-20T20:17:00Z',
    'tomorrow',
    new Date(Number.NaN),
    new Date(8.64e15),
    1_700_000_000_000,
  ),
  max_attempts: fc.constantFrom(0, 1.5, 40_000, Number.NaN, 2 ** 53, -1, '3'),
  priority: fc.constantFrom(40_000, Number.NaN, 1.5, 2 ** 31, Number.POSITIVE_INFINITY, -40_000, '1'),
};

const usualPolicy = fc
  .record(
    {
      keys: fc.subarray(['type', 'queue', 'args', 'meta']),
      args_keys: fc.constantFrom(['user_id'], ['user_id'], null),
      period: fc.constantFrom('P1D', 'PT24H', 'P1Y', 'P1M', 'PT1H30M0.5S'),
      states: fc.constantFrom(
        ['available', 'scheduled', 'pending', 'active', 'retryable'],
        ['available', 'cancelled'],
        ['available', 'scheduled', 'pending', 'active', 'retryable', 'completed', 'discarded', 'cancelled'],
        ['scheduled'],
      ),
      on_conflict: fc.constantFrom('reject', 'ignore', 'replace', 'replace', 'replace_except_schedule'),
    },
    { requiredKeys: [] },
  )
  // meta_keys exactly when the keys include meta (§2.2 requires it then), so most policies pass.
  // args_keys only with the args dimension.
  .map((policy) => {
    const { args_keys, ...rest } = policy;
    const withArgs = policy.keys?.includes('args') && args_keys !== undefined ? { ...rest, args_keys } : rest;
    return policy.keys?.includes('meta') ? { ...withArgs, meta_keys: ['tenant_id'] } : withArgs;
  });
const unusualPolicyField: fc.Arbitrary<[string, unknown]> = fc.oneof(
  fc.tuple(fc.constant('keys'), fc.constantFrom<unknown>(['type', 'argz'], ['Args'], ['args', 'args'], 'type', [], [null])),
  fc.tuple(
    fc.constant('args_keys'),
    fc.constantFrom<unknown>(
      ['user_id', 'missing'],
      [],
      'user_id',
      [1],
      ['\uD800'],
      Array.from({ length: 300 }, (_, i) => `k${i}`),
    ),
  ),
  fc.tuple(fc.constant('meta_keys'), fc.constantFrom<unknown>([], ['t\u0000'], 'tenant_id', ['missing'])),
  fc.tuple(
    fc.constant('period'),
    fc.constantFrom<unknown>('P273789Y', 'PT8639999999999S', 9007199254740991, 3600, '1h', 'P', 'PT1.5H', -1, Number.NaN, null, 'P10000Y'),
  ),
  fc.tuple(fc.constant('states'), fc.constantFrom<unknown>(['available', 'done'], [], ['available', 'available'], 'available')),
  fc.tuple(fc.constant('on_conflict'), fc.constantFrom<unknown>('upsert', 5, null)),
  fc.tuple(fc.constant('unique_for'), fc.constant<unknown>(60)),
);
usual.unique = fc.oneof(
  { weight: 1, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.constant({}) },
  { weight: 6, arbitrary: usualPolicy },
);
unusual.unique = fc.oneof(
  fc.constantFrom<unknown>(null, 'reject', 42, [], true),
  fc.tuple(usualPolicy, unusualPolicyField).map(([policy, [field, value]]) => ({ ...policy, [field]: value })),
);

const FIELDS = Object.keys(usual);
const corruption: fc.Arbitrary<[string, unknown]> = fc.oneof(...FIELDS.map((field) => fc.tuple(fc.constant(field), unusual[field]!)));

/** A job with usual fields, about half the time with one or two fields replaced by unusual values. */
const jobArb = fc
  .tuple(
    fc.record(usual),
    fc.oneof(
      { weight: 5, arbitrary: fc.constant([] as [string, unknown][]) },
      { weight: 4, arbitrary: fc.array(corruption, { minLength: 1, maxLength: 1 }) },
      { weight: 1, arbitrary: fc.array(corruption, { minLength: 2, maxLength: 2 }) },
    ),
  )
  .map(([fields, changes]) => {
    const all: Record<string, unknown> = { ...fields, ...Object.fromEntries(changes) };
    const job: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(all)) if (value !== undefined) job[name] = value;
    return job as unknown as JobInput;
  });

type Step = Command | { kind: 'again'; pick: number; on_conflict: ConflictStrategy | null };

/**
 * 1–6 steps: a new job, the same job as an earlier step (possibly under another `on_conflict`),
 * so duplicates are common, or a cancel of an earlier job.
 */
export const commandsArb: fc.Arbitrary<Command[]> = fc
  .array(
    fc.oneof(
      { weight: 5, arbitrary: jobArb.map((job): Step => ({ kind: 'enqueue', job })) },
      {
        weight: 4,
        arbitrary: fc
          .tuple(fc.nat(7), fc.constantFrom(null, null, 'reject', 'ignore', 'replace', 'replace_except_schedule'))
          .map(([pick, on_conflict]): Step => ({ kind: 'again', pick, on_conflict })),
      },
      { weight: 1, arbitrary: fc.nat(7).map((pick): Step => ({ kind: 'cancel', pick })) },
    ),
    { minLength: 1, maxLength: 6 },
  )
  .map((steps) => {
    const commands: Command[] = [];
    for (const step of steps) {
      if (step.kind !== 'again') {
        commands.push(step);
        continue;
      }
      const earlier = commands.filter((c): c is Extract<Command, { kind: 'enqueue' }> => c.kind === 'enqueue');
      if (earlier.length === 0) continue;
      const { job } = earlier[step.pick % earlier.length]!;
      const unique = job.unique;
      const sameJob =
        step.on_conflict !== null && typeof unique === 'object' && unique !== null && !Array.isArray(unique)
          ? { ...job, unique: { ...unique, on_conflict: step.on_conflict } }
          : job;
      commands.push({ kind: 'enqueue', job: sameJob });
    }
    return commands;
  })
  .filter((commands) => commands.length > 0);

/**
 * A copy of `job` whose non-empty string `type` and `id` carry `tag`, so that scenarios run one
 * after another on a shared store never meet each other's jobs (the key always includes the type;
 * ids are global). An all-digit id stays all-digit (the tag's digits go in front).
 */
export function tagged(job: JobInput, tag: number): JobInput {
  const copy = { ...job } as Record<string, unknown>;
  if (typeof copy.type === 'string' && copy.type !== '') copy.type = `r${tag}.${copy.type}`;
  if (typeof copy.id === 'string' && copy.id !== '') copy.id = /^[0-9]+$/.test(copy.id) ? `${tag}${copy.id}` : `r${tag}.${copy.id}`;
  return copy as unknown as JobInput;
}

/** A short description of a job for failure messages (no 2,000-level nesting, no 300 keys). */
export function describeJob(job: JobInput): string {
  return JSON.stringify(job, (key, value: unknown) => {
    if (value === DEEP) return '<2000 levels>';
    if (typeof value === 'bigint') return `${value}n`;
    if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
    if (value === undefined && key !== '') return '<undefined>';
    if (Array.isArray(value) && value.length > 20) return `<${value.length} items>`;
    if (typeof value === 'string')
      return value.replace(/[\u0000\uD800-\uDFFF]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).slice(0, 60);
    if (value instanceof Date) return `Date(${value.getTime()})`;
    return value;
  });
}

// ---------------------------------------------------------------------------------------------
// Lifecycle scenarios on one uniqueness key (test/property/lifecycle-property.test.ts)

/**
 * The dimensions every policy of a lifecycle scenario shares, so all its jobs have one key, and
 * the queues its jobs go to (one when `queue` is a dimension: another queue is another key).
 */
const LIFECYCLE_KEYS = [
  { keys: ['type', 'queue'], queues: ['default'] },
  { keys: ['type', 'queue', 'args'], args_keys: ['user_id'], queues: ['q1'] },
  { keys: ['type'], queues: ['default', 'q1', 'q2', 'q3'] },
] as const;

const DEFAULT_STATES = ['available', 'active', 'scheduled', 'retryable', 'pending'] as const;

/**
 * A policy BullMQ's own deduplication key could answer: default states (omitted or spelled
 * out), `reject` or `ignore`, no period.
 */
const nativePolicyArb = fc.record(
  {
    states: fc.constant<readonly string[]>(DEFAULT_STATES),
    on_conflict: fc.constantFrom('reject', 'ignore'),
  },
  { requiredKeys: [] },
);

/** Any other: terminal or narrow states, a period, a replace. */
const widerPolicyArb = fc.record(
  {
    states: fc.constantFrom<readonly string[]>(
      [...DEFAULT_STATES, 'completed'],
      [...DEFAULT_STATES, 'completed'],
      [...DEFAULT_STATES, 'discarded', 'cancelled'],
      [...DEFAULT_STATES, 'completed', 'discarded', 'cancelled'],
      [...DEFAULT_STATES, 'completed', 'discarded', 'cancelled'],
      ['available', 'scheduled'],
      ['completed', 'discarded'],
      ['cancelled'],
      DEFAULT_STATES,
    ),
    on_conflict: fc.constantFrom('reject', 'ignore', 'replace', 'replace', 'replace_except_schedule'),
    // Windows far longer than a scenario: the clocks (Redis TIME, the memory backend's) never see one close.
    period: fc.constantFrom('PT1H', 'P1D'),
  },
  { requiredKeys: ['states'] },
);

/**
 * The coalescing extensions every host declares (issue 23): a cooldown from the last run's finish
 * (`x_period_anchor: "finished_at"`, with a terminal state), and a debounce of a scheduled job
 * capped by `x_max_wait` (scheduled jobs are due in 2099: the cap always applies). `x_successor`
 * has a sample of its own (`lifecycleSuccessorScenarioArb`).
 */
const coalescingPolicyArb = fc.oneof(
  fc.record(
    {
      states: fc.constantFrom<readonly string[]>(
        [...DEFAULT_STATES, 'completed'],
        [...DEFAULT_STATES, 'completed', 'discarded', 'cancelled'],
        ['completed', 'discarded'],
      ),
      on_conflict: fc.constantFrom('reject', 'ignore', 'replace'),
      period: fc.constant('PT1H'),
      x_period_anchor: fc.constant('finished_at'),
    },
    { requiredKeys: ['states', 'on_conflict', 'period', 'x_period_anchor'] },
  ),
  fc.record(
    {
      states: fc.constantFrom<readonly string[]>(DEFAULT_STATES, ['scheduled', 'available']),
      on_conflict: fc.constantFrom('reject', 'ignore'),
      x_update: fc.constantFrom({ scheduled: ['scheduled_at'] }, { scheduled: ['args', 'scheduled_at'] }),
      x_max_wait: fc.constant('PT30M'),
    },
    { requiredKeys: ['states', 'on_conflict', 'x_update', 'x_max_wait'] },
  ),
);

/** A step of a lifecycle scenario; `pick` chooses among the jobs the step applies to (in memory's view). */
export type LifecycleStep =
  | { kind: 'enqueue'; policy: number; queue: number; scheduled: boolean; max_attempts: 1 | 2 }
  /** A worker takes the next due job of a queue (`pick` among the queues that have one). */
  | { kind: 'start'; pick: number }
  /** A running attempt ends: `fail` leaves the job `retryable` while attempts remain, else `discarded`. */
  | { kind: 'finish'; pick: number; outcome: 'complete' | 'fail' }
  /** `start` and `finish` at once. */
  | { kind: 'run'; pick: number; outcome: 'complete' | 'fail' }
  /** A scheduled or retryable job is made due (BullMQ `job.promote()`). */
  | { kind: 'promote'; pick: number }
  | { kind: 'cancel'; pick: number }
  /** The host deletes a job (BullMQ `job.remove()`). */
  | { kind: 'remove'; pick: number }
  /** A discarded job is retried by hand (BullMQ `job.retry()`). */
  | { kind: 'retry'; pick: number };

export interface LifecycleScenario {
  /** The policy fields every job shares (the key's dimensions). */
  keys: { keys: string[]; args_keys?: string[] };
  queues: string[];
  /** Policies of the one key: the first could be BullMQ's own deduplication, the second could not. */
  policies: Record<string, unknown>[];
  steps: LifecycleStep[];
}

const outcomeArb = fc.constantFrom<'complete' | 'fail'>('complete', 'fail');
const enqueueStepArb: fc.Arbitrary<LifecycleStep> = fc.record({
  kind: fc.constant('enqueue' as const),
  policy: fc.nat(3),
  queue: fc.nat(3),
  scheduled: fc.constantFrom(false, false, false, true),
  max_attempts: fc.constantFrom<1 | 2>(1, 1, 2),
});
const stepArb: fc.Arbitrary<LifecycleStep> = fc.oneof(
  { weight: 5, arbitrary: enqueueStepArb },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('start' as const), pick: fc.nat(1) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('finish' as const), pick: fc.nat(3), outcome: outcomeArb }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('run' as const), pick: fc.nat(1), outcome: outcomeArb }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('promote' as const), pick: fc.nat(3) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat(7) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('remove' as const), pick: fc.nat(7) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('retry' as const), pick: fc.nat(3) }) },
);

/**
 * A lifecycle scenario: 2–4 policies of one key (the first with default states, reject/ignore and
 * no period; the second with terminal or narrow states, a period or a replace; the rest either, or
 * a coalescing one: a cooldown from the finish, a capped debounce),
 * and 2–20 steps, the first an enqueue, with at most 8 enqueues, so a key never has more than eight finished jobs (the
 * BullMQ index keeps a key's eight newest uncounted finished entries: docs/design/bullmq.md,
 * "Reclaim").
 */
export const lifecycleScenarioArb: fc.Arbitrary<LifecycleScenario> = fc
  .record({
    shape: fc.constantFrom(...LIFECYCLE_KEYS),
    native: nativePolicyArb,
    wider: widerPolicyArb,
    more: fc.array(fc.oneof(nativePolicyArb, widerPolicyArb, coalescingPolicyArb), { maxLength: 2 }),
    steps: fc.tuple(enqueueStepArb, fc.array(stepArb, { minLength: 1, maxLength: 19 })).map(([first, rest]) => [first, ...rest]),
  })
  .map(({ shape, native, wider, more, steps }) => lifecycleScenario(shape, [native, wider, ...more], steps));

function lifecycleScenario(
  shape: (typeof LIFECYCLE_KEYS)[number],
  drawn: { states?: readonly string[] }[],
  steps: LifecycleStep[],
): LifecycleScenario {
  const { queues, ...keys } = shape;
  const dimensions = { ...keys, keys: [...keys.keys] } as LifecycleScenario['keys'];
  if ('args_keys' in keys) dimensions.args_keys = [...keys.args_keys];
  const policies = drawn.map(({ states, ...rest }) => ({
    ...dimensions,
    ...rest,
    ...(states ? { states: [...states] } : {}),
  }));
  let enqueues = 0;
  const kept = steps
    .filter((step) => step.kind !== 'enqueue' || ++enqueues <= 8)
    .map((step) => (step.kind === 'enqueue' ? { ...step, policy: step.policy % policies.length } : step));
  return { keys: dimensions, queues: [...queues], policies, steps: kept };
}

/**
 * x_successor (run again after the active one): a policy keeping a successor, beside the others
 * of its key. A sample of its own, so that adding it left the scenarios of `lifecycleScenarioArb`
 * (and the reproductions that name them) as they were. Keys with the `queue` dimension only: on
 * BullMQ, a successor's holder must be in its own queue (refused otherwise, docs/design/successor.md).
 */
const successorPolicyArb = fc.record(
  {
    states: fc.constantFrom<readonly string[]>(
      DEFAULT_STATES,
      [...DEFAULT_STATES, 'completed'],
      [...DEFAULT_STATES, 'completed', 'discarded', 'cancelled'],
    ),
    on_conflict: fc.constantFrom('reject', 'ignore', 'replace'),
    x_successor: fc.constant('latest'),
  },
  { requiredKeys: ['states', 'on_conflict', 'x_successor'] },
);

/** More jobs left running than `stepArb` leaves: a successor needs an active job to wait for. */
const successorStepArb: fc.Arbitrary<LifecycleStep> = fc.oneof(
  { weight: 5, arbitrary: enqueueStepArb },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('start' as const), pick: fc.nat(1) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('finish' as const), pick: fc.nat(3), outcome: outcomeArb }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('run' as const), pick: fc.nat(1), outcome: outcomeArb }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('promote' as const), pick: fc.nat(3) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat(7) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('remove' as const), pick: fc.nat(7) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('retry' as const), pick: fc.nat(3) }) },
);

export const lifecycleSuccessorScenarioArb: fc.Arbitrary<LifecycleScenario> = fc
  .record({
    shape: fc.constantFrom(LIFECYCLE_KEYS[0], LIFECYCLE_KEYS[1]),
    native: nativePolicyArb,
    successor: successorPolicyArb,
    more: fc.array(fc.oneof(widerPolicyArb, successorPolicyArb), { maxLength: 2 }),
    steps: fc.tuple(enqueueStepArb, fc.array(successorStepArb, { minLength: 1, maxLength: 19 })).map(([first, rest]) => [first, ...rest]),
  })
  .map(({ shape, native, successor, more, steps }) => lifecycleScenario(shape, [native, successor, ...more], steps));
