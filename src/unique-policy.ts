/**
 * The `UniquePolicy` of spec §2: its type, its defaults (§2.1) and its validation (§2.2, §6.2).
 *
 * zod is the single validator. Its schema mirrors the normative JSON Schema of §13 (exported as
 * `uniquePolicyJsonSchema`, and checked against this schema in test/unique-policy-schema.test.ts),
 * with three deliberate differences, each one a place where the spec's prose or its appendix says
 * more than the schema:
 *  - `args_keys`, `meta_keys` and `period` may be `null`: §2.1 gives `null` as their default.
 *  - `period` may be a positive integer number of seconds (the Appendix A.3 convenience
 *    extension); it is normalised to the ISO 8601 string `PT<n>S`.
 *  - Policies the schema lets through but that would silently deduplicate nothing or the wrong
 *    thing are refused, as §2.2's rationale asks ("should learn about it immediately"): a `period`
 *    of zero or with no component, `args_keys` without `"args"` in `keys`, `meta_keys` without
 *    `"meta"` in `keys`, an empty `states`.
 * Job-dependent rules (§2.2: `args_keys` must exist in `args`; likewise `meta_keys` in `meta`)
 * run when `parseUniquePolicy` is given the job.
 */
import { z } from 'zod';
import { InvalidJobInputError, type ValidationIssue } from './errors.js';
import { LIVE_STATES, OJS_JOB_STATES, TERMINAL_STATES, type OjsJobState } from './job-state.js';
import { periodProblem } from './period.js';
import { selectableArgs } from './selectable-args.js';
import { splitReportOnly } from './report-only-mark.js';

/** The uniqueness dimensions of spec §3. */
export const UNIQUE_DIMENSIONS = ['type', 'queue', 'args', 'meta'] as const;
export type UniqueDimension = (typeof UNIQUE_DIMENSIONS)[number];

/** The conflict strategies of spec §5. */
export const CONFLICT_STRATEGIES = ['reject', 'replace', 'replace_except_schedule', 'ignore'] as const;
export type ConflictStrategy = (typeof CONFLICT_STRATEGIES)[number];

/** The default `states` of spec §6.1: the five non-terminal states. */
export const DEFAULT_UNIQUE_STATES: readonly OjsJobState[] = LIVE_STATES;

/** The fields of a job a policy's key reads (`args`, `meta`): a `JobInput`'s, or an envelope's. */
export interface PolicyJob {
  args: unknown;
  meta?: Record<string, unknown>;
}

/**
 * Named state sets for what other job systems let their users say (see docs/expressiveness.md).
 * Readonly arrays: pass one as `states`.
 */
export const UNIQUE_STATE_GROUPS = {
  /** OJS default (§6.1): every state a job can still run from. */
  incomplete: DEFAULT_UNIQUE_STATES,
  /** Every state: unique for as long as the backend keeps a record (Oban Pro `all`, Zizq `exists`). */
  all: OJS_JOB_STATES,
  /** Not yet picked by a worker (Zizq `queued`, Faktory `unique_until: start`). */
  queued: ['scheduled', 'available', 'pending'],
  /** Until the job succeeds (Faktory's default `unique_until: success`, Zizq `active`). */
  untilSuccess: ['scheduled', 'available', 'pending', 'active', 'retryable'],
  /** Anything that did not fail or get cancelled (Oban Pro `successful`, Oban's default). */
  successful: ['scheduled', 'available', 'pending', 'active', 'retryable', 'completed'],
  /** Only jobs still waiting for their time (Oban Pro `scheduled`, debouncing). */
  scheduled: ['scheduled'],
} as const satisfies Record<string, readonly OjsJobState[]>;

/**
 * The policy extensions this library defines beyond the spec (docs/decisions.md, "Policy
 * extensions"). Each is a policy field prefixed `x_`, the namespace ojs-core §11.10 asks for. A
 * backend declares the ones it implements (`capabilities.unique_jobs.extensions`) and refuses a
 * policy using any other with `InvalidJobInputError` naming the field: never ignores it.
 */
export const UNIQUE_EXTENSIONS = ['x_period_anchor', 'x_key', 'x_update', 'x_max_wait', 'x_successor'] as const;
export type UniqueExtension = (typeof UNIQUE_EXTENSIONS)[number];

