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
  query<R = Record<string, unknown>>(text: string, values?: unknown[]): Promise<PgQueryResultLike<R>>;
  query<R = Record<string, unknown>>(config: PgQueryConfigLike): Promise<PgQueryResultLike<R>>;
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
