/**
 * The adapter's SQL (adapters/graphile-worker/sql/*.sql, compiled into generated/sql.ts), with
 * the schema placeholders filled in. Schema names are configuration, never data: they are
 * escaped here, once, and job data only ever reaches SQL as `$n` parameters.
 */
import { hash } from 'node:crypto';
import { InvalidJobInputError, type ValidationIssue } from '../../src/errors.js';
import type { PgQueryConfigLike } from './graphile-worker-pg.js';
import { sqlFiles, type SqlFileName } from './generated/sql.js';

export interface SchemaNames {
  /** Graphile Worker's schema. (Default: `graphile_worker`, as in Graphile Worker.) */
  workerSchema: string;
  /** The adapter's own schema: its ledger, functions and migrations. (Default: `ojs_unique`.) */
  uniqueSchema: string;
}

export const DEFAULT_GRAPHILE_SCHEMA = 'graphile_worker';
export const DEFAULT_UNIQUE_SCHEMA = 'ojs_unique';

/**
 * The option each name came from, for the error that refuses it: `makeUniqueWorkerUtils` takes
 * Graphile's schema as Graphile's own `schema`, a preset as `worker.schema`.
 */
export type SchemaOptionNames = { [K in keyof SchemaNames]: string };

/** The adapter's own option names (`addJobWithClient`, `withUniqueHelpers`, the backend, reclaim). */
const OWN_OPTION_NAMES: SchemaOptionNames = { workerSchema: 'workerSchema', uniqueSchema: 'uniqueSchema' };

/** PostgreSQL's identifier limit (NAMEDATALEN - 1): a longer name is silently truncated. */
const MAX_IDENTIFIER_BYTES = 63;

/**
 * Refuses a schema name the adapter cannot substitute safely, naming the option it came from.
 * Quoting makes any other character safe, but not these:
 *  - `$`: the adapter's function bodies are `$$ … $$` strings, and a `$$` inside a name would
 *    end one early (the rest of the name would run as SQL);
 *  - NUL, which PostgreSQL cannot store in a name;
 *  - an empty name, or one over 63 bytes, which PostgreSQL would truncate, so two long names
 *    could silently share one schema.
 */
export function checkSchemaNames(names: SchemaNames, options: SchemaOptionNames = OWN_OPTION_NAMES): void {
  const issues = (['workerSchema', 'uniqueSchema'] as const).flatMap((which) => schemaNameIssues(names[which], options[which]));
  if (issues.length > 0) throw new InvalidJobInputError(issues);
}

/** The problems with one schema name given as option `path` (see {@link checkSchemaNames}). */
export function schemaNameIssues(name: unknown, path: string): ValidationIssue[] {
  if (typeof name !== 'string' || name.length === 0) return [{ path, message: 'must be a non-empty string (a PostgreSQL schema name)' }];
  if (name.includes('$')) return [{ path, message: 'must not contain "$": the adapter\'s SQL functions are $$-quoted' }];
  if (name.includes('\u0000')) return [{ path, message: 'must not contain a NUL character' }];
  if (Buffer.byteLength(name, 'utf8') > MAX_IDENTIFIER_BYTES) {
    return [{ path, message: `must be at most ${MAX_IDENTIFIER_BYTES} bytes (PostgreSQL would truncate it)` }];
  }
  return [];
}

export class GraphileWorkerSql {
  static readonly #byNames = new Map<string, GraphileWorkerSql>();

  /** One renderer per pair of schema names, shared, so each text is rendered once per process. */
  static for(names: SchemaNames, options?: SchemaOptionNames): GraphileWorkerSql {
    const id = JSON.stringify([names.workerSchema, names.uniqueSchema]);
    let sql = GraphileWorkerSql.#byNames.get(id);
    if (!sql) GraphileWorkerSql.#byNames.set(id, (sql = new GraphileWorkerSql(names, options)));
    return sql;
  }

  readonly names: SchemaNames;
  readonly #rendered = new Map<SqlFileName, string>();
  readonly #statementNames = new Map<SqlFileName, string>();

  /** @throws InvalidJobInputError naming the option (from `options`) of a name it refuses. */
  constructor(names: SchemaNames, options?: SchemaOptionNames) {
    checkSchemaNames(names, options);
    this.names = Object.freeze({ ...names });
  }

  /**
   * File `name` with `values`, as a query config. With `prepared`, a named statement: `pg` parses
   * it once per connection and then only binds, so PostgreSQL skips the parse and analysis of the
   * statement (the function-call lookup with its 15 typed parameters) on every later call.
   * Graphile's own `addJob` sends its text unnamed every time.
   *
   * The name carries a digest of the rendered text: `pg` refuses one name for two texts on a
   * connection, and two schema pairs (or two versions of the adapter) sharing a pool must never
   * collide. It stays under PostgreSQL's 63-byte name limit.
   */
  query(name: SqlFileName, values: unknown[], prepared: boolean): PgQueryConfigLike {
    const text = this.text(name);
    if (!prepared) return { text, values };
    let statement = this.#statementNames.get(name);
    if (statement === undefined)
      this.#statementNames.set(name, (statement = `ojsu:${name.slice(0, 40)}:${hash('sha256', text, 'hex').slice(0, 16)}`));
    return { name: statement, text, values };
  }

  text(name: SqlFileName): string {
    let text = this.#rendered.get(name);
    if (text === undefined) this.#rendered.set(name, (text = renderSchemaPlaceholders(sqlFiles[name], this.names)));
    return text;
  }
}

/**
 * `text` with the schema placeholders filled in, escaped: `:GRAPHILE_WORKER_SCHEMA` and
 * `:OJS_UNIQUE_SCHEMA` as identifiers, `…_NAME` as string literals. The gateway's SQL
 * (server/sql) is rendered the same way.
 */
export function renderSchemaPlaceholders(text: string, names: SchemaNames): string {
  const { workerSchema, uniqueSchema } = names;
  const values: Record<string, string> = {
    GRAPHILE_WORKER_SCHEMA_NAME: escapeLiteral(workerSchema),
    GRAPHILE_WORKER_SCHEMA: escapeIdentifier(workerSchema),
    OJS_UNIQUE_SCHEMA_NAME: escapeLiteral(uniqueSchema),
    OJS_UNIQUE_SCHEMA: escapeIdentifier(uniqueSchema),
  };
  // One pass with a replacer function: a replacement string would have its `$$`, `$&`, `$'`
  // and `` $` `` expanded by String.replace, and a second pass would substitute inside a name
  // already inserted (a schema called ":OJS_UNIQUE_SCHEMA"). `\b` stops `:X` matching inside
  // `:X_NAME`.
  return text.replace(
    /:(GRAPHILE_WORKER_SCHEMA_NAME|GRAPHILE_WORKER_SCHEMA|OJS_UNIQUE_SCHEMA_NAME|OJS_UNIQUE_SCHEMA)\b/g,
    (_match, placeholder: string) => values[placeholder]!,
  );
}

/** PostgreSQL identifier quoting, as `pg`'s `escapeIdentifier` does it. */
export function escapeIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** PostgreSQL string literal quoting, as `pg`'s `escapeLiteral` does it (E'' when backslashes occur). */
export function escapeLiteral(value: string): string {
  const quoted = `'${value.replace(/'/g, "''").replace(/\\/g, '\\\\')}'`;
  return value.includes('\\') ? ` E${quoted}` : quoted;
}
