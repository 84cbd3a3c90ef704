/**
 * Oban's unique options (Elixir, open source) as an OJS policy. Elixir atoms are strings here
 * (`:scheduled_at` is `'scheduled_at'`), `{2, :minutes}` is `[2, 'minutes']`, `:infinity` is
 * `'infinity'`. docs/expressiveness.md lists each option with what it becomes.
 */
import type { OjsJobState } from '../job-state.js';
import { UNIQUE_STATE_GROUPS, UPDATE_FIELDS, type UniquePolicyInput, type UpdateField, type UpdateState } from '../unique-policy.js';
import { OptionReader, describe } from './option-reader.js';
import { secondsToPeriod } from './seconds-to-period.js';

export type ObanField = 'worker' | 'queue' | 'args' | 'meta';
export type ObanState = 'scheduled' | 'available' | 'executing' | 'retryable' | 'completed' | 'discarded' | 'cancelled' | 'suspended';
export type ObanTimeUnit = 'second' | 'seconds' | 'minute' | 'minutes' | 'hour' | 'hours' | 'day' | 'days' | 'week' | 'weeks';
export type ObanReplaceField = 'args' | 'max_attempts' | 'meta' | 'priority' | 'queue' | 'scheduled_at' | 'tags' | 'worker';

export interface ObanUniqueOptions {
  /** Seconds, `[n, unit]`, or `'infinity'` (as long as jobs are retained). (Default: 60.) */
  period?: number | readonly [number, ObanTimeUnit] | 'infinity';
  /** (Default: `['worker', 'queue', 'args']`.) */
  fields?: readonly ObanField[];
  /** A subset of the keys of `args` and/or `meta` (whichever `fields` names). (Default: all of them.) */
  keys?: readonly string[];
  /** (Default: every state but `discarded` and `cancelled`.) */
  states?: readonly ObanState[];
  /** What the period is measured from. (Default: `'inserted_at'`.) */
  timestamp?: 'inserted_at' | 'scheduled_at';
  /** Oban's job option `replace`: per state of the conflicting job, the fields to overwrite. (Default: none.) */
  replace?: { readonly [S in ObanState]?: readonly ObanReplaceField[] };
}

const FIELDS: readonly ObanField[] = ['worker', 'queue', 'args', 'meta'];
const STATES: readonly ObanState[] = [
  'scheduled',
  'available',
  'executing',
  'retryable',
  'completed',
  'discarded',
  'cancelled',
  'suspended',
];
const REPLACE_FIELDS: readonly ObanReplaceField[] = ['args', 'max_attempts', 'meta', 'priority', 'queue', 'scheduled_at', 'tags', 'worker'];
const UNIT_SECONDS: Record<ObanTimeUnit, number> = {
  second: 1,
  seconds: 1,
  minute: 60,
  minutes: 60,
  hour: 3600,
  hours: 3600,
  day: 86_400,
  days: 86_400,
  week: 604_800,
  weeks: 604_800,
};

/**
 * `use Oban.Worker, unique: …` (and the job's `replace:`) as an OJS policy. `true` is Oban's
 * `unique: true`: every default. A conflict returns the existing job (`on_conflict: "ignore"`:
 * `outcome === "deduplicated"` is Oban's `conflict?: true`), or with `replace` for its state the
 * job updated in place (`outcome === "updated"`).
 *
 * @throws UntranslatableOptionError naming the option, e.g. `fields` without `worker`,
 *   `states[0]` `suspended`, `replace.scheduled[0]` `queue`.
 */
export function fromOban(options: ObanUniqueOptions | true): UniquePolicyInput {
  return translateOban('oban', options === true ? {} : options);
}

/** Shared with {@link fromObanPro}: Oban's `fields` and `keys`. */
export function obanDimensions(reader: OptionReader): Pick<UniquePolicyInput, 'keys' | 'args_keys' | 'meta_keys'> {
  const fields = reader.strings('fields', FIELDS) ?? ['worker', 'queue', 'args'];
  if (!fields.includes('worker')) {
    reader.fail('fields', 'must include worker: an OJS key always hashes the job type (spec §2.2, Appendix A.4)');
  }
  const keys = reader.strings('keys');
  const dimensions: Pick<UniquePolicyInput, 'keys' | 'args_keys' | 'meta_keys'> = {
    keys: (['type', 'queue', 'args', 'meta'] as const).filter((dimension) => fields.includes(dimension === 'type' ? 'worker' : dimension)),
  };
  if (fields.includes('meta') && (keys === undefined || keys.length === 0)) {
    reader.fail('fields', 'meta without keys: OJS hashes meta only by named keys (spec §2.2), so add keys');
  }
  // Oban applies `keys` to args and meta alike; without either in fields it ignores them.
  if (keys !== undefined && keys.length > 0) {
    if (fields.includes('args')) dimensions.args_keys = keys;
    if (fields.includes('meta')) dimensions.meta_keys = keys;
  }
  return dimensions;
}