/**
 * `x_period_anchor` (extends §7.2): the instant the period is measured from.
 *  - `created_at`: the existing job's creation (the spec's rule, the default);
 *  - `scheduled_at`: the existing job's current scheduled time (Oban `timestamp: :scheduled_at`,
 *    Oban Pro, Faktory's delay-inclusive window);
 *  - `last_duplicate`: the last enqueue that found it a duplicate, else its creation: each
 *    duplicate pushes the window's end (BullMQ `deduplication.extend`);
 *  - `finished_at`: when the job finished (completed, failed for good, cancelled): a cooldown
 *    after the last run (Faktory #464, Asynq #369). A job not finished yet has no window end: it
 *    is a duplicate in every state the policy counts. Needs a terminal state in `states`.
 */
export const PERIOD_ANCHORS = ['created_at', 'scheduled_at', 'last_duplicate', 'finished_at'] as const;
export type PeriodAnchor = (typeof PERIOD_ANCHORS)[number];

/** The states in which `x_update` may update a duplicate in place: the non-terminal ones. */
export const UPDATE_STATES = ['scheduled', 'available', 'pending', 'active', 'retryable'] as const;
export type UpdateState = (typeof UPDATE_STATES)[number];

/** The fields `x_update` may copy from the new job onto the existing one, in the order `changed` lists them. */
export const UPDATE_FIELDS = ['args', 'meta', 'priority', 'max_attempts', 'scheduled_at'] as const;
export type UpdateField = (typeof UPDATE_FIELDS)[number];

/** `x_update`: per state of the existing job, the fields to copy onto it from the new job. */
export type UpdateInPlace = { [S in UpdateState]?: UpdateField[] };

/**
 * `x_successor` (run again after the active one): what a duplicate of an `active` job leaves.
 *  - `latest`: one pending successor per key, carrying the latest duplicate (its payload and its
 *    id); it becomes a real job when the active one finishes (BullMQ
 *    `deduplication.keepLastIfActive`). Each later duplicate while the job is active replaces it.
 */
export const SUCCESSOR_MODES = ['latest'] as const;
export type SuccessorMode = (typeof SUCCESSOR_MODES)[number];

/** Longest caller-provided key, in UTF-16 code units. */
export const MAX_CALLER_KEY_LENGTH = 1024;

/** A validated policy with every default of §2.1 filled in. */
export interface UniquePolicy {
  /** Dimensions named by the caller. `type` is always hashed whether listed or not (§2.2). (Default: `["type"]`.) */
  keys: UniqueDimension[];
  /** Top-level `args` keys hashed when `keys` has `"args"`; `null` hashes all of `args`. (Default: `null`.) */
  args_keys: string[] | null;
  /** Top-level `meta` keys hashed when `keys` has `"meta"`; required then (§2.2). (Default: `null`.) */
  meta_keys: string[] | null;
  /** ISO 8601 duration from the existing job's `created_at` (§7); `null` means no expiry. (Default: `null`.) */
  period: string | null;
  /** States in which an existing job counts as a duplicate (§6). (Default: {@link DEFAULT_UNIQUE_STATES}.) */
  states: OjsJobState[];
  /** What a duplicate does (§5). (Default: `"reject"`.) */
  on_conflict: ConflictStrategy;
  /**
   * Extension (§7.2): what the period is measured from. Present only when it is not
   * `created_at` (the spec's rule); needs a `period`.
   */
  x_period_anchor?: Exclude<PeriodAnchor, 'created_at'>;
  /**
   * Extension (Appendix A.1): the caller's own uniqueness key, hashed in place of the §3
   * dimensions (`type` included) with the §4 algorithm: the pre-image is `{"x_key": …}`, plus
   * `queue` when `keys` is `["queue"]`. Present only when given.
   */
  x_key?: string;
  /**
   * Extension (§5): a duplicate in one of these states is updated in place (it keeps its id; the
   * outcome is `updated`) instead of going through `on_conflict`. Present only when given.
   */
  x_update?: UpdateInPlace;
  /**
   * Extension (debounce with a maximum wait): an `x_update` of `scheduled_at` never moves the
   * duplicate's due time past its `created_at` plus this ISO 8601 duration (Inngest
   * `debounce.timeout`, Trigger.dev `maxDelay`). Needs `x_update` with `scheduled_at`. Present
   * only when given.
   */
  x_max_wait?: string;
  /**
   * Extension (run again after the active one): a duplicate whose existing job is `active` is
   * answered `deduplicated` (with that job) and leaves one pending successor for the key, which
   * becomes a job when the active one finishes (docs/design/successor.md). Needs `active` in
   * `states`. Present only when given.
   */
  x_successor?: SuccessorMode;
}

