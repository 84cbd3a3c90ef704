/**
 * The OJS gateway's SQL on Graphile Worker (server/sql/*.sql, compiled into
 * generated/graphile-worker-gateway-sql.ts), rendered for one pair of schemas with the adapter's
 * placeholders: the gateway's statements and tables live with the gateway, not in the adapter.
 */
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
}
