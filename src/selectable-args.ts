/**
 * Which object `args_keys` selects from (spec §3.3).
 *
 * OJS envelopes carry `args` as an array (ojs-core §5.1); BullMQ's `data` and Graphile Worker's
 * `payload` are objects. The mapping, the one OJS tooling uses:
 *  - `args` is a plain object: `args_keys` select from it;
 *  - `args` is an array whose first element is a plain object: `args_keys` select from `args[0]`;
 *  - anything else has no keys to select, and `args_keys` on it is an `invalid_request`.
 * Without `args_keys` the whole `args` value is hashed as it is, whatever its shape.
 *
 * Rejected alternative: selecting array *indexes* with `args_keys: ["0"]`. It reads as a key of
 * an object, silently changes meaning if a payload switches from array to object, and no other
 * job system does it.
 */
import { isPlainObject } from './json-rules.js';

export type SelectableArgs = { ok: true; object: Record<string, unknown>; path: 'args' | 'args[0]' } | { ok: false; problem: string };

export function selectableArgs(args: unknown): SelectableArgs {
  if (isPlainObject(args)) return { ok: true, object: args, path: 'args' };
  if (Array.isArray(args) && Object.hasOwn(args, 0) && isPlainObject(args[0])) return { ok: true, object: args[0], path: 'args[0]' };
  const shape = Array.isArray(args) ? 'an array whose first element is not an object' : args === null ? 'null' : typeof args;
  return {
    ok: false,
    problem: `args_keys needs args to be an object, or an array whose first element is an object; args is ${shape}`,
  };
}