/**
 * What a caller may write: every field optional, as in the §13 schema. Arrays are `readonly` so
 * that a policy written `{ … } as const` and `states: UNIQUE_STATE_GROUPS.all` fit; an unknown
 * field or value fails to compile. JavaScript callers get the same checks at run time
 * (`InvalidJobInputError`).
 */
export interface UniquePolicyInput {
  /** Dimensions to hash; `type` is always hashed (§2.2). (Default: `["type"]`.) */
  keys?: readonly UniqueDimension[];
  /** Top-level `args` keys hashed when `keys` has `"args"`; `null` hashes all of `args`. (Default: `null`.) */
  args_keys?: readonly string[] | null;
  /** Top-level `meta` keys hashed when `keys` has `"meta"`; required then (§2.2). (Default: `null`.) */
  meta_keys?: readonly string[] | null;
  /** ISO 8601 duration, or whole seconds (Appendix A.3 extension); `null` means no expiry. (Default: `null`.) */
  period?: string | number | null;
  /** States in which an existing job counts as a duplicate (§6), e.g. `UNIQUE_STATE_GROUPS.all`. (Default: {@link DEFAULT_UNIQUE_STATES}.) */
  states?: readonly OjsJobState[];
  /** What a duplicate does (§5). (Default: `"reject"`.) */
  on_conflict?: ConflictStrategy;
  /**
   * Extension: the period's anchor, {@link PERIOD_ANCHORS}. Needs `period`. (Default:
   * `"created_at"`, the spec's rule.)
   */
  x_period_anchor?: PeriodAnchor;
  /**
   * Extension (Appendix A.1): a caller-provided uniqueness key (1 to 1024 characters), hashed
   * instead of the dimensions. `keys` may then only be `[]` or `["queue"]`. (Default: none.)
   */
  x_key?: string;
  /**
   * Extension: per state of the duplicate, the fields of the new job copied onto it in place,
   * e.g. `{ scheduled: ["args", "priority"] }`. Each state must be in `states`. (Default: none.)
   */
  x_update?: { readonly [S in UpdateState]?: readonly UpdateField[] };
  /**
   * Extension: the longest a debounce may hold a job back, from its first add: an `x_update` of
   * `scheduled_at` gives the duplicate min(new scheduled_at, created_at + x_max_wait). An ISO 8601
   * duration or whole seconds, like `period`; needs `x_update` with `scheduled_at`. (Default: none.)
   */
  x_max_wait?: string | number;
  /**
   * Extension: while the existing job is `active`, a duplicate is not dropped: it leaves one
   * pending successor carrying the latest duplicate, created as a job once the active one
   * finishes (BullMQ `keepLastIfActive`). Needs `active` in `states`. (Default: none.)
   */
  x_successor?: SuccessorMode;
  /**
   * Report-only rollout (src/report-only.ts): the add is decided and counted, its answer says
   * what the policy would have done (`wouldBe`), and the job is always inserted. (Default: false.)
   */
  x_report_only?: boolean;
}

const oneOf = (what: string, allowed: readonly string[]) => (issue: { input?: unknown }) => {
  const input = issue.input;
  const hint =
    typeof input === 'string' && allowed.includes(input.toLowerCase()) && !allowed.includes(input)
      ? ` (values are case-sensitive: did you mean "${input.toLowerCase()}"?)`
      : '';
  return `${JSON.stringify(input)} is not one of ${allowed.join(', ')}${hint}`;
};

/**
 * A key name of args or meta. Stored with the policy (PostgreSQL jsonb on Graphile Worker), so
 * it must be a string jsonb can hold: no U+0000, no lone surrogate.
 */
