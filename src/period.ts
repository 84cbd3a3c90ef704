/**
 * ISO 8601 durations for `period` (spec §7).
 *
 * The grammar is exactly the pattern of the spec's §13 JSON Schema (years, months, weeks, days,
 * hours, minutes, seconds with an optional fraction), minus the two strings that pattern lets
 * through but ISO 8601 does not: `P` and `PT` with no component at all.
 *
 * `created_at + period` is computed on the UTC calendar by Luxon: `P1M` from 31 January lands on
 * the last day of February, `P1Y` from 29 February 2024 on 28 February 2025, and `P1D` is always
 * 24 hours because UTC has no daylight-saving shifts. Hand-rolled month arithmetic was rejected:
 * it is the classic source of off-by-one-day bugs, and the spec's calendar periods (`P1M`, `P1Y`)
 * need it to be right.
 */
import { DateTime } from 'luxon';
import { TIME_RANGE_MS } from './input-limits.js';

export const PERIOD_PATTERN = /^P(?:\d+Y)?(?:\d+M)?(?:\d+W)?(?:\d+D)?(?:T(?:\d+H)?(?:\d+M)?(?:\d+(?:\.\d+)?S)?)?$/;

const COMPONENTS =
  /^P(?:(?<years>\d+)Y)?(?:(?<months>\d+)M)?(?:(?<weeks>\d+)W)?(?:(?<days>\d+)D)?(?:T(?:(?<hours>\d+)H)?(?:(?<minutes>\d+)M)?(?:(?<seconds>\d+(?:\.\d+)?)S)?)?$/;

/** A parsed period. Calendar parts (years, months) are kept apart from fixed ones. */
export interface Period {
  /** The ISO 8601 text, as given (or as normalised from integer seconds). */
  iso: string;
  years: number;
  months: number;
  weeks: number;
  days: number;
  hours: number;
  minutes: number;
  /** Whole and fractional seconds. Resolved to milliseconds when added (fractions below 1 ms round to the nearest ms). */
  seconds: number;
  /** True when the period has a year or month part, i.e. its length depends on the start date. */
  calendar: boolean;
  /**
   * The exact length in ms when the period has no calendar part, otherwise null. Adapters that
   * evaluate §7.4 inside the datastore use this to compare `created_at > now - fixedMs` without
   * calendar arithmetic.
   */
  fixedMs: number | null;
  /**
   * The length in ms of the non-calendar part (weeks, days, hours, minutes, seconds), whether or
   * not the period also has years or months. `created_at + period` is `created_at` moved by
   * `years` and `months` on the UTC calendar, plus this.
   */
  fixedPartMs: number;
}

/** Why a period string was refused; `null` when it is valid. */
export function periodProblem(value: string): string | null {
  const match = COMPONENTS.exec(value);
  if (!match || !PERIOD_PATTERN.test(value)) {
    return `"${value}" is not an ISO 8601 duration of the form PnYnMnWnDTnHnMnS (e.g. "PT1H", "P1D", "PT0.5S")`;
  }
  const groups = match.groups ?? {};
  if (Object.values(groups).every((part) => part === undefined)) {
    return `"${value}" has no duration component (ISO 8601 needs at least one, e.g. "PT1H")`;
  }
  if (value.endsWith('T')) return `"${value}" has a time designator T with no time component after it`;
  const period = toPeriod(value, groups);
  if (period.years === 0 && period.months === 0 && totalFixedMs(period) === 0) {
    return `"${value}" is zero: a zero period would expire every job at once and silently disable deduplication (omit period for no expiry)`;
  }
  // Measured from the epoch here; from the job's own created_at again at enqueue
  // (periodEndProblem), so that no stored job's window ends where a backend cannot compute it.
  if (!(addPeriodUnchecked(0, period) <= TIME_RANGE_MS.max)) {
    return `"${value}" is too long to add to a date: created_at + period must end by ${new Date(TIME_RANGE_MS.max).toISOString()}`;
  }
  return null;
}

