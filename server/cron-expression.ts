/**
 * Cron expressions as the OJS cron spec reads them (ojs-cron §3–§5), on `cron-parser` (the parser
 * BullMQ's job schedulers use, so every backend reads an expression alike):
 *
 * - 5 fields (minute first), or 6 with seconds first, told apart by counting fields (§3.2); `*`,
 *   `,`, `-`, `/` in every field, month and weekday names, 0 or 7 for Sunday, `L` and `#`
 *   (cron-parser has no `W`: refused).
 * - The special expressions of §4 (`@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`,
 *   `@midnight`, `@hourly`) are rewritten to their 5-field equivalents here, so a host's scheduler
 *   is given a plain expression. `@every <duration>` (a SHOULD) is not supported.
 * - Time zones: IANA names only (§5.1): `UTC`, or an `Area/Location` name the runtime knows; a
 *   fixed offset (`+05:00`) or an abbreviation (`EST`) is refused.
 * - DST (§5.2): an occurrence whose wall time does not exist (spring forward) does not fire, and a
 *   wall time that occurs twice (fall back) fires once, the first time: {@link occursAt} is false
 *   for both, and {@link nextOccurrence} skips them.
 */
import type { CronExpression, CronExpressionParser } from 'cron-parser';
import { DateTime } from 'luxon';
import type { ValidationIssue } from '../src/errors.js';
import { GatewayDependencyError, importGatewayDependency } from './gateway-dependency.js';

/** ojs-cron §4. */
const SPECIAL: Readonly<Record<string, string>> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};
/** A zone name with an area (`Asia/Tokyo`, `America/Argentina/Buenos_Aires`, `Etc/UTC`). */
const AREA_LOCATION = /^[A-Za-z]+(?:\/[A-Za-z0-9_+-]+)+$/;
/** Occurrences looked at for one that exists (a DST gap skips one a year; a 31st, a few months). */
const MAX_SKIPPED = 64;
export const DEFAULT_TIMEZONE = 'UTC';
const NEEDED_BY = "the gateway's cron routes (/ojs/v1/cron)";

/**
 * cron-parser is an optional peer, as the gateway's other packages (docs/decisions.md): loaded by
 * the server at start ({@link loadCronParser}); without it the cron routes answer 422 naming it.
 */
let parser: typeof CronExpressionParser | null = null;

/** @throws GatewayDependencyError when cron-parser is not installed. */
export async function loadCronParser(): Promise<void> {
  parser ??= (await importGatewayDependency(() => import('cron-parser'), ['cron-parser'], NEEDED_BY)).CronExpressionParser;
}

function cronParser(): typeof CronExpressionParser {
  if (!parser) throw new GatewayDependencyError(['cron-parser'], NEEDED_BY);
  return parser;
}

/** The expression a scheduler is given: a special expression's 5-field form, otherwise as written (trimmed). */
export function plainExpression(expression: string): string {
  const trimmed = expression.trim();
  return SPECIAL[trimmed.toLowerCase()] ?? trimmed;
}

function parse(expression: string, timezone: string, from: number): CronExpression {
  return cronParser().parse(plainExpression(expression), { currentDate: new Date(from), tz: timezone, strict: false });
}

/** Pushes an issue naming `path` when `expression` is not a cron expression this gateway fires. */
export function checkExpression(expression: unknown, path: string, issues: ValidationIssue[]): expression is string {
  if (typeof expression !== 'string' || expression.trim() === '') {
    issues.push({ path, message: expression === undefined ? 'is required' : 'must be a non-empty cron expression' });
    return false;
  }
  const plain = plainExpression(expression);
  if (plain.startsWith('@')) {
    issues.push({
      path,
      message: `${plain.split(/\s/)[0]} is not supported: use 5 or 6 fields, or @yearly, @monthly, @weekly, @daily, @hourly`,
    });
    return false;
  }
  const fields = plain.split(/\s+/).length;
  if (fields !== 5 && fields !== 6) {
    issues.push({ path, message: `has ${fields} fields: a cron expression has 5 (minute hour day month weekday) or 6 (seconds first)` });
    return false;
  }
  try {
    parse(plain, DEFAULT_TIMEZONE, Date.now()).next();
    return true;
  } catch (error) {
    if (error instanceof GatewayDependencyError) throw error;
    issues.push({ path, message: `is not a valid cron expression (${(error as Error).message})` });
    return false;
  }
}

/** Pushes an issue naming `path` when `timezone` is not an IANA zone name. */
export function checkTimezone(timezone: unknown, path: string, issues: ValidationIssue[]): timezone is string {
  const known = (name: string) => DateTime.now().setZone(name).isValid;
  if (typeof timezone === 'string' && (timezone === 'UTC' || AREA_LOCATION.test(timezone)) && known(timezone)) return true;
  issues.push({ path, message: 'must be an IANA time zone name such as "UTC" or "America/New_York" (not an offset or an abbreviation)' });
  return false;
}

/**
 * Whether `expression` fires at `at` (ms) in `timezone`: `at` matches it, and `at` is the first
 * instant with its wall time (a repeated hour's second pass does not fire).
 */
export function occursAt(expression: string, timezone: string, at: number): boolean {
  if (!parse(expression, timezone, at - 1000).includesDate(new Date(at))) return false;
  const wall = DateTime.fromMillis(at, { zone: timezone });
  // The same wall time under the zone's other offset of the day (the one before a fall back):
  // when that instant is earlier and shows this wall time too, `at` is the repeated pass.
  const wallAsUtc = at + wall.offset * 60_000;
  for (const hours of [-12, 12]) {
    const offset = DateTime.fromMillis(at + hours * 3_600_000, { zone: timezone }).offset;
    const twin = wallAsUtc - offset * 60_000;
    if (
      twin < at &&
      DateTime.fromMillis(twin, { zone: timezone }).toFormat('yyyy-MM-dd HH:mm:ss') === wall.toFormat('yyyy-MM-dd HH:mm:ss')
    ) {
      return false;
    }
  }
  return true;
}

/** The first occurrence after `from` (ms) that fires (see {@link occursAt}), or null when none is near. */
export function nextOccurrence(expression: string, timezone: string, from: number): number | null {
  const iterator = parse(expression, timezone, from);
  for (let looked = 0; looked < MAX_SKIPPED; looked++) {
    let at: number;
    try {
      at = iterator.next().getTime();
    } catch {
      return null;
    }
    if (occursAt(expression, timezone, at)) return at;
  }
  return null;
}