const keyName = z.string({ error: (i) => `expected a string, got ${describe(i.input)}` }).superRefine((key, ctx) => {
  if (key.includes('\u0000')) ctx.addIssue({ code: 'custom', message: 'contains U+0000, which PostgreSQL cannot store in jsonb' });
  else if (!key.isWellFormed()) ctx.addIssue({ code: 'custom', message: 'contains a lone UTF-16 surrogate, which is not valid Unicode' });
});

const stringArray = z.array(keyName, {
  error: (i) => `expected an array of strings, got ${describe(i.input)}`,
});

/** `uniqueItems` of §13, reported at the repeated item. One pass: `args_keys` may be long. */
function uniqueItems(list: readonly unknown[], ctx: z.RefinementCtx): void {
  const seen = new Set<unknown>();
  list.forEach((item, index) => {
    if (seen.has(item)) ctx.addIssue({ code: 'custom', path: [index], message: `${JSON.stringify(item)} appears more than once` });
    else seen.add(item);
  });
}

/** `x_key`: what a backend can hash and store beside the job (no U+0000, well-formed, bounded). */
const callerKey = z.string({ error: (i) => `expected a string, got ${describe(i.input)}` }).superRefine((key, ctx) => {
  if (key.length === 0) ctx.addIssue({ code: 'custom', message: 'must not be empty' });
  else if (key.length > MAX_CALLER_KEY_LENGTH)
    ctx.addIssue({ code: 'custom', message: `must be at most ${MAX_CALLER_KEY_LENGTH} characters` });
  else if (key.includes('\u0000')) ctx.addIssue({ code: 'custom', message: 'contains U+0000, which PostgreSQL cannot store' });
  else if (!key.isWellFormed()) ctx.addIssue({ code: 'custom', message: 'contains a lone UTF-16 surrogate, which is not valid Unicode' });
});

/** One state's field list in `x_update`. */
const updateFields = z
  .array(z.enum(UPDATE_FIELDS, { error: oneOf('field', UPDATE_FIELDS) }), {
    error: (i) => `expected an array of fields, got ${describe(i.input)}`,
  })
  .superRefine(uniqueItems)
  .superRefine((fields, ctx) => {
    if (fields.length === 0) ctx.addIssue({ code: 'custom', message: 'must name at least one field (omit the state instead)' });
  })
  .optional();

const periodField = z
  .union([z.string(), z.number()], {
    error: (i) => `expected an ISO 8601 duration string or whole seconds, got ${describe(i.input)}`,
  })
  .superRefine((period, ctx) => {
    if (typeof period === 'string') {
      const problem = periodProblem(period);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    } else if (!(Number.isSafeInteger(period) && period > 0)) {
      ctx.addIssue({ code: 'custom', message: `whole seconds must be a positive integer, got ${period}` });
    } else {
      const problem = periodProblem(`PT${period}S`);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }
  });

/**
 * The zod schema of a policy document, before defaults. Field rules sit on the fields so that
 * every problem is reported in one pass; only the cross-field rules of §2.2 sit on the object
 * (zod runs those once the fields are well-formed). Not exported: zod's types stay out of the
 * published declarations; `parseUniquePolicy` is its one door.
 */
