/**
 * Whether the adapter's schema is installed at this package's version, read without creating
 * anything: the catalogs (readable by every role) and the schema's `migrations` and `settings`
 * tables (SELECT). A start-up that finds it current writes nothing, so an application may run as
 * a role with only USAGE on the schemas, DML on their tables and EXECUTE on their functions, and
 * install with another role (`runUniqueJobsMigrations`, `ojs-unique migrate`).
 */
import { BackendError } from '../../src/errors.js';
import type { PgClientLike } from './graphile-worker-pg.js';
import { escapeIdentifier, type GraphileWorkerSql } from './graphile-worker-sql.js';

/** What the adapter's schema holds, as read by {@link readInstallState}. */
export interface InstallState {
  /** The schema and its `migrations` and `settings` tables exist. */
  installed: boolean;
  /** Applied migration ids, ascending (empty when not installed). */
  migrations: number[];
  /** The recorded schema version (null: not installed, or installed by a pre-release build, which recorded none). */
  version: number | null;
  /** The Graphile Worker schema it serves (null: never bound). */
  bound: string | null;
  /** The AFTER DELETE and AFTER UPDATE triggers on Graphile's `_private_jobs` are in place. */
  trigger: boolean;
}

/** Reads the state in two catalog-safe queries; the driver's errors are the caller's to translate. */
export async function readInstallState(client: PgClientLike, sql: GraphileWorkerSql): Promise<InstallState> {
  const { rows } = await client.query<{ schema_exists: boolean; tables_exist: boolean; trigger_exists: boolean }>(
    sql.text('read-install-state'),
  );
  const found = rows[0]!;
  if (!found.schema_exists || !found.tables_exist) {
    return { installed: false, migrations: [], version: null, bound: null, trigger: found.trigger_exists };
  }
  return { installed: true, ...(await readInstalledVersions(client, sql)), trigger: found.trigger_exists };
}

/** The migrations, version and binding recorded in the adapter's schema, whose tables exist. */
export async function readInstalledVersions(
  client: PgClientLike,
  sql: GraphileWorkerSql,
): Promise<Pick<InstallState, 'migrations' | 'version' | 'bound'>> {
  const { rows } = await client.query<{ migrations: number[]; version: number | null; bound: string | null }>(
    sql.text('read-installed-versions'),
  );
  return rows[0]!;
}

/** How an {@link InstallState} compares with what this package installs. */
export type InstallVerdict =
  | { kind: 'current' }
  /** An install (or upgrade, or the trigger again) is needed; `why` says what is missing. */
  | { kind: 'install'; why: string }
  /** Refused whoever installs: a pre-release build's schema, a newer package's, or one bound to another Graphile schema. */
  | { kind: 'refused'; error: BackendError };

export function judgeInstall(
  state: InstallState,
  sql: GraphileWorkerSql,
  expected: { version: number; migrations: readonly number[] },
): InstallVerdict {
  const { workerSchema, uniqueSchema } = sql.names;
  if (!state.installed) return { kind: 'install', why: `schema "${uniqueSchema}" is not installed` };
  const refusal =
    preReleaseSchemaError(sql, state, expected.version) ??
    newerSchemaError(uniqueSchema, state, expected) ??
    boundElsewhereError(sql, state.bound);
  if (refusal) return { kind: 'refused', error: refusal };
  if (state.version === null || state.version < expected.version) {
    return {
      kind: 'install',
      why: `schema "${uniqueSchema}" holds ${state.version === null ? 'no recorded schema version' : `schema version ${state.version}`}`,
    };
  }
  const missing = expected.migrations.filter((id) => !state.migrations.includes(id));
  if (missing.length > 0) return { kind: 'install', why: `schema "${uniqueSchema}" lacks migration ${missing.join(', ')}` };
  if (state.bound === null) return { kind: 'install', why: `schema "${uniqueSchema}" is not bound to a Graphile Worker schema yet` };
  if (!state.trigger) {
    return {
      kind: 'install',
      why: `a trigger of the adapter on "${workerSchema}"._private_jobs is missing (a Graphile Worker migration that recreates the table drops them)`,
    };
  }
  return { kind: 'current' };
}

/**
 * The refusal of a schema a pre-release build installed: it recorded migrations but no `version`
 * row (pre-release builds recorded theirs as `schema_version`, or none). No release upgrades such a
 * schema; the error says how to drop it and install again. Null for any other state (a schema
 * whose tables are still empty is being installed, in the installer's own transaction).
 */
