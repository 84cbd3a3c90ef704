/**
 * `ojs-unique doctor`'s checks (cli/cli-doctor.ts prints them), here so that cli/ reaches the
 * adapters through server/. Reads only (INFO, CONFIG GET, SCAN, GET; catalog queries): never
 * writes to the store.
 *
 * Checked: the installed bullmq and graphile-worker against the supported ranges (package.json
 * peerDependencies); with a Redis, its version, `maxmemory-policy` (BullMQ needs `noeviction`: an
 * evicted index entry or job hash lets a duplicate in) and the sidecar layout version of every
 * namespace under the prefix; with a database, the adapter schema's version, the role's
 * privileges on both schemas, and whether the connection keeps its session (a transaction-mode
 * pooler does not).
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { SIDECAR_LAYOUT_VERSION, globLiteral } from '../adapters/bullmq/bullmq-sidecar-keys.js';
import { judgeInstall, readInstallState } from '../adapters/graphile-worker/graphile-worker-install-state.js';
import { MIGRATIONS, SCHEMA_VERSION } from '../adapters/graphile-worker/graphile-worker-schema.js';
import { withDefaultUser } from '../adapters/graphile-worker/graphile-worker-pg.js';
import { GraphileWorkerSql } from '../adapters/graphile-worker/graphile-worker-sql.js';

/** The oldest Redis BullMQ 6 supports (its documentation: 6.2 or newer). */
const MIN_REDIS = '6.2.0';

interface Report {
  ok(what: string): void;
  problem(what: string, fix: string): void;
}

/** One check's answer: `fix` only for a problem. */
export interface DoctorFinding {
  status: 'ok' | 'problem';
  what: string;
  fix?: string;
}

export interface DoctorOptions {
  redisUrl?: string;
  /** BullMQ key prefix. (Default: `bull`.) */
  prefix?: string;
  databaseUrl?: string;
  graphileSchema?: string;
  uniqueSchema?: string;
}

/** Runs every check the options allow, reading only; the findings in order. */
export async function runDoctor(options: DoctorOptions): Promise<DoctorFinding[]> {
  const findings: DoctorFinding[] = [];
  const report: Report = {
    ok: (what) => findings.push({ status: 'ok', what }),
    problem: (what, fix) => findings.push({ status: 'problem', what, fix }),
  };
  const peers = (createRequire(import.meta.url)('ojs-unique/package.json') as { peerDependencies: Record<string, string> })
    .peerDependencies;
  const { redisUrl, databaseUrl } = options;
  checkInstalled('bullmq', peers.bullmq!, report, redisUrl !== undefined);
  checkInstalled('graphile-worker', peers['graphile-worker']!, report, databaseUrl !== undefined);
  if (redisUrl === undefined && databaseUrl === undefined) {
    report.problem('no store given, nothing connected to', 'pass --redis-url and/or --database-url (or set REDIS_URL / DATABASE_URL)');
  }
  if (redisUrl !== undefined) await checkRedis(redisUrl, options.prefix ?? 'bull', report);
  if (databaseUrl !== undefined) await checkPostgres(databaseUrl, options.graphileSchema, options.uniqueSchema, report);
  return findings;
}

function checkInstalled(name: string, range: string, report: Report, needed: boolean): void {
  let version: string;
  try {
    version = installedVersion(name);
  } catch {
    if (needed) report.problem(`${name} is not installed`, `npm install ${name}@"${range}"`);
    else report.ok(`${name} is not installed (not needed without its store)`);
    return;
  }
  if (inRange(version, range)) report.ok(`${name} ${version} is in the supported range ${range}`);
  else report.problem(`${name} ${version} is outside the supported range ${range}`, `install ${name}@"${range}"`);
}