const uniquePolicySchema = z
  .strictObject(
    {
      keys: z
        .array(z.enum(UNIQUE_DIMENSIONS, { error: oneOf('dimension', UNIQUE_DIMENSIONS) }), {
          error: (i) => `expected an array of dimensions, got ${describe(i.input)}`,
        })
        .superRefine(uniqueItems)
        .optional(),
      args_keys: stringArray.superRefine(uniqueItems).nullable().optional(),
      meta_keys: stringArray.superRefine(uniqueItems).nullable().optional(),
      period: periodField.nullable().optional(),
      states: z
        .array(z.enum(OJS_JOB_STATES, { error: oneOf('state', OJS_JOB_STATES) }), {
          error: (i) => `expected an array of states, got ${describe(i.input)}`,
        })
        .superRefine(uniqueItems)
        .optional(),
      on_conflict: z.enum(CONFLICT_STRATEGIES, { error: oneOf('strategy', CONFLICT_STRATEGIES) }).optional(),
      x_period_anchor: z.enum(PERIOD_ANCHORS, { error: oneOf('anchor', PERIOD_ANCHORS) }).optional(),
      x_key: callerKey.optional(),
      x_update: z
        .strictObject(
          {
            scheduled: updateFields,
            available: updateFields,
            pending: updateFields,
            active: updateFields,
            retryable: updateFields,
          } satisfies Record<UpdateState, typeof updateFields>,
          {
            error: (i) =>
              i.code === 'unrecognized_keys' ? undefined : `expected an object of states to field lists, got ${describe(i.input)}`,
          },
        )
        // Only once its states are well-formed: `{ done: [...] }` is an unknown state, not an empty rule.
        .refine((update) => Object.values(update).some((fields) => fields !== undefined), {
          message: 'must name at least one state (omit it instead)',
          when: (payload) => payload.issues.length === 0,
        })
        .optional(),
      x_max_wait: periodField.optional(),
      x_successor: z.enum(SUCCESSOR_MODES, { error: oneOf('successor mode', SUCCESSOR_MODES) }).optional(),
    },
    { error: (i) => (i.code === 'unrecognized_keys' ? undefined : `expected a policy object, got ${describe(i.input)}`) },
  )
  .superRefine((policy, ctx) => {
    const keys = policy.keys ?? [];
    if (keys.includes('meta') && (policy.meta_keys == null || policy.meta_keys.length === 0)) {
      ctx.addIssue({
        code: 'custom',
        path: ['meta_keys'],
        message: 'required and non-empty when keys includes "meta" (§2.2): hashing all of meta would make every job unique',
      });
    } else if (policy.meta_keys != null && policy.meta_keys.length === 0) {
      ctx.addIssue({ code: 'custom', path: ['meta_keys'], message: 'must not be empty (omit it instead)' });
    }
    if (policy.meta_keys != null && policy.meta_keys.length > 0 && !keys.includes('meta')) {
      ctx.addIssue({ code: 'custom', path: ['meta_keys'], message: 'is set but keys does not include "meta", so it would be ignored' });
    }
    if (policy.states !== undefined && policy.states.length === 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['states'],
        message: 'must not be empty: no state would ever count as a duplicate, silently disabling deduplication (omit it for the default)',
      });
    }
    if (policy.args_keys != null && !keys.includes('args')) {
      ctx.addIssue({ code: 'custom', path: ['args_keys'], message: 'is set but keys does not include "args", so it would be ignored' });
    }
    if (policy.x_period_anchor !== undefined && policy.period == null) {
      ctx.addIssue({ code: 'custom', path: ['x_period_anchor'], message: 'is set but period is not, so it would be ignored' });
    } else if (policy.x_period_anchor === 'finished_at' && !(policy.states ?? DEFAULT_UNIQUE_STATES).some(isTerminal)) {
      ctx.addIssue({
        code: 'custom',
        path: ['x_period_anchor'],
        message:
          '"finished_at" needs a terminal state (completed, discarded or cancelled) in states: a live job is a duplicate whatever the period, so it would be ignored',
      });
    }
    if (policy.x_max_wait !== undefined) {
      const updatesSchedule = Object.values(policy.x_update ?? {}).some((fields) => fields?.includes('scheduled_at'));
      if (!updatesSchedule) {
        ctx.addIssue({
          code: 'custom',
          path: ['x_max_wait'],
          message: 'is set but x_update updates no scheduled_at (the debounce it caps), so it would be ignored',
        });
      }
    }
    if (policy.x_successor !== undefined) {
      if (!(policy.states ?? DEFAULT_UNIQUE_STATES).includes('active')) {
        ctx.addIssue({
          code: 'custom',
          path: ['x_successor'],
          message: 'is set but states does not include "active", so no active job is ever a duplicate and it would be ignored',
        });
      } else if (policy.x_update?.active !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['x_successor'],
          message: 'and x_update.active both say what a duplicate of an active job does: keep one of them',
        });
      }
    }
    if (policy.x_key !== undefined) {
      (policy.keys ?? []).forEach((dimension, index) => {
        if (dimension !== 'queue') {
          ctx.addIssue({
            code: 'custom',
            path: ['keys', index],
            message: `${JSON.stringify(dimension)} cannot be hashed with x_key, which replaces the dimensions (only "queue" may scope it)`,
          });
        }
      });
    }
    if (policy.x_update !== undefined) {
      const states: readonly string[] = policy.states ?? DEFAULT_UNIQUE_STATES;
      const named = Object.keys(policy.x_update).filter((state) => policy.x_update![state as UpdateState] !== undefined);
      for (const state of named) {
        if (!states.includes(state)) {
          ctx.addIssue({
            code: 'custom',
            path: ['x_update', state],
            message: `${JSON.stringify(state)} is not in states, so no duplicate in it is ever found and this would be ignored`,
          });
        }
      }
    }
  });

