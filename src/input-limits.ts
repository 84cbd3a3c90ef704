/**
 * The portable input limits: what every backend can store, so that a job one backend accepts
 * no other refuses, and a job is refused before anything is written rather than failing half
 * way (docs/decisions.md, "Portable input rules").
 */
export { MAX_JSON_DEPTH } from './json-rules.js';

/** `type`, `queue` and `id`: at most this many characters (Unicode code points). */
export const MAX_IDENTIFIER_LENGTH = 128;

/**
 * `priority`: Graphile Worker stores the negated OJS priority in a smallint (-32768..32767), so
 * the symmetric range that fits; BullMQ's own limit (2^21 - 1) is wider.
 */
export const PRIORITY_RANGE = { min: -32767, max: 32767 } as const;

/** `max_attempts`: Graphile Worker's smallint column, which also requires at least 1. */
export const MAX_ATTEMPTS_RANGE = { min: 1, max: 32767 } as const;

/**
 * Every time a job carries or the library computes (`scheduled_at`, `created_at + period`):
 * the four-digit years of ISO 8601, inside JavaScript's Date, PostgreSQL's timestamptz and the
 * integer precision of Redis' and Lua's doubles.
 */
export const TIME_RANGE_MS = {
  /** 0001-01-01T00:00:00.000Z */
  min: -62_135_596_800_000,
  /** 9999-12-31T23:59:59.999Z */
  max: Date.UTC(9999, 11, 31, 23, 59, 59, 999),
} as const;
