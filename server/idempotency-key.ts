/**
 * The `Idempotency-Key` request header (draft-ietf-httpapi-idempotency-key-header) of PUSH and
 * batch PUSH: how the header is read, whose key it is (the scope) and what the request was (the
 * fingerprint). What the server does with them is in ojs-server.ts (`keyedPush`); where the
 * records live, in each store's `idempotency` (gateway-store.ts).
 *
 * The key is never stored, logged or put in an error: only its digest is kept.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../src/canonical-json.js';

export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';
/** How long a key is kept after its answer (and a claim at most): 24 hours. */
export const DEFAULT_IDEMPOTENCY_RETENTION_MS = 24 * 3600 * 1000;
/**
 * How long a claim answers 409 before a retry may take it over: longer than a live PUSH takes
 * (the BullMQ store's command timeout is 5 s, the Graphile store's connection timeout 10 s), so
 * that only the claim of a crashed process, or of one that gave up, is taken over.
 */
export const DEFAULT_IDEMPOTENCY_LEASE_MS = 60_000;
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/** A header value that is no key; the message says why, never what it was. */
export class IdempotencyKeyHeaderError extends Error {}

/** The draft's sf-string: printable ASCII between quotes, `\"` and `\\` escaped. */
const SF_STRING = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"$/;
/** What clients send unquoted (as payment APIs take it): visible ASCII, no quote, comma or space. */
const BARE = /^[\x21\x23-\x2b\x2d-\x7e]+$/;

/**
 * The key the request carries, or null without the header. The draft's form is a structured
 * string (`"8e03978e-…"`); an unquoted value is taken as it is. Both name one key: `"abc"` and
 * `abc` are the same key.
 *
 * @throws IdempotencyKeyHeaderError for an empty, too long or malformed value, or two headers.
 */
export function readIdempotencyKey(header: string | string[] | undefined): string | null {
  if (header === undefined) return null;
  if (Array.isArray(header)) throw new IdempotencyKeyHeaderError(`send one ${IDEMPOTENCY_KEY_HEADER} header`);
  const value = header.trim();
  const quoted = SF_STRING.exec(value);
  const key = quoted ? quoted[1]!.replace(/\\(["\\])/g, '$1') : BARE.test(value) ? value : null;
  if (key === null) {
    throw new IdempotencyKeyHeaderError(
      `${IDEMPOTENCY_KEY_HEADER} must be a quoted string of printable ASCII ("…"), or one word without spaces or commas`,
    );
  }
  if (key === '' || key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw new IdempotencyKeyHeaderError(`${IDEMPOTENCY_KEY_HEADER} must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`);
  }
  return key;
}

const digest = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * Whose keys: with a token, the principal the token names (its digest; the gateway has one
 * token, so one principal: two gateways with other tokens over one backend keep apart); without
 * one, the whole server.
 */
export function idempotencyScope(token: string | undefined): string {
  return token ? `token-${digest(token).slice(0, 32)}` : 'server';
}

/** The key's digest: what the records are found by. */
export function idempotencyKeyDigest(key: string): string {
  return digest(key);
}

/** The request's fingerprint: method, route and the body as canonical JSON (its member order does not count). */
export function requestFingerprint(method: string, route: string, body: unknown): string {
  return digest(`${method} ${route}\n${canonicalJson(body) ?? JSON.stringify(body)}`);
}
