/**
 * The one place where what Redis and the scripts answer becomes the core's typed errors: the
 * scripts' reply codes (a string in the first slot of the reply; see the contract comment of
 * each .lua file), Redis and ioredis errors (`backendErrorFor`), and Redis Cluster errors made to
 * say what to change (`typedErrorFor`): everything one script or pipeline touches must be in one
 * hash slot, which with BullMQ's keys means a hash-tagged prefix (docs/bullmq.md, "Redis
 * Cluster"), and a plain client pointed at one node of a cluster meets MOVED for keys that node
 * does not own: it needs an ioredis `Cluster`.
 */
import {
  BackendError,
  DuplicateJobError,
  InvalidTransitionError,
  InvalidJobInputError,
  isBackendError,
  isOjsUniqueError,
  JobNotFoundError,
  type OjsUniqueError,
} from '../../src/errors.js';
import type { OjsJobState } from '../../src/job-state.js';

export type ReplyProblem =
  | { code: 'duplicate' | 'active'; existingJobId: string; existingJobState: OjsJobState; uniquenessKey: string }
  | { code: 'id_exists'; jobId: string; path: string }
  | { code: 'refused_option'; path: string }
  | { code: 'bullmq_error'; bullmqCode: number }
  | { code: 'counter_id_taken'; jobId: string }
  | { code: 'successor_queue'; queue: string }
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
    case 'successor_queue':
      // Nothing written: unique-add refuses before any write.
      return new InvalidJobInputError([
        {
          path: 'unique.x_successor',
          message: `needs the active job it waits for in the same queue on BullMQ (that job is in queue ${problem.queue}; give the policy the 'queue' dimension)`,
        },
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

const HASH_TAG_HINT =
  'use a hash-tagged prefix, e.g. prefix: \'{myapp}\', so that every key of the prefix is in one hash slot (docs/bullmq.md, "Redis Cluster")';

/** The typed error for a Redis Cluster error, or undefined when `error` is not one. */
export function clusterErrorFor(error: unknown): BackendError | undefined {
  // The core's other errors are never a Redis error (their messages can hold a caller's job id).
  if (isOjsUniqueError(error) && !isBackendError(error)) return undefined;
  // Also a BackendError that already wraps one (its cause).
  const raw = isBackendError(error) && error.cause instanceof Error ? error.cause : error;
  if (!(raw instanceof Error)) return undefined;
  const message = raw.message;
  // Refused by Redis before running (CROSSSLOT) or by ioredis before sending (a pipeline over slots).
  if (/^CROSSSLOT\b/.test(message) || message.includes('same slots allocation group')) {
    return new BackendError('bullmq', `Redis Cluster: the keys of one operation are in different hash slots: ${HASH_TAG_HINT}`, {
      cause: raw,
      written: false,
    });
  }
  // A script that reached a key of another slot while running: it may have written before.
  if (/non local key in a cluster node|do not hash to the same slot|cross.slot/i.test(message)) {
    return new BackendError('bullmq', `Redis Cluster: a script reached keys in different hash slots: ${HASH_TAG_HINT}`, { cause: raw });
  }
  const moved = /^(MOVED|ASK) \d+ (\S+)/.exec(message);
  if (moved) {
    return new BackendError(
      'bullmq',
      `Redis Cluster: the node connected to does not own the key (${moved[1]} to ${moved[2]}); connect with an ioredis Cluster (new Cluster([...nodes])) and a hash-tagged prefix`,
      { cause: raw, written: false },
    );
  }
  return undefined;
}

/** `backendErrorFor`, with Redis Cluster errors made to say what to change. */
export function typedErrorFor(error: unknown, options: { written?: false } = {}): OjsUniqueError {
  return clusterErrorFor(error) ?? backendErrorFor(error, options);
}
