/**
 * The handle of the Graphile adapter: one per entry point, over one pair of schemas (Graphile
 * Worker's and the adapter's own), the way BullMQ's adapter keeps one handle per queue
 * (bullmq-queue-handle.ts). Every enqueue, lookup and explain reads its schemas, SQL and options
 * from it instead of from the caller's options again.
 */
import { entryPointPolicies, type EntryPointPolicies, type EntryPointPolicyOptions } from '../../src/registered-policies.js';
import type { UniqueAddHook } from './graphile-worker-unique-add-hook.js';
import { DEFAULT_GRAPHILE_SCHEMA, DEFAULT_UNIQUE_SCHEMA, GraphileWorkerSql, type SchemaOptionNames } from './graphile-worker-sql.js';

/**
 * What every unique enqueue on one pair of schemas needs, worked out once per entry point (each
 * `makeUniqueWorkerUtils`, `withUniqueHelpers`, cron task, backend, or `addJobWithClient` call):
 * the rendered SQL of the two schemas and the enqueue's options with their defaults.
 */
export interface SchemaHandle {
  sql: GraphileWorkerSql;
  /** §5.2: let `replace` fence a running job instead of rejecting. */
  replaceActive: boolean;
  /** Send the enqueue's statements as named prepared statements (see GraphileWorkerSql.query). */
  preparedStatements: boolean;
  /** The entry point's registered `policies` and `reportOnly` (src/registered-policies.ts). */
  policies: EntryPointPolicies;
  /** The entry point's `onUniqueAdd` hook (graphile-worker-unique-add-hook.ts), or undefined. */
  onUniqueAdd: UniqueAddHook | undefined;
  /** Count duplicates on the job they met (docs/decisions.md, "Duplicate counts"). */
  countDuplicates: boolean;
}

export interface UniqueEnqueueOptions {
  /** The adapter's own schema. (Default: `ojs_unique`.) */
  uniqueSchema?: string;
  /** Graphile Worker's schema: the one the worker runs with. (Default: `graphile_worker`.) */
  workerSchema?: string;
  /** §5.2: let `replace` fence a running job instead of rejecting with state `active`. (Default: false.) */
  replaceActive?: boolean;
  /**
   * Send the enqueue's statements as named prepared statements, parsed once per connection. Set
   * false behind a pooler that cannot carry them across transactions (PgBouncer in transaction
   * mode before 1.21), as you would Graphile's own `preparedStatements`. (Default: true, as
   * Graphile Worker.)
   */
  preparedStatements?: boolean;
  /**
   * Count each duplicate add on the job it met: `duplicate_count` and `last_duplicate_at` on the
   * OJS job view (docs/decisions.md, "Duplicate counts"). Off, a duplicate answered from the
   * read-only snapshot writes nothing and the view has neither field. (Default: false.)
   */
  countDuplicates?: boolean;
}

/** @param optionNames what the caller's options call the two schemas, for the error refusing one. */
export function schemaHandle(
  options: UniqueEnqueueOptions & Partial<UniqueEntryPointOptions>,
  optionNames?: SchemaOptionNames,
): SchemaHandle {
  return {
    policies: entryPointPolicies(options),
    onUniqueAdd: options.onUniqueAdd,
    sql: GraphileWorkerSql.for(
      {
        workerSchema: options.workerSchema ?? DEFAULT_GRAPHILE_SCHEMA,
        uniqueSchema: options.uniqueSchema ?? DEFAULT_UNIQUE_SCHEMA,
      },
      optionNames,
    ),
    replaceActive: options.replaceActive ?? false,
    preparedStatements: options.preparedStatements ?? true,
    countDuplicates: options.countDuplicates ?? false,
  };
}

/** The options of the entry points that take registered policies (utils, task helpers, `addJobWithClient`). */
export interface UniqueEntryPointOptions extends UniqueEnqueueOptions, EntryPointPolicyOptions {
  /**
   * Called once per unique add this entry point settled, with its outcome (a deduplicated,
   * replaced or updated add included, which Graphile's own `events` never see). In
   * `addJobWithClient` it runs before your COMMIT: a rollback undoes the add it reported.
   * A hook that throws is ignored. (Default: none.)
   */
  onUniqueAdd?: UniqueAddHook;
}
