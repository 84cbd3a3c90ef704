/**
 * Times a PUSH may give relative to now, as the public conformance suite sends them: `+` and an
 * ISO 8601 duration (`"+PT5S"`, `"+P1DT2H"`), in `options.scheduled_at` / `delay_until` and
 * `options.expires_at`. OJS defines these fields as RFC 3339 date-times; the relative form is
 * read as "now plus the duration" and resolved once, at PUSH, on the store's clock (Redis's,
 * PostgreSQL's or this process's: `GatewayStore.now`), so the job records and reports an absolute
 * time like any other (docs/migration.md).
 */
import type { GatewayJobInput } from './gateway-store.js';

/** `+P[nD][T[nH][nM][n[.n]S]]`, at least one part. */
const RELATIVE = /^\+P(?:(\d+)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/;
/** Further ahead than this is refused: no job waits a century, and the sum stays a valid date. */
const MAX_RELATIVE_MS = 100 * 365 * 24 * 3600 * 1000;

/** The duration of a relative time in ms, or null when `value` is not one (an empty `+P`/`+PT` is not). */
export function relativeMs(value: unknown): number | null {
  if (typeof value !== 'string' || value.endsWith('P') || value.endsWith('T')) return null;
  const match = RELATIVE.exec(value);
  if (!match) return null;
  const [days, hours, minutes, seconds] = match.slice(1).map((part) => Number(part ?? 0)) as [number, number, number, number];
  const ms = Math.round((((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000);
  return ms <= MAX_RELATIVE_MS ? ms : null;
}

/** What a PUSH gave relative to now, resolved by `resolveRelativeTimes`. */
export interface RelativeTimes {
  scheduledAtMs?: number;
  expiresAtMs?: number;
}

/**
 * Fills in the absolute times of the jobs that gave relative ones, reading the store's clock once
 * (and not at all when none did). `relative[i]` belongs to `inputs[i]`.
 */
export async function resolveRelativeTimes(
  inputs: readonly GatewayJobInput[],
  relative: readonly (RelativeTimes | null)[],
  now: () => Promise<number>,
): Promise<void> {
  if (!relative.some((times) => times !== null)) return;
  const base = await now();
  relative.forEach((times, index) => {
    if (!times) return;
    const input = inputs[index]!;
    if (times.scheduledAtMs !== undefined) input.scheduled_at = new Date(base + times.scheduledAtMs).toISOString();
    if (times.expiresAtMs !== undefined) {
      input.extras.envelope = { ...input.extras.envelope, expires_at: new Date(base + times.expiresAtMs).toISOString() };
    }
  });
}
