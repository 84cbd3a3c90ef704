/**
 * Faktory Pro's unique-job custom attributes as an OJS policy.
 */
import { UNIQUE_STATE_GROUPS, type UniquePolicyInput } from '../unique-policy.js';
import { OptionReader, describe } from './option-reader.js';
import { secondsToPeriod } from './seconds-to-period.js';

/** The job's `custom` attributes Faktory reads for uniqueness (any others are ignored). */
export interface FaktoryUniqueCustom {
  /** Float seconds; `null` or absent bypasses uniqueness. */
  unique_for?: number | null;
  /** (Default: `'success'`.) */
  unique_until?: 'success' | 'start';
  readonly [custom: string]: unknown;
}

/**
 * A Faktory job's `custom` as an OJS policy, or `null` when `unique_for` is absent or `nil`
 * (enqueue a plain job). Unique by type, queue and args; the window starts at the job's
 * scheduled time (`x_period_anchor: "scheduled_at"`: `perform_in(1.hour)` with `unique_for: 600`
 * holds for 70 minutes); a duplicate push is an error (`on_conflict: "reject"`).
 *
 * @throws UntranslatableOptionError naming the option.
 */
export function fromFaktory(custom: FaktoryUniqueCustom): UniquePolicyInput | null {
  const reader: OptionReader = new OptionReader('faktory', custom, Object.keys(custom ?? {}));
  const until = reader.oneOf('unique_until', ['success', 'start'] as const) ?? 'success';
  const uniqueFor = reader.get('unique_for');
  if (uniqueFor === undefined || uniqueFor === null) return null;
  if (typeof uniqueFor !== 'number') reader.fail('unique_for', `expected seconds, got ${describe(uniqueFor)}`);
  const period = secondsToPeriod(uniqueFor);
  if (period === null) reader.fail('unique_for', `must be a positive number of seconds (at least 0.001), got ${uniqueFor}`);
  return {
    keys: ['type', 'queue', 'args'],
    period,
    x_period_anchor: 'scheduled_at',
    states: until === 'success' ? UNIQUE_STATE_GROUPS.untilSuccess : UNIQUE_STATE_GROUPS.queued,
    on_conflict: 'reject',
  };
}
