/**
 * The graphile-config preset: add it to your worker's (and your worker utils') preset and every
 * Graphile `migrate()` (each `run()`, `runOnce()`, `makeWorkerUtils()` start) also installs or
 * upgrades the adapter's schema and re-checks its AFTER DELETE trigger, after Graphile's own
 * migrations. A Graphile migration that recreated `_private_jobs` therefore cannot leave the
 * ledger without its trigger. When Graphile's schema lacks something the adapter relies on
 * (graphile-worker-host.ts), the hook logs a warning and leaves the adapter's schema alone: the
 * worker still starts and plain adds work; unique adds fail with a `BackendError` naming it.
 *
 * ```ts
 * const preset = { extends: [WorkerPreset, makeUniqueJobsPreset()] };
 * await run({ preset, pgPool, taskList: withUniqueHelpers(taskList) });
 * ```
 */
import type {} from 'graphile-worker'; // the GraphileConfig.* global types
import { describeUnmet } from './graphile-worker-host.js';
import { installUniqueJobsSchema } from './graphile-worker-schema.js';
import { InvalidJobInputError } from '../../src/errors.js';
import { DEFAULT_UNIQUE_SCHEMA, GraphileWorkerSql, schemaNameIssues } from './graphile-worker-sql.js';
import type { PgClientLike } from './graphile-worker-pg.js';

export interface UniqueJobsPresetOptions {
  /** The adapter's own schema. (Default: `ojs_unique`.) Graphile's is the preset's `worker.schema`. */
  uniqueSchema?: string;
}

/** The package version the plugin reports to graphile-config. */
const PLUGIN_VERSION = '0.1.0';

export function makeUniqueJobsPreset(options: UniqueJobsPresetOptions = {}): GraphileConfig.Preset {
  const uniqueSchema = options.uniqueSchema ?? DEFAULT_UNIQUE_SCHEMA;
  const issues = schemaNameIssues(uniqueSchema, 'uniqueSchema');
  if (issues.length > 0) throw new InvalidJobInputError(issues);
  const plugin: GraphileConfig.Plugin = {
    name: `OjsUniqueJobsPlugin(${uniqueSchema})`,
    version: PLUGIN_VERSION,
    description: 'OJS unique jobs: installs the ojs-unique ledger and its trigger after Graphile Worker migrates',
    worker: {
      hooks: {
        async postmigrate(ctx, event) {
          const sql = new GraphileWorkerSql(
            { workerSchema: ctx.workerSchema, uniqueSchema },
            { workerSchema: 'worker.schema', uniqueSchema: 'uniqueSchema' },
          );
          const result = await installUniqueJobsSchema(event.client as unknown as PgClientLike, sql);
          if (!result.installed) {
            ctx.logger.warn(
              `ojs-unique: Graphile Worker's schema "${ctx.workerSchema}" lacks what ojs-unique relies on (${result.unmet.map(describeUnmet).join('; ')}); ` +
                `schema "${uniqueSchema}" was left as it is. Unique adds will fail until then; this worker and plain adds are unaffected.`,
            );
          }
        },
      },
    },
  };
  return { plugins: [plugin] };
}
