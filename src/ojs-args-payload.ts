/**
 * The one mapping between OJS `args` (an array, on the wire) and a host job's payload (BullMQ
 * `data`, Graphile Worker `payload`), used by the OJS gateway on every backend. The uniqueness key
 * is computed over the payload, so a job enqueued over HTTP and the same job added with
 * `withUniqueness(queue).add(type, payload)` or `makeUniqueWorkerUtils(...).addJob(type, payload)`
 * have one key and are one job.
 *
 *   args `[o]`, `o` a JSON object            <->  payload `o`   (what host producers already write)
 *   any other args `A`                       <->  payload `{ "ojs_args": A }`
 *
 * A payload that is exactly `{ "ojs_args": <array> }` reads back as that array; every other
 * payload `p` reads back as `[p]`. `[{ "ojs_args": [...] }]` is wrapped like any other
 * non-object-shaped args, so the mapping round-trips for every OJS `args`.
 */
import type { JsonValue } from './job.js';
import { isPlainObject } from './json-rules.js';

/** The payload key that carries OJS `args` which are not a single object. */
export const OJS_ARGS_PAYLOAD_KEY = 'ojs_args';

function isWrapper(value: unknown): value is { [OJS_ARGS_PAYLOAD_KEY]: JsonValue[] } {
  return isPlainObject(value) && Object.keys(value).length === 1 && Array.isArray((value as Record<string, unknown>)[OJS_ARGS_PAYLOAD_KEY]);
}

/** The host payload for OJS `args`. */
export function argsToPayload(args: readonly JsonValue[]): JsonValue {
  if (args.length === 1 && isPlainObject(args[0]) && !isWrapper(args[0])) return args[0] as JsonValue;
  return { [OJS_ARGS_PAYLOAD_KEY]: [...args] };
}

/** The OJS `args` of a host payload. */
export function payloadToArgs(payload: unknown): JsonValue[] {
  if (isWrapper(payload)) return payload[OJS_ARGS_PAYLOAD_KEY];
  return [(payload === undefined ? null : payload) as JsonValue];
}
