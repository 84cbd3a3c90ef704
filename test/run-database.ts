/**
 * The PostgreSQL database of this test process. Graphile Worker announces a breaking migration on
 * one `NOTIFY` channel for the whole database, and every runner of that database shuts down when
 * it hears one: two runs, or two mocha workers of one run, migrating schemas in one database stop
 * each other's runners. So every process that runs test files has a database of its own,
 * `ojs_test_<run salt>_<worker>` on the server of `DATABASE_URL` (default
 * `postgres://127.0.0.1:5432/test`), created before its first file (test/run-leftovers.ts) and
 * dropped at the end of a passing run.
 *
 * Loading this module points `DATABASE_URL` at that database, so the tests and the programs they
 * start (examples, the CLI) use it; the server's own URL stays in `OJS_TEST_SERVER_DATABASE_URL`,
 * inherited by mocha's workers.
 */
import { userInfo } from 'node:os';
import pg from 'pg';
import { withDefaultUser } from '../adapters/graphile-worker/graphile-worker-pg.js';
import { RUN_SALT } from './run-salt.js';

/** Where the run's databases are created: the database named there is only connected to. */
export const SERVER_DATABASE_URL = withDefaultUser(
  (process.env.OJS_TEST_SERVER_DATABASE_URL ??= process.env.DATABASE_URL ?? 'postgres://127.0.0.1:5432/test'),
  () => userInfo().username,
);

/** Every database of this run starts with this (escape `_` for LIKE). */
export const RUN_DATABASE_PREFIX = `ojs_test_${RUN_SALT}_`;

/** This process's database: mocha's parallel workers are numbered (MOCHA_WORKER_ID); a serial run is `s`. */
export const PROCESS_DATABASE = `${RUN_DATABASE_PREFIX}${process.env.MOCHA_WORKER_ID ?? 's'}`;

function urlFor(database: string): string {
  try {
    const url = new URL(SERVER_DATABASE_URL);
    url.pathname = `/${database}`;
    return url.toString();
  } catch {
    return `${SERVER_DATABASE_URL} dbname=${database}`; // a keyword/value string: the last dbname wins
  }
}

process.env.DATABASE_URL = urlFor(PROCESS_DATABASE);

function adminPool(): pg.Pool {
  const pool = new pg.Pool({ connectionString: SERVER_DATABASE_URL, max: 1, connectionTimeoutMillis: 5_000 });
  pool.on('error', () => undefined);
  return pool;
}

let created: Promise<void> | null = null;

/**
 * Creates this process's database unless it exists (a rerun with `OJS_TEST_SALT` reuses it).
 * Once per process; a server that does not answer (a run of the memory tests alone, without
 * PostgreSQL) is left to the tests that need it, which then fail saying so.
 */
export function ensureProcessDatabase(): Promise<void> {
  created ??= (async () => {
    const pool = adminPool();
    try {
      const { rowCount } = await pool.query('select 1 from pg_database where datname = $1', [PROCESS_DATABASE]);
      if (!rowCount) {
        await pool.query(`create database ${pg.escapeIdentifier(PROCESS_DATABASE)}`).catch((error: { code?: string }) => {
          if (error.code !== '42P04') throw error; // duplicate_database: made meanwhile
        });
      }
    } catch (error) {
      if ((error as { code?: string }).code === 'ECONNREFUSED') return;
      throw error;
    } finally {
      await pool.end();
    }
  })();
  return created;
}

/** The databases this run made (all processes'). */
export async function runDatabases(): Promise<string[]> {
  const pool = adminPool();
  try {
    const { rows } = await pool.query<{ name: string }>(`select datname as name from pg_database where datname like $1 order by datname`, [
      `${RUN_DATABASE_PREFIX.replace(/_/g, '\\_')}%`,
    ]);
    return rows.map((row) => row.name);
  } finally {
    await pool.end();
  }
}

/** Drops the run's databases (connections still open are ended: WITH (FORCE)) and the login roles its tests made. */
export async function dropRunDatabases(): Promise<string[]> {
  const names = await runDatabases();
  const pool = adminPool();
  try {
    for (const name of names) await pool.query(`drop database if exists ${pg.escapeIdentifier(name)} with (force)`);
    const { rows } = await pool.query<{ name: string }>(`select rolname as name from pg_roles where rolname like $1`, [
      `ojs\\_rt\\_${RUN_SALT}\\_%`,
    ]);
    for (const { name } of rows) await pool.query(`drop role if exists ${pg.escapeIdentifier(name)}`);
  } finally {
    await pool.end();
  }
  return names;
}
