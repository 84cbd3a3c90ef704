/**
 * Graphile Worker's job key options as an OJS policy.
 */
import type { UniquePolicyInput } from '../unique-policy.js';
import { OptionReader } from './option-reader.js';

/** The job-key part of Graphile Worker's `TaskSpec`. */
export interface GraphileWorkerJobKeyOptions {
  jobKey?: string;
  /** (Default: `'replace'`.) */
  jobKeyMode?: 'replace' | 'preserve_run_at' | 'unsafe_dedupe';
}

/**
 * `addJob(identifier, payload, { jobKey, jobKeyMode })` as an OJS policy, or `null` without a
 * `jobKey`. The key is the caller's (the `x_key` extension), shared by every task, as in Graphile.
 *  - `replace`: a waiting job with the key is updated in place (payload, priority, attempts,
 *    run time); a running one is left alone and a new job created (`active` is not checked).
 *  - `preserve_run_at`: the same but the run time is kept, except for a job waiting to retry,
 *    whose run time Graphile updates too.
 *  - `unsafe_dedupe`: any job still holding the key, running or failed for good, is returned as is.
 *
 * @throws UntranslatableOptionError naming the option.
 */
export function fromGraphileWorker(spec: GraphileWorkerJobKeyOptions): UniquePolicyInput | null {
  const reader: OptionReader = new OptionReader('graphile-worker', spec, ['jobKey', 'jobKeyMode']);
  const mode = reader.oneOf('jobKeyMode', ['replace', 'preserve_run_at', 'unsafe_dedupe'] as const) ?? 'replace';
  const jobKey = reader.string('jobKey');
  if (jobKey === undefined) return null;
  switch (mode) {
    case 'unsafe_dedupe':
      return { x_key: jobKey, states: ['scheduled', 'available', 'pending', 'active', 'retryable', 'discarded'], on_conflict: 'ignore' };
    case 'replace': {
      const all = ['args', 'priority', 'max_attempts', 'scheduled_at'] as const;
      return {
        x_key: jobKey,
        states: ['scheduled', 'available', 'pending', 'retryable'],
        x_update: { scheduled: all, available: all, pending: all, retryable: all },
      };
    }
    case 'preserve_run_at': {
      const kept = ['args', 'priority', 'max_attempts'] as const;
      return {
        x_key: jobKey,
        states: ['scheduled', 'available', 'pending', 'retryable'],
        x_update: { scheduled: kept, available: kept, pending: kept, retryable: [...kept, 'scheduled_at'] },
      };
    }
  }
}