/**
 * Validates a policy (§2.2) and fills in the defaults of §2.1. Given the job, also checks the
 * job-dependent rules: `args_keys` must exist in the job's args (§2.2) and `meta_keys` in its meta.
 *
 * @throws InvalidJobInputError (`code: "invalid_request"`), listing every problem with its
 *   field path (`unique.keys[1]: "argz" is not one of type, queue, args, meta`). A report-only
 *   mark (`x_report_only`, a boolean) is checked and left out of the result.
 */
export function parseUniquePolicy(input: unknown, job?: PolicyJob): UniquePolicy {
  // The report-only mark says how an entry point applies the policy, not what the policy is:
  // checked, and left out of the parsed policy (entry points read it first: prepareUnique).
  return parseUniquePolicyRemembered(splitReportOnly(input).unique, job).policy;
}

/**
 * `parseUniquePolicy`, and a token of the remembered parse it copied: an empty frozen object, one
 * per distinct policy while it is remembered (undefined when it is not), which a backend may key a
 * cache of what the policy alone determines by (the BullMQ adapter's script arguments). The parse
 * itself is never handed out. @internal
 */
export function parseUniquePolicyRemembered(input: unknown, job?: PolicyJob): { policy: UniquePolicy; token: object | undefined } {
  // A hit reads each property once, for the signature, and builds nothing else.
  const signature = policySignature(input);
  let remembered = signature === null ? undefined : parsedPolicies.get(signature);
  let token: object | undefined;
  if (remembered !== undefined) token = remembered.token;
  else {
    const { own, keys } = ownPolicy(input);
    remembered = { parsed: parseOwnPolicy(own), token: Object.freeze({}) };
    // Remembered only when the snapshot parsed, in the keys it was copied from, signs as the
    // caller's object did: an object whose keys or values change between reads is parsed every time.
    if (signature !== null && keys !== null && policySignature(own, keys) === signature) {
      if (parsedPolicies.size >= PARSED_POLICIES_MAX) parsedPolicies.clear();
      parsedPolicies.set(signature, remembered);
      token = remembered.token;
    }
  }
  // A copy (arrays too): the caller owns what it gets, and the memo stays as parsed.
  const policy = { ...remembered.parsed };
  for (const field of Object.keys(policy) as (keyof UniquePolicy)[]) {
    const value = policy[field];
    if (Array.isArray(value)) (policy as Record<string, unknown>)[field] = value.slice();
  }
  if (job) {
    const issues = jobIssues(policy, job);
    if (issues.length > 0) throw new InvalidJobInputError(issues);
  }
  return { policy, token };
}

/**
 * Policies parsed lately, by the signature of their own properties: a program adds with a handful
 * of policies, each written as a fresh object per add, and the schema's parse is the costliest
 * step of checking one. The parse is a function of the snapshot `ownPolicy` takes, and a policy
 * is remembered under the signature of that snapshot, so a hit (each property read once, for its
 * signature) answers what the parse would. Only valid policies
 * whose values are primitives or arrays of primitives are kept; bounded, emptied when full.
 */
const parsedPolicies = new Map<string, { parsed: UniquePolicy; token: object }>();
const PARSED_POLICIES_MAX = 256;

/**
 * An injective text of an object's own enumerable properties (or of `keys`, in that order: the
 * keys `ownPolicy` copied, so that a snapshot signs as the caller's object did), when they are
 * primitives or arrays of primitives (a hole reads as `undefined`, as in `ownPolicy`); null for
 * anything else.
 */
