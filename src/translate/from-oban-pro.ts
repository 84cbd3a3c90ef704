/**
 * Oban Pro's unique options (the Python client's vocabulary) as an OJS policy. A `timedelta`
 * period is given as its `total_seconds()`.
 */
import { UNIQUE_STATE_GROUPS, type UniquePolicyInput } from '../unique-policy.js';
import { obanDimensions, type ObanField } from './from-oban.js';
import { OptionReader, describe } from './option-reader.js';
import { secondsToPeriod } from './seconds-to-period.js';

export interface ObanProUniqueOptions {
  /** Seconds from the job's scheduled time; `null` (Python `None`): as long as jobs are retained. (Default: `null`.) */
  period?: number | null;
  /** (Default: `['worker', 'queue', 'args']`.) */
  fields?: readonly ObanField[];
  /** A subset of the keys of `args` and/or `meta`. (Default: all of them.) */
  keys?: readonly string[];
  /** The states checked for duplicates. (Default: `'all'`.) */
  group?: 'all' | 'incomplete' | 'scheduled' | 'successful';
}

/**
 * Oban Pro's `unique=` as an OJS policy: the period is measured from the job's scheduled time
 * (`x_period_anchor: "scheduled_at"`), and a conflict returns the existing job
 * (`outcome === "deduplicated"` is Pro's `extra["conflicted"]`). `true` is `unique=True`.
 *
 * @throws UntranslatableOptionError naming the option.
 */
export function fromObanPro(options: ObanProUniqueOptions | true): UniquePolicyInput {
  const reader: OptionReader = new OptionReader('oban-pro', options === true ? {} : options, ['period', 'fields', 'keys', 'group']);
  const policy: UniquePolicyInput = { ...obanDimensions(reader) };
  const period = reader.get('period');
  if (period !== undefined && period !== null) {
    if (typeof period !== 'number') reader.fail('period', `expected seconds, got ${describe(period)}`);
    const iso = secondsToPeriod(period);
    if (iso === null) reader.fail('period', `must be positive, got ${period} seconds`);
    policy.period = iso;
    policy.x_period_anchor = 'scheduled_at';
  }
  policy.states = UNIQUE_STATE_GROUPS[reader.oneOf('group', ['all', 'incomplete', 'scheduled', 'successful'] as const) ?? 'all'];
  policy.on_conflict = 'ignore';
  return policy;
}