async function checkRedis(url: string, prefix: string, report: Report): Promise<void> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1, retryStrategy: () => null, lazyConnect: true });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
  } catch (error) {
    report.problem(`cannot connect to Redis (${(error as Error).message})`, 'check --redis-url and that Redis is up');
    redis.disconnect();
    return;
  }
  try {
    const info = await redis.info('server');
    const version = /redis_version:([\d.]+)/.exec(info)?.[1] ?? 'unknown';
    if (compareVersions(version, MIN_REDIS) >= 0) report.ok(`Redis ${version}`);
    else report.problem(`Redis ${version} is older than ${MIN_REDIS}, which BullMQ 6 needs`, `upgrade Redis to ${MIN_REDIS} or newer`);
    let policy: string | null = null;
    try {
      policy = ((await redis.config('GET', 'maxmemory-policy')) as string[])[1] ?? null;
    } catch {
      // Managed Redis often refuses CONFIG: say so rather than guess.
    }
    if (policy === null) {
      report.problem('cannot read maxmemory-policy (CONFIG GET refused)', 'make sure the server runs with maxmemory-policy noeviction');
    } else if (policy === 'noeviction') {
      report.ok('maxmemory-policy is noeviction');
    } else {
      report.problem(
        `maxmemory-policy is ${policy}: Redis may evict BullMQ's jobs and the uniqueness index, letting duplicates in`,
        'set maxmemory-policy noeviction',
      );
    }
    await checkLayout(redis, prefix, report);
  } catch (error) {
    report.problem(`Redis refused a read (${(error as Error).message})`, 'check the user’s ACL permits INFO, CONFIG GET, SCAN and GET');
  } finally {
    redis.disconnect();
  }
}

