/**
 * Typed errors with stable `code`s. Everything this library throws on purpose is an
 * {@link OjsUniqueError}; adapters translate their backend's signals (Lua return codes, SQLSTATEs)
 * into these in one place each, so a caller sees the same error whatever the datastore.
 *
 * The guards (`isDuplicateJobError` …) check `instanceof` first and then a brand registered with
 * `Symbol.for`, so they still recognise errors thrown by another copy of this package (two
 * versions in one `node_modules`, or another realm). Checking `name` alone was rejected: any
 * unrelated error can carry the same name.
 */
import type { OjsJobState } from './job-state.js';

const BRAND = Symbol.for('ojs-unique.error');

/** Stable codes. `invalid_request` and `duplicate` are the OJS codes of spec §2.2 and §5.1. */
export type OjsUniqueErrorCode = 'invalid_request' | 'duplicate' | 'not_found' | 'invalid_transition' | 'backend_error' | 'untranslatable';

export class OjsUniqueError extends Error {
  readonly code: OjsUniqueErrorCode;

  constructor(code: OjsUniqueErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = 'OjsUniqueError';
    Object.defineProperty(this, BRAND, { value: code });
  }
}

/** One problem with a policy or a job, naming the field it is about. */
export interface ValidationIssue {
  /** Dotted path from the job, e.g. `unique.keys[1]` or `args.user.id`. */
  path: string;
  message: string;
}

/**
 * The caller's input is invalid: the `UniquePolicy` (spec §2.2, §6.2), the job it is attached to
 * (queue, id, args, times, priority …) or a host option passed with it. `issues` name each field.
 * The job was not enqueued and nothing was written.
 */
export class InvalidJobInputError extends OjsUniqueError {
  readonly issues: readonly ValidationIssue[];

  constructor(issues: readonly ValidationIssue[], options?: { cause?: unknown }) {
    super('invalid_request', formatIssues(issues), options);
    this.name = 'InvalidJobInputError';
    this.issues = issues;
  }

  /** The OJS error body (HTTP binding, 400). */
  toJSON(): { error: { code: 'invalid_request'; message: string; retryable: false; details: { issues: readonly ValidationIssue[] } } } {
    return { error: { code: 'invalid_request', message: this.message, retryable: false, details: { issues: this.issues } } };
  }
}

function formatIssues(issues: readonly ValidationIssue[]): string {
  if (issues.length === 0) return 'invalid job input';
  return issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ');
}

export interface DuplicateJobDetails {
  existingJobId: string;
  existingJobState: OjsJobState;
  uniquenessKey: string;
  /** Why the job was refused: a plain duplicate, or `replace` meeting an active job (§5.2). */
  reason?: 'duplicate' | 'active_not_replaceable';
}

/**
 * `on_conflict: "reject"` met a duplicate (spec §5.1), or `replace` met an active job it may not
 * replace (§5.2 fallback). The new job was not enqueued.
 *
 * The uniqueness key is a property, never part of `message`: messages end up in logs at error
 * level, and spec §12 forbids logging keys above debug.
 */
export class DuplicateJobError extends OjsUniqueError {
  readonly existingJobId: string;
  readonly existingJobState: OjsJobState;
  readonly uniquenessKey: string;
  readonly reason: 'duplicate' | 'active_not_replaceable';

  constructor(details: DuplicateJobDetails, options?: { cause?: unknown }) {
    const reason = details.reason ?? 'duplicate';
    super(
      'duplicate',
      reason === 'duplicate'
        ? `A job matching the uniqueness key already exists (job ${details.existingJobId}, ${details.existingJobState})`
        : `The job matching the uniqueness key is active and cannot be replaced (job ${details.existingJobId})`,
      options,
    );
    this.name = 'DuplicateJobError';
    this.existingJobId = details.existingJobId;
    this.existingJobState = details.existingJobState;
    this.uniquenessKey = details.uniquenessKey;
    this.reason = reason;
  }

