/**
 * Policies registered per job type on an entry point (`withUniqueness(queue, { policies })`,
 * `makeUniqueWorkerUtils({ policies })`, `withUniqueHelpers(tasks, { policies })`): every add of
 * that type through it gets the policy, an add that passes no options included, so a caller
 * that does not know the policy (bull-board's "Add job", a script, a new service) cannot bypass it.
 *
 * The registered policy is the type's policy, not a default: an add of that type whose own
 * `unique` differs from it (another policy, or `null`) is refused with `InvalidJobInputError`
 * naming the add's option, nothing written. Passing the same policy is accepted, so call sites
 * written before the registration keep working while it rolls out. Each policy is validated when
 * the entry point is made (paths name the type: `policies["report.build"].on_conflict`).
 */
import { InvalidJobInputError, isInvalidJobInputError } from './errors.js';
import { parseUniquePolicy, type UniquePolicyInput } from './unique-policy.js';
import { markReportOnly, splitReportOnly } from './report-only-mark.js';

/** Policies by job type (BullMQ job name, Graphile Worker task identifier). */
export type RegisteredPolicies<Name extends string = string> = { readonly [N in Name]?: UniquePolicyInput };

/** The validated registry of one entry point. */
export interface PolicyRegistry {
  /** The registered policy of `type`, or undefined when none is. */
  policyOf(type: string): UniquePolicyInput | undefined;
  /**
   * The policy an add of `type` runs with: the registered one when there is one (the add's own
   * `unique` must then be absent or the same policy), else the add's own. `given` is `undefined`
   * when the add did not say `unique`.
   * @throws InvalidJobInputError at `path` when the add's own `unique` differs from the registered policy.
   */
  effective(type: string, given: UniquePolicyInput | null | undefined, path: string): UniquePolicyInput | null | undefined;
}

/**
 * Validates `policies` (an entry point's option named `option`) and returns its registry; null
 * when none is given.
 * @throws InvalidJobInputError naming the type and field of every bad policy.
 */
export function policyRegistry(policies: RegisteredPolicies | undefined, option = 'policies'): PolicyRegistry | null {
  if (policies === undefined || policies === null) return null;
  if (typeof policies !== 'object' || Array.isArray(policies))
    throw new InvalidJobInputError([{ path: option, message: 'must be an object of policies by job type' }]);
  const byType = new Map<string, { input: UniquePolicyInput; signature: string }>();
  const issues = [];
  for (const [type, input] of Object.entries(policies)) {
    if (input === undefined) continue;
    const path = `${option}[${JSON.stringify(type)}]`;
    try {
      byType.set(type, { input, signature: signatureOf(input) });
    } catch (error) {
      if (!isInvalidJobInputError(error)) throw error;
      issues.push(...error.issues.map((issue) => ({ ...issue, path: issue.path.replace(/^unique/, path) })));
    }
  }
  if (issues.length > 0) throw new InvalidJobInputError(issues);
  return {
    policyOf: (type) => byType.get(type)?.input,
    effective: (type, given, path) => {
      const registered = Object.hasOwn(Object(policies), type) ? byType.get(type) : undefined;
      if (registered === undefined || given === undefined) return registered?.input ?? given;
      let same = false;
      try {
        same = given !== null && signatureOf(given) === registered.signature;
      } catch (error) {
        if (!isInvalidJobInputError(error)) throw error;
      }
      if (!same) {
        throw new InvalidJobInputError([
          {
            path,
            message: `differs from the policy registered for ${JSON.stringify(type)} on this entry point (leave it out: the registered policy applies)`,
          },
        ]);
      }
      return registered.input;
    },
  };
}

/** What an entry point applies to every add through it: its registered `policies`, and `reportOnly`. */
export interface EntryPointPolicies {
  registry: PolicyRegistry | null;
  reportOnly: boolean;
}

export const NO_ENTRY_POINT_POLICIES: EntryPointPolicies = { registry: null, reportOnly: false };

/** The options every entry point with registered policies takes. */
export interface EntryPointPolicyOptions<Name extends string = string> {
  /**
   * Policies by job type: every add of that type through this entry point gets it, one that
   * passes no options included. An add whose own `unique` differs (another policy, or `null`) is
   * refused naming its option; the same policy is accepted. (Default: none.)
   */
  policies?: RegisteredPolicies<Name>;
  /**
   * Every policy applied through this entry point is report-only (`x_report_only`): decided and
   * counted, the answer's `wouldBe` says what it would have done, and the job is always added.
   * (Default: false.)
   */
  reportOnly?: boolean;
}

/** An entry point's `policies` and `reportOnly`, checked once. @throws InvalidJobInputError naming the option. */
export function entryPointPolicies(options: EntryPointPolicyOptions): EntryPointPolicies {
  if (options.policies === undefined && options.reportOnly === undefined) return NO_ENTRY_POINT_POLICIES;
  if (options.reportOnly !== undefined && typeof options.reportOnly !== 'boolean')
    throw new InvalidJobInputError([{ path: 'reportOnly', message: 'must be a boolean' }]);
  return { registry: policyRegistry(options.policies), reportOnly: options.reportOnly === true };
}

/**
 * The policy an add of `type` through the entry point runs with (`given`: the add's own `unique`,
 * `undefined` when it said none): the registered one, else its own; marked report-only when the
 * entry point is.
 */
export function entryPointPolicy(
  policies: EntryPointPolicies,
  type: string,
  given: UniquePolicyInput | null | undefined,
  path: string,
): UniquePolicyInput | null | undefined {
  const unique = policies.registry === null ? given : policies.registry.effective(type, given, path);
  return policies.reportOnly ? markReportOnly(unique) : unique;
}

/** The parsed policy (defaults filled in) and its report-only mark, as comparable text. */
function signatureOf(input: UniquePolicyInput): string {
  const { unique, reportOnly } = splitReportOnly(input);
  return JSON.stringify([parseUniquePolicy(unique), reportOnly]);
}
