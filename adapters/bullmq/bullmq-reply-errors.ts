/**
 * The one place where the scripts' reply codes become the core's typed errors. Each code is a
 * string in the first slot of the reply (see the contract comment of each .lua file).
 */
import { BackendError, DuplicateJobError, InvalidTransitionError, InvalidUniquePolicyError, isOjsUniqueError, JobNotFoundError, type OjsUniqueError } from '../../src/errors.js';
import type { OjsJobState } from '../../src/job.js';

export type ReplyProblem =
  | { code: 'duplicate' | 'active'; existingJobId: string; existingJobState: OjsJobState; uniquenessKey: string }
  | { code: 'id_exists'; jobId: string; path: string }
  | { code: 'bullmq_error'; bullmqCode: number }
  | { code: 'not_found'; jobId: string }
  | { code: 'terminal'; jobId: string; state: OjsJobState }
  | { code: 'unknown'; reply: unknown };

export function errorForReply(problem: ReplyProblem): Error {
  switch (problem.code) {
    case 'duplicate':
    case 'active':
      return new DuplicateJobError({
        existingJobId: problem.existingJobId,
        existingJobState: problem.existingJobState,
        uniquenessKey: problem.uniquenessKey,
        reason: problem.code === 'active' ? 'active_not_replaceable' : 'duplicate',
      });
    case 'id_exists':
      return new InvalidUniquePolicyError([{ path: problem.path, message: `a job with id ${problem.jobId} already exists` }]);
    case 'bullmq_error':
      // Negative codes are BullMQ's own (src/enums/error-code.ts); a unique add only reaches ones
      // that indicate a broken queue, never a duplicate. Nothing was inserted.
      return new BackendError('bullmq', `BullMQ's add script returned error code ${problem.bullmqCode}`, { written: false });
    case 'not_found':
      return new JobNotFoundError(problem.jobId);
    case 'terminal':
      return new InvalidTransitionError(problem.jobId, problem.state, 'cancelled');
    case 'unknown':
      return new BackendError('bullmq', `unexpected script reply ${JSON.stringify(problem.reply)?.slice(0, 200)}`);
  }
}

/**
 * Any error met on the way to Redis and back as a typed error: the core's errors pass through,
 * anything else (a closed connection, a Redis or script error, BullMQ's own option checks)
 * becomes a `BackendError` with the original as `cause`. `written: false` only when the caller
 * knows nothing was sent.
 */
export function backendErrorFor(error: unknown, options: { written?: false } = {}): OjsUniqueError {
  if (isOjsUniqueError(error)) return error;
  return new BackendError('bullmq', error instanceof Error ? error.message : String(error), { cause: error, ...options });
}