function policySignature(own: unknown, keys?: readonly string[]): string | null {
  if (typeof own !== 'object' || own === null || Array.isArray(own)) return null;
  let signature = '';
  for (const key of keys ?? Object.keys(own)) {
    const value = (own as Record<string, unknown>)[key];
    signature += key.length + ':' + key + '=';
    if (Array.isArray(value)) {
      signature += '[' + value.length;
      for (let i = 0; i < value.length; i++) {
        const text = primitiveSignature(value[i]);
        if (text === null) return null;
        signature += text;
      }
    } else {
      const text = primitiveSignature(value);
      if (text === null) return null;
      signature += text;
    }
  }
  return signature;
}

function primitiveSignature(value: unknown): string | null {
  switch (typeof value) {
    case 'string':
      return `s${value.length}:${value}`;
    case 'number':
      return Object.is(value, -0) ? 'n-0;' : `n${value};`;
    case 'boolean':
      return value ? 't' : 'f';
    case 'undefined':
      return 'u';
    default:
      return value === null ? 'z' : null;
  }
}

function parseOwnPolicy(own: unknown): UniquePolicy {
  const result = uniquePolicySchema.safeParse(own);
  if (!result.success) {
    throw new InvalidJobInputError(result.error.issues.flatMap(toIssues));
  }
  const raw = result.data;
  const policy: UniquePolicy = {
    // With a caller key the dimensions are not hashed (x_key), so none is implied.
    keys: raw.keys ?? (raw.x_key !== undefined ? [] : ['type']),
    args_keys: raw.args_keys ?? null,
    meta_keys: raw.meta_keys ?? null,
    period: raw.period == null ? null : typeof raw.period === 'number' ? `PT${raw.period}S` : raw.period,
    states: raw.states ?? [...DEFAULT_UNIQUE_STATES],
    on_conflict: raw.on_conflict ?? 'reject',
  };
  // Extensions are own properties only when used, so a spec-only policy is exactly the six
  // fields of §2.1 (and backends without them store and compare it unchanged).
  if (raw.x_period_anchor !== undefined && raw.x_period_anchor !== 'created_at') policy.x_period_anchor = raw.x_period_anchor;
  if (raw.x_key !== undefined) policy.x_key = raw.x_key;
  if (raw.x_update !== undefined) {
    const update: UpdateInPlace = {};
    for (const state of UPDATE_STATES) {
      const fields = raw.x_update[state];
      // Canonical field order, so that two spellings of one rule store alike.
      if (fields !== undefined) update[state] = UPDATE_FIELDS.filter((field) => fields.includes(field));
    }
    policy.x_update = update;
  }
  if (raw.x_max_wait !== undefined) policy.x_max_wait = typeof raw.x_max_wait === 'number' ? `PT${raw.x_max_wait}S` : raw.x_max_wait;
  if (raw.x_successor !== undefined) policy.x_successor = raw.x_successor;
  return policy;
}

const POLICY_FIELDS = ['keys', 'args_keys', 'meta_keys', 'period', 'states', 'on_conflict', ...UNIQUE_EXTENSIONS] as const;

/** The extensions `policy` uses, in {@link UNIQUE_EXTENSIONS} order. */
export function policyExtensions(policy: UniquePolicy): UniqueExtension[] {
  return UNIQUE_EXTENSIONS.filter((extension) => policy[extension] !== undefined);
}

/**
 * The policy's own enumerable properties in a null-prototype object, arrays copied dense, so
 * that zod (which reads `input.on_conflict`, and `array[i]` through holes) sees nothing
 * inherited: with `Object.prototype.on_conflict = 'replace'`, `{}` is still the default policy.
 * A hole becomes `undefined` and is refused at its index.
 */
function ownPolicy(input: unknown): { own: unknown; keys: string[] | null } {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return { own: input, keys: null };
  const own = Object.create(null) as Record<string, unknown>;
  // Every field present, if only as `undefined`: zod's output object (an ordinary one) then has
  // each as its own property, so reading an absent field never reaches Object.prototype.
  for (const field of POLICY_FIELDS) own[field] = undefined;
  const keys = Object.keys(input);
  for (const key of keys) {
    const value = (input as Record<string, unknown>)[key];
    own[key] = Array.isArray(value) ? denseCopy(value) : value;
  }
  return { own, keys };
}

