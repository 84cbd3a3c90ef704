/**
 * The few members of `pg` this adapter calls, as structural types, so that importing
 * `ojs-unique/graphile-worker` never needs `@types/pg` and any `pg`-compatible client works
 * (a `pg.PoolClient`, a `pg.Client`, Graphile's own `withPgClient` client).
 */
export interface PgQueryResultLike<R> {
  rows: R[];
}

/** A query as `pg` takes it in object form; `name` makes it a named prepared statement. */
export interface PgQueryConfigLike {
  text: string;
  values?: unknown[];
  name?: string;
}

export interface PgClientLike {
  /**
   * With option `preparedStatements` (default true) the enqueue's statements are sent in `pg`'s
   * object form instead, `query({ name, text, values })`, as every `pg` client takes it.
   */
  query<R = Record<string, unknown>>(text: string, values?: unknown[]): Promise<PgQueryResultLike<R>>;
}

interface PgConfigQueryClient {
  query<R>(config: PgQueryConfigLike): Promise<PgQueryResultLike<R>>;
}

/**
 * Runs `query`: a named (prepared) statement in `pg`'s object form, anything else as
 * `query(text, values)`, so a client that only has that form still works with
 * `preparedStatements: false`.
 */
export function runQuery<R>(client: PgClientLike, query: PgQueryConfigLike): Promise<PgQueryResultLike<R>> {
  return query.name === undefined ? client.query<R>(query.text, query.values) : (client as unknown as PgConfigQueryClient).query<R>(query);
}

export interface PgPoolClientLike extends PgClientLike {
  release(error?: Error | boolean): void;
}

export interface PgPoolLike extends PgClientLike {
  connect(): Promise<PgPoolClientLike>;
  end(): Promise<void>;
}

/**
 * `connectionString` with the OS user filled in when it names none, as libpq (psql) does.
 * node-pg falls back to `$USER` only, which services and containers often lack, and then fails
 * with "no PostgreSQL user name specified". A URL that names a user is returned unchanged.
 */
export function withDefaultUser(connectionString: string, osUser: () => string): string {
  let url: URL;
  try {
    url = new URL(connectionString);
  } catch {
    return connectionString; // not a URL (e.g. a keyword/value string): pg reads it as it is
  }
  if (url.username || process.env.PGUSER || process.env.USER) return connectionString;
  url.username = osUser();
  return url.toString();
}

/** pg's connect timeout on the pools the adapter creates (option `connectionTimeoutMillis`). */
export const DEFAULT_CONNECTION_TIMEOUT_MS = 10_000;

/**
 * A pg pool the adapter owns: a connect timeout, so a call during an outage settles, and the
 * error handlers Graphile asks for (an idle client's network error must not crash the process;
 * the next query on it fails and surfaces as a BackendError instead).
 */
export async function makeOwnPool(connectionString: string, max: number, connectionTimeoutMillis: number): Promise<PgPoolLike> {
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({ connectionString, max, connectionTimeoutMillis });
  const ignore = () => undefined;
  pool.on('error', ignore);
  pool.on('connect', (client) => client.on('error', ignore));
  return pool as unknown as PgPoolLike;
}