/** Every sidecar namespace's layout key under the prefix (`…ojs:layout`, `…ojs:global:layout`) against this package's. */
async function checkLayout(redis: Redis, prefix: string, report: Report): Promise<void> {
  const found = new Map<string, string | null>();
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${globLiteral(`${prefix}:`)}*ojs:*layout`, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) if (key.endsWith(':ojs:layout') || key.endsWith(':ojs:global:layout')) found.set(key, null);
  } while (cursor !== '0');
  for (const key of found.keys()) found.set(key, await redis.get(key));
  const other = [...found].filter(([, version]) => version !== String(SIDECAR_LAYOUT_VERSION));
  if (found.size === 0) report.ok(`no ojs-unique sidecar under prefix "${prefix}" yet (nothing added with a policy)`);
  else if (other.length === 0)
    report.ok(`sidecar layout ${SIDECAR_LAYOUT_VERSION} on all ${found.size} namespace(s) under prefix "${prefix}"`);
  else {
    report.problem(
      `${other.length} sidecar namespace(s) under prefix "${prefix}" are at layout ${[...new Set(other.map(([, v]) => v))].join(', ')}, this package writes layout ${SIDECAR_LAYOUT_VERSION}`,
      'run every producer on one ojs-unique release; see docs/bullmq.md on layout versions',
    );
  }
}

async function checkPostgres(
  url: string,
  graphileSchema: string | undefined,
  uniqueSchema: string | undefined,
  report: Report,
): Promise<void> {
  let sql: GraphileWorkerSql;
  try {
    sql = new GraphileWorkerSql({ workerSchema: graphileSchema ?? 'graphile_worker', uniqueSchema: uniqueSchema ?? 'ojs_unique' });
  } catch (error) {
    report.problem(`bad schema name (${(error as Error).message})`, 'pass a valid --graphile-schema / --unique-schema');
    return;
  }
  const { workerSchema, uniqueSchema: adapterSchema } = sql.names;
  // The OS user where the URL names none and $USER is unset, as the gateway and the adapter connect.
  const client = new pg.Client({ connectionString: withDefaultUser(url, () => userInfo().username), connectionTimeoutMillis: 10_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (error) {
    report.problem(`cannot connect to PostgreSQL (${(error as Error).message})`, 'check --database-url and that PostgreSQL is up');
    return;
  }
  try {
    const { rows: server } = await client.query<{ version: string; role: string }>(
      'select current_setting($1) as version, current_user as role',
      ['server_version'],
    );
    report.ok(`PostgreSQL ${server[0]!.version}, connected as role "${server[0]!.role}"`);
    const state = await readInstallState(client, sql);
    const verdict = judgeInstall(state, sql, { version: SCHEMA_VERSION, migrations: MIGRATIONS.map((m) => m.id) });
    if (verdict.kind === 'current')
      report.ok(`adapter schema "${adapterSchema}" is at schema version ${SCHEMA_VERSION}, bound to "${workerSchema}"`);
    else if (verdict.kind === 'install') report.problem(verdict.why, 'run `ojs-unique migrate` (with a role that may create schemas)');
    else report.problem(verdict.error.message, 'see the message; docs/graphile-worker.md, "Schema versions"');
    await checkPrivileges(client, workerSchema, adapterSchema, report);
    await checkPooler(client, report);
  } catch (error) {
    report.problem(`PostgreSQL refused a read (${(error as Error).message})`, 'check the role may read the catalogs');
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** What the runtime role needs: USAGE on both schemas, DML on the ledger and Graphile's jobs table. */
async function checkPrivileges(client: pg.Client, workerSchema: string, uniqueSchema: string, report: Report): Promise<void> {
  const { rows } = await client.query<{ what: string; granted: boolean | null }>(
    `select what, case when exists (select 1 from pg_namespace where nspname = s) then
              case when t is null then has_schema_privilege(s, 'USAGE')
                   when to_regclass(format('%I.%I', s, t)) is null then null
                   else has_table_privilege(format('%I.%I', s, t), p) end end as granted
       from (values ($1::text, null::text, null::text, format('USAGE on schema %I', $1::text)),
                    ($2, null, null, format('USAGE on schema %I', $2::text)),
                    ($1, '_private_jobs', 'SELECT, INSERT, UPDATE, DELETE', format('SELECT, INSERT, UPDATE, DELETE on %I._private_jobs', $1::text)),
                    ($2, 'jobs', 'SELECT, INSERT, UPDATE, DELETE', format('SELECT, INSERT, UPDATE, DELETE on %I.jobs', $2::text))) v(s, t, p, what)`,
    [workerSchema, uniqueSchema],
  );
  const missing = rows.filter((row) => row.granted === false).map((row) => row.what);
  if (missing.length === 0) report.ok('the role has USAGE on both schemas and DML on their job tables (where they exist)');
  else report.problem(`the role lacks ${missing.join('; ')}`, 'GRANT them (docs/graphile-worker.md, "Separate install and runtime roles")');
}

/**
 * A transaction-mode pooler (PgBouncer `pool_mode = transaction`, or statement) hands each
 * transaction any server connection: a session setting made by one statement is gone, or the
 * backend process id changes, by the next. Graphile Worker's LISTEN/NOTIFY and the adapter's
 * prepared statements need a session (or `preparedStatements: false`).
 */
async function checkPooler(client: pg.Client, report: Report): Promise<void> {
  // A custom setting, not application_name: PgBouncer re-applies application_name (a parameter it
  // tracks) on whichever server connection it hands out, which would hide the pooler.
  await client.query(`select set_config('ojs_unique.doctor_probe', 'session', false)`);
  const pids = new Set<number>();
  let kept = true;
  for (let i = 0; i < 5; i++) {
    const { rows } = await client.query<{ pid: number; name: string }>(
      `select pg_backend_pid() as pid, current_setting('ojs_unique.doctor_probe', true) as name`,
    );
    pids.add(rows[0]!.pid);
    if (rows[0]!.name !== 'session') kept = false;
  }
  if (pids.size === 1 && kept) report.ok('the connection keeps its session (no transaction-mode pooler in between)');
  else {
    report.problem(
      'the connection does not keep its session: a transaction-mode pooler (e.g. PgBouncer pool_mode = transaction) is in between',
      'connect Graphile Worker directly or through a session-mode pool; for enqueues only, set preparedStatements: false (--no-prepared-statements)',
    );
  }
}

/** The version of the package `name` resolves to: its package.json found above its entry (graphile-worker exports no `./package.json`). */
function installedVersion(name: string): string {
  let dir = dirname(createRequire(import.meta.url).resolve(name));
  for (;;) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const manifest = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (manifest.name === name && manifest.version) return manifest.version;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no package.json of ${name}`);
    dir = parent;
  }
}

/** `>=a <b` ranges as package.json states them (each part a comparator on x.y.z). */
export function inRange(version: string, range: string): boolean {
  return range.split(/\s+/).every((part) => {
    const match = /^(>=|<=|>|<|=)?(\d+\.\d+\.\d+)$/.exec(part);
    if (!match) return false;
    const c = compareVersions(version, match[2]!);
    switch (match[1]) {
      case '>=':
        return c >= 0;
      case '<=':
        return c <= 0;
      case '>':
        return c > 0;
      case '<':
        return c < 0;
      default:
        return c === 0;
    }
  });
}

function compareVersions(a: string, b: string): number {
  const pa = a.split(/[.-]/).map((n) => Number.parseInt(n, 10) || 0);
  const pb = b.split(/[.-]/).map((n) => Number.parseInt(n, 10) || 0);
  for (let i = 0; i < 3; i++) if (pa[i] !== pb[i]) return (pa[i] ?? 0) - (pb[i] ?? 0);
  return 0;
}
