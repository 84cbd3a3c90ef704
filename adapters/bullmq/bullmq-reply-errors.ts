/**
 * The one place where the scripts' reply codes become the core's typed errors. Each code is a
 * string in the first slot of the reply (see the contract comment of each .lua file).
 */
import {
  BackendError,
  DuplicateJobError,
  InvalidTransitionError,
  InvalidJobInputError,
  isOjsUniqueError,
  JobNotFoundError,
  type OjsUniqueError,
} from '../../src/errors.js';
import type { OjsJobState } from '../../src/job.js';

export type ReplyProblem =
  | { code: 'duplicate' | 'active'; existingJobId: string; existingJobState: OjsJobState; uniquenessKey: string }
  | { code: 'id_exists'; jobId: string; path: string }
  | { code: 'refused_option'; path: string }
  | { code: 'bullmq_error'; bullmqCode: number }
  | { code: 'counter_id_taken'; jobId: string }
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
      return new InvalidJobInputError([{ path: problem.path, message: `a job with id ${problem.jobId} already exists` }]);
    case 'refused_option':
      return new InvalidJobInputError([
        { path: problem.path, message: 'cannot be combined with unique (see docs/bullmq.md, "Combining with BullMQ options")' },
      ]);
    case 'bullmq_error':
      // Negative codes are BullMQ's own (src/enums/error-code.ts); unique-add checks their causes
      // before its first write, so one here means a broken queue, never a duplicate. Nothing was
      // inserted; whether the script wrote anything else first is not known here.
      return new BackendError('bullmq', `BullMQ's add script returned error code ${problem.bullmqCode}`, { written: 'unknown' });
    case 'counter_id_taken':
      // The queue's id counter points at a job that already exists (a caller chose that id as a
      // custom one): BullMQ's add would return that job instead of inserting. Refused before any
      // write, so retrying is safe once the counter has moved on.
      return new BackendError('bullmq', `the queue's next job id ${problem.jobId} is already taken by another job`, { written: false });
    case 'not_found':
      return new JobNotFoundError(problem.jobId);
    case 'terminal':
      return new InvalidTransitionError(problem.jobId, problem.state, 'cancelled');
    case 'unknown':
      return new BackendError('bullmq', `unexpected script reply ${JSON.stringify(problem.reply)?.slice(0, 200)}`, { written: 'unknown' });
  }
}

/**
 * Any error met on the way to Redis and back as a typed error: the core's errors pass through,
 * anything else (a closed connection, a Redis or script error, BullMQ's own option checks)
 * becomes a `BackendError` with the original as `cause`. `written` is `'unknown'` (a script
 * whose reply was lost may have run) unless the caller knows nothing was sent.
 */
export function backendErrorFor(error: unknown, options: { written?: false } = {}): OjsUniqueError {
  if (isOjsUniqueError(error)) return error;
  const layout = layoutErrorFor(error);
  if (layout) return layout;
  const message = error instanceof Error ? error.message : String(error);
  return new BackendError('bullmq', LUA_ERROR.test(message) ? `${message} ${LUA_ERROR_HINT}` : message, {
    cause: error,
    written: options.written ?? 'unknown',
  });
}

/** A Redis error raised inside a script names its line as `user_script:<line>`, inside a function as `user_function:<line>`. */
const LUA_ERROR = /user_(script|function):\d+/;
const LUA_ERROR_HINT =
  "(a line of one of the adapter's Lua scripts as composed with the installed bullmq, or of their function library for user_function: `npm run print:lua` in the ojs-unique repository writes them to adapters/bullmq/generated/composed/, the library as library.lua)";

/**
 * The refusal of a script whose sidecar namespace records another layout (lua/includes/ojs-layout.lua):
 * an error reply `OJSLAYOUT {"key","stored","ours"}`, rather than a reply code, so that it reaches
 * every caller alike (a pipeline's replies too) before any script-specific decoding. Answered
 * before the script read or wrote anything else: `written` is false.
 */
export function layoutErrorFor(error: unknown): BackendError | undefined {
  if (!(error instanceof Error) || !error.message.startsWith(LAYOUT_REFUSAL)) return undefined;
  let found: { key?: unknown; stored?: unknown; ours?: unknown };
  try {
    found = JSON.parse(error.message.slice(LAYOUT_REFUSAL.length)) as typeof found;
  } catch {
    return undefined;
  }
  return new BackendError(
    'bullmq',
    `the sidecar at ${String(found.key)} is in layout version ${String(found.stored)}, and this process writes layout version ${String(found.ours)}: ` +
      'two layouts on one prefix would add duplicates unseen, so nothing was written. Run one layout per prefix: ' +
      'drain the queues and delete the sidecar before moving a prefix to another layout (docs/bullmq.md, "Upgrading").',
    { cause: error, written: false },
  );
}

const LAYOUT_REFUSAL = 'OJSLAYOUT ';