export function preReleaseSchemaError(
  sql: GraphileWorkerSql,
  state: Pick<InstallState, 'version' | 'migrations'>,
  required: number,
): UniqueSchemaVersionError | null {
  if (state.version !== null || state.migrations.length === 0) return null;
  return new UniqueSchemaVersionError(sql, {
    found: null,
    required,
    why: `schema "${sql.names.uniqueSchema}" was installed by a pre-release build of ojs-unique (migrations ${state.migrations.join(', ')} recorded, no schema version)`,
    preRelease: true,
  });
}

/** The refusal of a schema a newer package installed or migrated; null when it is not newer. */
export function newerSchemaError(
  uniqueSchema: string,
  state: Pick<InstallState, 'version' | 'migrations'>,
  expected: { version: number; migrations: readonly number[] },
): BackendError | null {
  const stored = state.version ?? 0;
  const newest = Math.max(0, ...state.migrations);
  const known = Math.max(0, ...expected.migrations);
  if (stored <= expected.version && newest <= known) return null;
  const [theirs, ours] =
    stored > expected.version
      ? [`schema version ${stored}`, `schema version ${expected.version}`]
      : [`migration ${newest}`, `migration ${known}`];
  return new BackendError(
    'graphile-worker',
    `the database holds a newer ojs-unique ${theirs} (schema "${uniqueSchema}") than this package's ${ours}: upgrade the ojs-unique package. ` +
      'Nothing was installed: its older functions stay off the newer ones.',
    { written: false },
  );
}

/** The refusal of a ledger bound to another Graphile Worker schema; null when unbound or bound to this one. */
export function boundElsewhereError(sql: GraphileWorkerSql, boundTo: string | null | undefined): BackendError | null {
  const { workerSchema, uniqueSchema } = sql.names;
  if (boundTo === null || boundTo === undefined || boundTo === workerSchema) return null;
  return new BackendError(
    'graphile-worker',
    `schema "${uniqueSchema}" already serves Graphile Worker schema "${boundTo}", not "${workerSchema}": give each Graphile Worker schema its own ojs-unique schema`,
    { written: false },
  );
}

/**
 * The adapter's schema is not installed at this package's version (missing, older, without its
 * trigger), and this start-up did not install it: `migrate: false`, or a role that may not
 * (SQLSTATE 42501, the `cause`). Nothing was written. Install it with a role that may create
 * schemas (`ojs-unique migrate`, `runUniqueJobsMigrations`), then start again.
 *
 * With `preRelease`, a pre-release build of ojs-unique installed the schema, and no entry point
 * installs over it: drop it and install again (the message gives both commands).
 */
export class UniqueSchemaVersionError extends BackendError {
  /** The adapter's schema. */
  readonly schema: string;
  /** The schema version it holds; null when not installed, or installed by a pre-release build. */
  readonly found: number | null;
  /** The schema version this package needs. */
  readonly required: number;
  /** A pre-release build installed the schema: no release upgrades it; drop it and install again. */
  readonly preRelease: boolean;
  constructor(
    sql: GraphileWorkerSql,
    details: { found: number | null; required: number; why: string; cause?: unknown; preRelease?: boolean },
  ) {
    const { workerSchema, uniqueSchema } = sql.names;
    const found = details.found === null ? 'no ojs-unique schema version' : `ojs-unique schema version ${details.found}`;
    const migrate = `\`npx ojs-unique migrate --database-url <url> --graphile-schema ${workerSchema} --unique-schema ${uniqueSchema}\``;
    super(
      'graphile-worker',
      details.preRelease
        ? `${details.why}, which no release of ojs-unique upgrades; this package needs schema version ${details.required}. ` +
            `Reinstall it: drop the schema (\`drop schema ${escapeIdentifier(uniqueSchema)} cascade\`, which also drops its trigger on ` +
            `${escapeIdentifier(workerSchema)}._private_jobs; Graphile Worker's jobs stay, without their uniqueness records), then install it again: ` +
            `${migrate}, runUniqueJobsMigrations() from ojs-unique/graphile-worker, or any start-up with migrate: true. Nothing was written.`
        : `${details.why}: the database holds ${found}, this package needs schema version ${details.required}. ` +
            `Install or upgrade it with a role that may create schemas: ${migrate}, ` +
            'or runUniqueJobsMigrations() from ojs-unique/graphile-worker; then start again. Nothing was written.',
      { written: false, ...(details.cause === undefined ? {} : { cause: details.cause }) },
    );
    this.name = 'UniqueSchemaVersionError';
    this.schema = uniqueSchema;
    this.found = details.found;
    this.required = details.required;
    this.preRelease = details.preRelease ?? false;
  }
}