function translateOban(system: string, options: ObanUniqueOptions): UniquePolicyInput {
  const reader: OptionReader = new OptionReader(system, options, ['period', 'fields', 'keys', 'states', 'timestamp', 'replace']);
  const policy: UniquePolicyInput = { ...obanDimensions(reader) };
  const period = obanPeriod(reader);
  if (period !== null) policy.period = period;
  // Oban's default, every state but discarded and cancelled, is OJS's `successful` group (which
  // also has `pending`, a state Oban does not have).
  const given = reader.strings('states', STATES);
  const states: readonly OjsJobState[] = given
    ? given.map((state, index) => ojsState(reader, state, `states[${index}]`))
    : UNIQUE_STATE_GROUPS.successful;
  if (states.length === 0) reader.fail('states', 'must not be empty: no job would ever conflict');
  policy.states = states;
  policy.on_conflict = 'ignore';
  if (reader.oneOf('timestamp', ['inserted_at', 'scheduled_at'] as const) === 'scheduled_at' && period !== null) {
    policy.x_period_anchor = 'scheduled_at';
  }
  const update = obanReplace(reader, states);
  if (update) policy.x_update = update;
  return policy;
}

function obanPeriod(reader: OptionReader): string | null {
  const value = reader.get('period');
  if (value === undefined) return 'PT60S';
  if (value === 'infinity') return null;
  let seconds: number;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) reader.fail('period', `expected whole seconds, got ${value}`);
    seconds = value;
  } else if (Array.isArray(value) && value.length === 2 && typeof value[0] === 'number' && Object.hasOwn(UNIT_SECONDS, value[1])) {
    if (!Number.isSafeInteger(value[0])) reader.fail('period', `expected a whole number of ${value[1]}, got ${value[0]}`);
    seconds = value[0] * UNIT_SECONDS[value[1] as ObanTimeUnit];
  } else {
    return reader.fail('period', `expected seconds, [n, unit] or "infinity", got ${describe(value)}`);
  }
  const period = secondsToPeriod(seconds);
  if (period === null) reader.fail('period', `must be positive, got ${seconds} seconds`);
  return period;
}

function ojsState(reader: OptionReader, state: ObanState, option: string): OjsJobState {
  if (state === 'executing') return 'active';
  if (state === 'suspended') {
    return reader.fail(option, 'suspended (Oban Pro) has no OJS state: a suspended job is neither queued nor terminal');
  }
  return state;
}

/**
 * `replace: [state: fields]` as `x_update`. A state the unique `states` do not check never has a
 * conflict, in Oban as here, so it is dropped; a checked terminal state cannot be updated in
 * place here (the extension updates waiting and running jobs only).
 */
function obanReplace(reader: OptionReader, checked: readonly OjsJobState[]): UniquePolicyInput['x_update'] {
  if (reader.get('replace') === undefined) return undefined;
  const replace: OptionReader = reader.nested('replace', STATES);
  const update: { [S in UpdateState]?: UpdateField[] } = {};
  for (const obanState of STATES) {
    const fields = replace.strings(obanState, REPLACE_FIELDS);
    if (fields === undefined) continue;
    const state = ojsState(replace, obanState, obanState);
    if (!checked.includes(state)) continue;
    if (state === 'completed' || state === 'discarded' || state === 'cancelled') {
      replace.fail(obanState, `a ${state} job cannot be updated in place (x_update covers jobs that have not finished)`);
    }
    fields.forEach((field, index) => {
      if (!(UPDATE_FIELDS as readonly string[]).includes(field)) {
        replace.fail(
          `${obanState}[${index}]`,
          `${field} cannot be replaced in place: it is part of what makes the job itself (its type, queue or tags)`,
        );
      }
    });
    if (fields.length > 0) update[state as UpdateState] = fields as UpdateField[];
  }
  return Object.keys(update).length > 0 ? update : undefined;
}