  /** The OJS error body of spec §5.1 (HTTP binding, 409). */
  toJSON(): {
    error: {
      code: 'duplicate';
      message: string;
      retryable: false;
      details: { existing_job_id: string; existing_job_state: OjsJobState; uniqueness_key: string; reason: string };
    };
  } {
    return {
      error: {
        code: 'duplicate',
        message: this.message,
        retryable: false,
        details: {
          existing_job_id: this.existingJobId,
          existing_job_state: this.existingJobState,
          uniqueness_key: this.uniquenessKey,
          reason: this.reason,
        },
      },
    };
  }
}

/** `getJob`/`cancel` named a job the backend does not know. */
export class JobNotFoundError extends OjsUniqueError {
  readonly jobId: string;
  constructor(jobId: string) {
    super('not_found', `job ${jobId} not found`);
    this.name = 'JobNotFoundError';
    this.jobId = jobId;
  }
}

/** A lifecycle operation that the OJS state machine (ojs-core §6.3) does not allow, e.g. cancelling a completed job. */
export class InvalidTransitionError extends OjsUniqueError {
  readonly jobId: string;
  readonly from: OjsJobState;
  readonly to: OjsJobState;
  constructor(jobId: string, from: OjsJobState, to: OjsJobState) {
    super('invalid_transition', `job ${jobId} cannot go from ${from} to ${to}`);
    this.name = 'InvalidTransitionError';
    this.jobId = jobId;
    this.from = from;
    this.to = to;
  }
}

/**
 * The backend failed (connection lost, script error, unexpected SQLSTATE, unsupported host
 * version). `cause` carries the original error. `written` says whether the operation's write
 * happened: `'unknown'` unless the adapter knows.
 */
export class BackendError extends OjsUniqueError {
  readonly backend: string;
  /** `false` when the adapter knows nothing was written, `true` when it knows it was, `'unknown'` when it may have been. */
  readonly written: boolean | 'unknown';
  constructor(backend: string, message: string, options?: { cause?: unknown; written?: boolean | 'unknown' }) {
    super('backend_error', `${backend}: ${message}`, options);
    this.name = 'BackendError';
    this.backend = backend;
    this.written = options?.written ?? 'unknown';
  }
}

/**
 * A translator of `ojs-unique/translate` (`fromOban`, `fromBullMQ` …) was given an option it
 * cannot turn into an OJS policy: one no policy (extensions included) can express, or a value
 * that system itself would not accept. `option` is the option's path in the system's own
 * vocabulary (`replace.executing[0]`, `deduplication.ttl`).
 */
export class UntranslatableOptionError extends OjsUniqueError {
  /** The system whose options were given: `oban`, `oban-pro`, `zizq`, `faktory`, `bullmq`, `graphile-worker`. */
  readonly system: string;
  readonly option: string;
  constructor(system: string, option: string, problem: string) {
    super('untranslatable', `${system} option ${option}: ${problem}`);
    this.name = 'UntranslatableOptionError';
    this.system = system;
    this.option = option;
  }
}

function brandOf(value: unknown): OjsUniqueErrorCode | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  return (value as { [BRAND]?: OjsUniqueErrorCode })[BRAND];
}

export function isOjsUniqueError(value: unknown): value is OjsUniqueError {
  return value instanceof OjsUniqueError || brandOf(value) !== undefined;
}

export function isDuplicateJobError(value: unknown): value is DuplicateJobError {
  return value instanceof DuplicateJobError || brandOf(value) === 'duplicate';
}

export function isInvalidJobInputError(value: unknown): value is InvalidJobInputError {
  return value instanceof InvalidJobInputError || brandOf(value) === 'invalid_request';
}

/**
 * `error` with each issue's path under `prefix` (`[2].`, `children[0].`): the input was one part
 * of a larger call (a batch's job, a flow's node). Any other error, or an empty prefix, unchanged.
 */
export function underPath(error: unknown, prefix: string): unknown {
  if (!isInvalidJobInputError(error) || prefix === '') return error;
  return new InvalidJobInputError(
    error.issues.map((issue) => ({ ...issue, path: `${prefix}${issue.path}` })),
    { cause: error },
  );
}

export function isBackendError(value: unknown): value is BackendError {
  return value instanceof BackendError || brandOf(value) === 'backend_error';
}

export function isUntranslatableOptionError(value: unknown): value is UntranslatableOptionError {
  return value instanceof UntranslatableOptionError || brandOf(value) === 'untranslatable';
}
