/**
 * A queue's rate limit, as a PUSH sets it in `options.rate_limit` (the form of the public
 * conformance suite, the OJS rate-limiting extension's per-queue limit): at most `max` jobs of the
 * queue handed out by FETCH per window of `durationMs`, counted from the first job of a window
 * (a fixed window, as BullMQ's limiter counts). The limit belongs to the queue: a PUSH that gives
 * one sets it for every job of the queue until a later PUSH gives another. Each store keeps it on
 * its backend (BullMQ's global rate limit, a gateway table on PostgreSQL), so every gateway
 * process over one backend shares the limit and its count (docs/design/gateway.md).
 */
import type { ValidationIssue } from '../src/errors.js';
import { isPlainObject } from '../src/json-rules.js';

export interface RateLimit {
  max: number;
  durationMs: number;
}

const WINDOWS = { max_per_second: 1000, max_per_minute: 60_000, max_per_hour: 3_600_000 } as const;
/** BullMQ's and PostgreSQL's counters are 32-bit here; no real limit comes near. */
const MAX_LIMIT = 1_000_000;

/** `options.rate_limit`: exactly one of `max_per_second`, `max_per_minute`, `max_per_hour`, an integer from 1. */
export function readRateLimit(value: unknown, issues: ValidationIssue[]): RateLimit | null {
  if (value === undefined || value === null) return null;
  const path = 'options.rate_limit';
  if (!isPlainObject(value)) {
    issues.push({ path, message: 'must be an object' });
    return null;
  }
  const given = (Object.keys(WINDOWS) as (keyof typeof WINDOWS)[]).filter((field) => value[field] !== undefined);
  const unknown = Object.keys(value).filter((field) => !Object.hasOwn(WINDOWS, field));
  if (unknown.length > 0) {
    issues.push({ path: `${path}.${unknown[0]}`, message: 'is not a rate limit field (max_per_second, max_per_minute, max_per_hour)' });
    return null;
  }
  if (given.length !== 1) {
    issues.push({ path, message: 'must give exactly one of max_per_second, max_per_minute, max_per_hour' });
    return null;
  }
  const field = given[0]!;
  const max = value[field];
  if (!Number.isInteger(max) || (max as number) < 1 || (max as number) > MAX_LIMIT) {
    issues.push({ path: `${path}.${field}`, message: `must be an integer from 1 to ${MAX_LIMIT}` });
    return null;
  }
  return { max: max as number, durationMs: WINDOWS[field] };
}

/**
 * The fixed-window count of one queue in one process (the memory store's): `take` says whether
 * one more job may go out now, and counts it when it may.
 */
export class RateWindow {
  #start = 0;
  #count = 0;

  constructor(public limit: RateLimit) {}

  /** Whether a job may go out at `now` (nothing counted). */
  admits(now: number): boolean {
    return now >= this.#start + this.limit.durationMs || this.#count < this.limit.max;
  }

  /** Counts a job that went out at `now`. */
  count(now: number): void {
    if (now >= this.#start + this.limit.durationMs) {
      this.#start = now;
      this.#count = 0;
    }
    this.#count++;
  }
}
