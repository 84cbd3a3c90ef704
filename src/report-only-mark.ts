/**
 * The report-only mark of a policy (`x_report_only: true`, src/report-only.ts says what it does):
 * read and taken off before the policy is parsed (`prepareUnique`), so the policy's parser and its
 * key never see it.
 */
import { InvalidJobInputError } from './errors.js';

/** The policy field that marks it report-only. */
export const REPORT_ONLY_FIELD = 'x_report_only';

/**
 * `unique` without its report-only mark, and the mark. A non-boolean mark is refused.
 * @throws InvalidJobInputError at `<path>.x_report_only`.
 */
export function splitReportOnly<T>(unique: T, path = 'unique'): { unique: T; reportOnly: boolean } {
  if (unique === null || typeof unique !== 'object' || !Object.hasOwn(unique, REPORT_ONLY_FIELD)) return { unique, reportOnly: false };
  const { [REPORT_ONLY_FIELD]: mark, ...rest } = unique as Record<string, unknown>;
  if (typeof mark !== 'boolean' && mark !== undefined)
    throw new InvalidJobInputError([{ path: `${path}.${REPORT_ONLY_FIELD}`, message: 'must be a boolean' }]);
  return { unique: rest as T, reportOnly: mark === true };
}

/** `unique` marked report-only (a policy, or null/undefined as they are). */
export function markReportOnly<T extends object | null | undefined>(unique: T): T {
  return unique === null || unique === undefined ? unique : ({ ...unique, [REPORT_ONLY_FIELD]: true } as T);
}
