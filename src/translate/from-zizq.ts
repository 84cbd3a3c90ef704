/**
 * Zizq's unique options as an OJS policy.
 */
import { UNIQUE_STATE_GROUPS, type UniquePolicyInput } from '../unique-policy.js';
import { OptionReader } from './option-reader.js';

/** Zizq's `uniqueKey(...fields)` helper: the job type plus the named payload fields (all of it with none). */
export interface ZizqPayloadKey {
  readonly payloadFields: readonly string[];
}

export interface ZizqUniqueOptions {
  /**
   * A raw key (`"send_email:welcome:42"`), unique across job types and queues, or
   * {@link zizqUniqueKey}`(...fields)` for the key Zizq's helper computes.
   */
  uniqueKey: string | ZizqPayloadKey;
  /** (Default: `'queued'`.) */
  uniqueWhile?: 'queued' | 'active' | 'exists';
}

/** The counterpart of Zizq's `uniqueKey(...fields)`: `zizqUniqueKey()` hashes the whole payload. */
export function zizqUniqueKey(...payloadFields: string[]): ZizqPayloadKey {
  return { payloadFields };
}

/**
 * Zizq's `uniqueKey` / `uniqueWhile` as an OJS policy. A duplicate returns the existing job
 * (`outcome === "deduplicated"` is Zizq's `duplicate: true`), so a later enqueue with a broader
 * scope never replaces the first job. A raw key is the `x_key` extension.
 *
 * @throws UntranslatableOptionError naming the option.
 */
export function fromZizq(options: ZizqUniqueOptions): UniquePolicyInput {
  const reader: OptionReader = new OptionReader('zizq', options, ['uniqueKey', 'uniqueWhile']);
  const scope = reader.oneOf('uniqueWhile', ['queued', 'active', 'exists'] as const) ?? 'queued';
  const states = { queued: UNIQUE_STATE_GROUPS.queued, active: UNIQUE_STATE_GROUPS.untilSuccess, exists: UNIQUE_STATE_GROUPS.all }[scope];
  const key = reader.get('uniqueKey');
  if (key === undefined) reader.fail('uniqueKey', 'is required: Zizq has no uniqueness without a key');
  if (typeof key === 'string') {
    return { x_key: reader.string('uniqueKey')!, states, on_conflict: 'ignore' };
  }
  const fields = reader.nested('uniqueKey', ['payloadFields']).strings('payloadFields');
  if (fields === undefined) reader.fail('uniqueKey', 'expected a raw key or zizqUniqueKey(...fields)');
  return fields.length === 0
    ? { keys: ['type', 'args'], states, on_conflict: 'ignore' }
    : { keys: ['type', 'args'], args_keys: fields, states, on_conflict: 'ignore' };
}
