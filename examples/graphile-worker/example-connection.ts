/**
 * What the three Graphile Worker examples share: the database (`DATABASE_URL`, default
 * `postgres://127.0.0.1:5432/test`) and their own schema names, so running them touches neither
 * a real Graphile Worker install nor the tests.
 */
import { userInfo } from 'node:os';
import pg from 'pg';

/**
 * `OJS_EXAMPLE_SALT` (letters, digits, `_`), when set, is appended to the schema names: the tests
 * set it, so that two runs on one database never share schemas.
 */
export function named(name: string): string {
  const salt = process.env.OJS_EXAMPLE_SALT;
  if (!salt) return name;
  if (!/^\w+$/.test(salt)) throw new Error('OJS_EXAMPLE_SALT: letters, digits and "_" only');
  return `${name}_${salt}`;
}

export const GRAPHILE_SCHEMA = named('ojs_example_graphile_worker');
export const UNIQUE_SCHEMA = named('ojs_example_unique');
/** The transactional example's business tables. */
export const SHOP_SCHEMA = named('ojs_example_shop');

/**
 * `DATABASE_URL`, else `postgres://127.0.0.1:5432/test`. A URL without a user gets the OS
 * account's name when neither `PGUSER` nor `USER` is set (some containers), as psql does.
 */
export function databaseUrl(): string {
  const connectionString = process.env.DATABASE_URL ?? 'postgres://127.0.0.1:5432/test';
  if (process.env.PGUSER || process.env.USER || !URL.canParse(connectionString)) return connectionString;
  const url = new URL(connectionString);
  if (!url.username) url.username = userInfo().username;
  return url.toString();
}

export function examplePool(): pg.Pool {
  const pool = new pg.Pool({ connectionString: databaseUrl(), max: 5 });
  pool.on('error', (error) => console.error('idle client error', error));
  pool.on('connect', (client) => client.on('error', (error) => console.error('client error', error)));
  return pool;
}

/** Each example starts from empty schemas, so its output is the same on every run. */
export async function resetExampleSchemas(pool: pg.Pool): Promise<void> {
  for (const schema of [UNIQUE_SCHEMA, GRAPHILE_SCHEMA, SHOP_SCHEMA]) await pool.query(`drop schema if exists ${schema} cascade`);
}
