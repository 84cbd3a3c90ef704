/**
 * The one place where PostgreSQL errors become this library's typed errors. Everything the
 * adapter sends to the database goes through {@link translatePgError} on failure.
 */
import { BackendError, InvalidJobInputError, isOjsUniqueError } from '../../src/errors.js';

const BACKEND = 'graphile-worker';

/** What the failed operation was, for the message (never job data, spec §12). */
export interface PgErrorContext {
  operation: string;
  /** The OJS id the caller asked for, when a 23505 on it means "id taken". */
  requestedId?: string | undefined;
  /** True when the failing transaction was rolled back, so nothing was written. */
  rolledBack: boolean;
}

/** What every method of a closed backend throws: typed, and nothing was written. */
export function backendClosedError(): BackendError {
  return new BackendError(BACKEND, 'the backend is closed', { written: false });
}

export function translatePgError(error: unknown, context: PgErrorContext): Error {
  if (isOjsUniqueError(error)) return error;
  const pg = error as { code?: string; constraint?: string; message?: string };
  const written = context.rolledBack ? { written: false as const } : {};
  switch (pg.code) {
    case '23505':
      // successors_ojs_id_key: another key's pending x_successor holds the id.
      if ((pg.constraint === 'jobs_ojs_id_key' || pg.constraint === 'successors_ojs_id_key') && context.requestedId !== undefined) {
        return new InvalidJobInputError([{ path: 'id', message: `a job with id ${context.requestedId} already exists` }], { cause: error });
      }
      break;
    case '22003':
      // Graphile stores priority and max_attempts as smallint.
      return new InvalidJobInputError(
        [{ path: 'priority', message: 'priority and max_attempts must fit a PostgreSQL smallint (-32768..32767)' }],
        { cause: error },
      );
    case '25P01':
      // Only the savepoint addJobWithClient opens raises it: the client is in autocommit, where
      // the key's lock would end with each statement.
      return new InvalidJobInputError(
        [{ path: 'client', message: 'is not inside a transaction: call addJobWithClient between BEGIN and COMMIT on the same client' }],
        { cause: error },
      );
    case '40001':
    case '40P01':
      return new BackendError(
        BACKEND,
        `${context.operation}: a concurrent enqueue of the same uniqueness key committed first (SQLSTATE ${pg.code}); retry the transaction`,
        { cause: error, ...written },
      );
    case '42P01':
    case '42883':
    case '3F000':
      return new BackendError(
        BACKEND,
        `${context.operation}: Graphile Worker's schema or the adapter's is not installed (SQLSTATE ${pg.code}); ` +
          'makeUniqueWorkerUtils, createGraphileWorkerBackend and a worker with makeUniqueJobsPreset install both',
        { cause: error, ...written },
      );
  }
  return new BackendError(
    BACKEND,
    `${context.operation} failed${pg.code ? ` (SQLSTATE ${pg.code})` : ''}: ${pg.message ?? String(error)}`,
    {
      cause: error,
      ...written,
    },
  );
}

/**
 * Whether `error` means the connection went away (no SQLSTATE from the server about the
 * statement itself), so a statement that commits may or may not have committed.
 */
export function isConnectionLoss(error: unknown): boolean {
  if (isOjsUniqueError(error)) return false;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return true; // ECONNRESET, "Connection terminated", …
  return code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03';
}

/**
 * Whether `error` (a driver error, or a typed error carrying one as its cause) is a serialisation
 * failure or a deadlock: PostgreSQL rolled the transaction back, so whoever owns it may run it again.
 */
export function isRetryableConflict(error: unknown): boolean {
  const retryable = (code: unknown) => code === '40001' || code === '40P01';
  return retryable((error as { code?: unknown } | null)?.code) || retryable((error as { cause?: { code?: unknown } } | null)?.cause?.code);
}

/**
 * How many times the adapter runs a transaction it owns (pool-based addJob, addJobs, enqueue)
 * that PostgreSQL rolled back as a serialisation failure or deadlock, before the typed error goes
 * to the caller. Such failures need a rare interleaving (reclaim emptying a key mid-enqueue, a
 * caller's stricter isolation level), so a few attempts are plenty.
 */
export const OWN_TRANSACTION_ATTEMPTS = 4;
