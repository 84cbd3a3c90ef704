/**
 * The adapter's SQL (adapters/graphile-worker/sql/*.sql, compiled into generated/sql.ts), with
 * the schema placeholders filled in. Schema names are configuration, never data: they are
 * escaped here, once, and job data only ever reaches SQL as `$n` parameters.
 */
import { sqlFiles, type SqlFileName } from './generated/sql.js';

export interface SchemaNames {
  /** Graphile Worker's schema. (Default: `graphile_worker`, as in Graphile Worker.) */
  graphileSchema: string;
  /** The adapter's own schema: its ledger, functions and migrations. (Default: `ojs_unique`.) */
  uniqueSchema: string;
}

export const DEFAULT_GRAPHILE_SCHEMA = 'graphile_worker';
export const DEFAULT_UNIQUE_SCHEMA = 'ojs_unique';

export class GraphileWorkerSql {
  static readonly #byNames = new Map<string, GraphileWorkerSql>();

  /** One renderer per pair of schema names, shared, so each text is rendered once per process. */
  static for(names: SchemaNames): GraphileWorkerSql {
    const id = JSON.stringify([names.graphileSchema, names.uniqueSchema]);
    let sql = GraphileWorkerSql.#byNames.get(id);
    if (!sql) GraphileWorkerSql.#byNames.set(id, (sql = new GraphileWorkerSql(names)));
    return sql;
  }

  readonly names: SchemaNames;
  readonly #rendered = new Map<SqlFileName, string>();

  constructor(names: SchemaNames) {
    this.names = Object.freeze({ ...names });
  }

  text(name: SqlFileName): string {
    let text = this.#rendered.get(name);
    if (text === undefined) {
      const { graphileSchema, uniqueSchema } = this.names;
      // Longest placeholder names first is not needed: `\b` stops `:X` matching inside `:X_NAME`.
      text = sqlFiles[name]
        .replace(/:GRAPHILE_WORKER_SCHEMA_NAME\b/g, escapeLiteral(graphileSchema))
        .replace(/:GRAPHILE_WORKER_SCHEMA\b/g, escapeIdentifier(graphileSchema))
        .replace(/:OJS_UNIQUE_SCHEMA_NAME\b/g, escapeLiteral(uniqueSchema))
        .replace(/:OJS_UNIQUE_SCHEMA\b/g, escapeIdentifier(uniqueSchema));
      this.#rendered.set(name, text);
    }
    return text;
  }
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
