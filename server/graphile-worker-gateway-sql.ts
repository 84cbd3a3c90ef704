/**
 * The OJS gateway's SQL on Graphile Worker (server/sql/*.sql, compiled into
 * generated/graphile-worker-gateway-sql.ts), rendered for one pair of schemas with the adapter's
 * placeholders: the gateway's statements and tables live with the gateway, not in the adapter.
 */
import { translatePgError } from '../adapters/graphile-worker/graphile-worker-errors.js';
import type { PgClientLike } from '../adapters/graphile-worker/graphile-worker-pg.js';
import { renderSchemaPlaceholders, type SchemaNames } from '../adapters/graphile-worker/graphile-worker-sql.js';
import { gatewaySqlFiles, type GatewaySqlFileName } from './generated/graphile-worker-gateway-sql.js';

export type { GatewaySqlFileName };

export class GatewaySql {
  static readonly #byNames = new Map<string, GatewaySql>();

  /** One renderer per pair of schema names, shared, so each text is rendered once per process. */
  static for(names: SchemaNames): GatewaySql {
    const id = JSON.stringify([names.workerSchema, names.uniqueSchema]);
    let sql = GatewaySql.#byNames.get(id);
    if (!sql) GatewaySql.#byNames.set(id, (sql = new GatewaySql(names)));
    return sql;
  }

  readonly #rendered = new Map<GatewaySqlFileName, string>();

  private constructor(readonly names: SchemaNames) {}

  text(name: GatewaySqlFileName): string {
    let text = this.#rendered.get(name);
    if (text === undefined) this.#rendered.set(name, (text = renderSchemaPlaceholders(gatewaySqlFiles[name], this.names)));
    return text;
  }

  /**
   * A function running one statement on `client` (or `on`), after `ready`, answering its rows. One
   * statement in autocommit: failed with an answer from the server, it wrote nothing; without one
   * (the connection lost), it may have. Errors are translated once, here.
   */
  runner(client: PgClientLike, ready?: () => Promise<void>) {
    return async <R>(name: GatewaySqlFileName, values: unknown[], operation: string, on: PgClientLike = client): Promise<R[]> => {
      if (ready) await ready();
      try {
        return (await on.query<R>(this.text(name), values)).rows;
      } catch (error) {
        throw translatePgError(error, { operation, rolledBack: typeof (error as { code?: unknown }).code === 'string' });
      }
    };
  }
}
