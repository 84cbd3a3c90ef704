/**
 * A policy's period split the way the scripts take it: the calendar part (years, months), added
 * on the UTC calendar in Lua (includes/ojs-period-end.lua), and the fixed part in ms, taken from
 * the core's own `parsePeriod` so the two sides cannot disagree on what "PT1.5S" or "P1W" is.
 */
import { parsePeriod, periodUpperBoundMs } from '../../src/period.js';
import type { UniquePolicy } from '../../src/unique-policy.js';

export interface PeriodArgs {
  years: number;
  months: number;
  fixedMs: number;
  /** The longest the period can be (periodUpperBoundMs). */
  upperBoundMs: number;
}

/** null when the policy has no period. */
export function periodArgs(policy: UniquePolicy): PeriodArgs | null {
  if (policy.period === null) return null;
  const period = parsePeriod(policy.period);
  const fixedMs = period.fixedPartMs;
  return {
    years: period.years,
    months: period.months,
    fixedMs,
    upperBoundMs: periodUpperBoundMs(period),
  };
}