/**
 * Why `startMs + period` is refused: it ends after the last time every backend stores
 * (`TIME_RANGE_MS.max`); null when it fits. For the enqueue check of a valid period.
 */
export function periodEndProblem(startMs: number, period: Period | string): string | null {
  const parsed = typeof period === 'string' ? parsePeriod(period) : period;
  if (addPeriodUnchecked(startMs, parsed) <= TIME_RANGE_MS.max) return null;
  return `"${parsed.iso}" is too long: created_at + period must end by ${new Date(TIME_RANGE_MS.max).toISOString()}`;
}

/**
 * `startMs + period`, or +Infinity when that is not a representable time: a window that ends
 * beyond every date never closes. For reading stored jobs, which must never fail on a period.
 */
export function periodEndOrInfinity(startMs: number, period: Period): number {
  const end = addPeriodUnchecked(startMs, period);
  return Number.isFinite(end) ? end : Number.POSITIVE_INFINITY;
}

/** Parses a period the policy has already validated. Throws a plain Error on invalid input. */
export function parsePeriod(value: string): Period {
  const problem = periodProblem(value);
  if (problem) throw new Error(problem);
  return toPeriod(value, COMPONENTS.exec(value)!.groups ?? {});
}

function toPeriod(iso: string, groups: Record<string, string | undefined>): Period {
  const num = (name: string) => (groups[name] === undefined ? 0 : Number(groups[name]));
  const period = {
    iso,
    years: num('years'),
    months: num('months'),
    weeks: num('weeks'),
    days: num('days'),
    hours: num('hours'),
    minutes: num('minutes'),
    seconds: num('seconds'),
    calendar: false,
    fixedMs: null as number | null,
    fixedPartMs: 0,
  };
  period.calendar = period.years > 0 || period.months > 0;
  period.fixedPartMs = totalFixedMs(period);
  period.fixedMs = period.calendar ? null : period.fixedPartMs;
  return period;
}

function totalFixedMs(p: Pick<Period, 'weeks' | 'days' | 'hours' | 'minutes' | 'seconds'>): number {
  return (((p.weeks * 7 + p.days) * 24 + p.hours) * 60 + p.minutes) * 60 * 1000 + Math.round(p.seconds * 1000);
}

/**
 * The longest `period` can be from any start, in ms (a month counts 31 days, a year 366): how
 * long a store must keep what a period is measured from, whatever the calendar does.
 */
export function periodUpperBoundMs(period: Period): number {
  return (period.years * 366 + period.months * 31) * 86_400_000 + period.fixedPartMs;
}

/**
 * `start + period` in epoch milliseconds, on the UTC calendar. This is the moment the §7
 * uniqueness window of a job created at `start` closes: the job stops counting as a duplicate
 * at exactly this instant (§7.4: a duplicate iff `now < created_at + period`).
 */
export function addPeriod(startMs: number, period: Period | string): number {
  const parsed = typeof period === 'string' ? parsePeriod(period) : period;
  const end = addPeriodUnchecked(startMs, parsed);
  if (!Number.isFinite(end)) throw new RangeError(`${parsed.iso} added to ${new Date(startMs).toISOString()} is out of range`);
  return end;
}

function addPeriodUnchecked(startMs: number, p: Period): number {
  if (!p.calendar) {
    const end = startMs + p.fixedPartMs;
    return Math.abs(end) <= 8.64e15 ? end : Number.NaN;
  }
  // Calendar part first, then the fixed part: the order ISO 8601 and Temporal use, so that
  // P1M1D from 31 January is 28/29 February + 1 day, not 1 March + 1 month.
  const shifted = DateTime.fromMillis(startMs, { zone: 'utc' }).plus({ years: p.years, months: p.months });
  if (!shifted.isValid) return Number.NaN;
  const end = shifted.toMillis() + p.fixedPartMs;
  return Math.abs(end) <= 8.64e15 ? end : Number.NaN;
}