function denseCopy(array: unknown[]): unknown[] {
  const copy = new Array<unknown>(array.length);
  for (let i = 0; i < array.length; i++) copy[i] = Object.hasOwn(array, i) ? array[i] : undefined;
  return copy;
}

/**
 * The policy without its defaults: only the fields whose value differs from §2.1's default, in
 * the policy's field order, so that `parseUniquePolicy(compactUniquePolicy(p))` is `p` again.
 * For storing a policy beside every job: the default policy's compact form is `{}`, and on
 * BullMQ a short value keeps the job hash in Redis' compact listpack encoding (values up to
 * `hash-max-listpack-value` bytes) instead of a hashtable.
 */
export function compactUniquePolicy(policy: UniquePolicy): UniquePolicyInput {
  const compact: UniquePolicyInput = {};
  const defaultKeys = policy.x_key !== undefined ? policy.keys.length === 0 : policy.keys.length === 1 && policy.keys[0] === 'type';
  if (!defaultKeys) compact.keys = policy.keys;
  if (policy.args_keys !== null) compact.args_keys = policy.args_keys;
  if (policy.meta_keys !== null) compact.meta_keys = policy.meta_keys;
  if (policy.period !== null) compact.period = policy.period;
  if (!(policy.states.length === DEFAULT_UNIQUE_STATES.length && policy.states.every((state, i) => state === DEFAULT_UNIQUE_STATES[i]))) {
    compact.states = policy.states;
  }
  if (policy.on_conflict !== 'reject') compact.on_conflict = policy.on_conflict;
  if (policy.x_period_anchor !== undefined) compact.x_period_anchor = policy.x_period_anchor;
  if (policy.x_key !== undefined) compact.x_key = policy.x_key;
  if (policy.x_update !== undefined) compact.x_update = policy.x_update;
  if (policy.x_max_wait !== undefined) compact.x_max_wait = policy.x_max_wait;
  if (policy.x_successor !== undefined) compact.x_successor = policy.x_successor;
  return compact;
}

/** The job-dependent rules of §2.2, as issues (empty when the job fits the policy). */
export function jobIssues(policy: UniquePolicy, job: PolicyJob): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  if (policy.keys.includes('args') && policy.args_keys) {
    const selectable = selectableArgs(job.args);
    if (!selectable.ok) {
      issues.push({ path: 'unique.args_keys', message: selectable.problem });
    } else {
      policy.args_keys.forEach((key, index) => {
        if (!Object.hasOwn(selectable.object, key)) {
          issues.push({
            path: `unique.args_keys[${index}]`,
            message: `${JSON.stringify(key)} is not a key of ${selectable.path} (§2.2: a missing key would make every job without it collide)`,
          });
        }
      });
    }
  }
  if (policy.keys.includes('meta') && policy.meta_keys) {
    const meta = job.meta ?? {};
    policy.meta_keys.forEach((key, index) => {
      if (typeof meta !== 'object' || meta === null || !Object.hasOwn(meta, key)) {
        issues.push({
          path: `unique.meta_keys[${index}]`,
          message: `${JSON.stringify(key)} is not a key of meta (a missing key would make every job without it collide)`,
        });
      }
    });
  }
  return issues;
}

function toIssues(issue: z.core.$ZodIssue): ValidationIssue[] {
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((key) => ({
      path: formatPath([...issue.path, key]),
      message:
        issue.path.length === 0
          ? `unknown field (allowed: ${POLICY_FIELDS.join(', ')})`
          : issue.path[0] === 'x_update'
            ? `not a state x_update can update in (allowed: ${UPDATE_STATES.join(', ')})`
            : 'unknown field',
    }));
  }
  return [{ path: formatPath(issue.path), message: issue.message }];
}

/** `["keys", 1]` -> `unique.keys[1]`. */
export function formatPath(path: readonly PropertyKey[], root = 'unique'): string {
  let out = root;
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (typeof segment === 'string' && /^[A-Za-z_$][\w$]*$/.test(segment)) out += `.${segment}`;
    else out += `[${JSON.stringify(String(segment))}]`;
  }
  return out;
}

function isTerminal(state: OjsJobState): boolean {
  return TERMINAL_STATES.includes(state);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value);
  return typeof value;
}
