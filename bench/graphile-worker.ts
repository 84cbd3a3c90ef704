/**
 * The Graphile Worker adapter against plain `addJob`, measured in the same run: the issue's table
 * (ratios) and where each path's time goes. Not a test: machines are shared and noisy, so read the
 * ratios and the per-call counts, not the absolute figures.
 *
 *   npm run bench:graphile-worker                  # DATABASE_URL, default postgres://127.0.0.1:5432/test
 *   BENCH_DEPTH=1000000 npm run bench:graphile-worker   # also the depth ratio (fills 1M jobs: minutes)
 *
 * 1. Ratios. Plain addJob, the unique insert (a new key per call), the duplicate path (`ignore`
 *    and `reject` on one existing key) and, for reference, addJob with a Graphile jobKey (a new
 *    key per call) and `replace` (one key) run in batches of BENCH_BATCH calls (default
 *    300), one batch of each per round, the order rotated every round, BENCH_ROUNDS rounds
 *    (default 10), sequentially (1 lane) and 20 in flight (20 lanes over a pool of 20). A round's
 *    ratio is a path's jobs/s over plain addJob's in that round; the table gives the median round
 *    and the range, so drift on the machine lands on both sides of every ratio.
 * 2. Breakdown per path, sequential on one connection, BENCH_BREAKDOWN_CALLS calls (default 500)
 *    per path, paths interleaved over 3 rounds: client latency median, Node CPU per call
 *    (process.cpuUsage), PostgreSQL CPU per call (the backend's utime+stime from /proc, when
 *    PostgreSQL runs on this host), heap inserts per call by table (pg_stat_user_tables.n_tup_ins
 *    deltas), and WAL records and bytes per call by resource manager, counted with pg_walinspect
 *    over the run's LSN range, keeping only transactions that wrote one of the bench's relations:
 *    other databases' load on the cluster does not enter it. Without pg_walinspect (it is
 *    created in the bench's database when the role may) WAL falls back to the cluster-wide
 *    pg_stat_wal delta, which other load inflates.
 * 3. Depth (BENCH_DEPTH > 0): the duplicate check, the unique insert and plain addJob against a
 *    table of BENCH_DEPTH jobs and against an empty schema pair, interleaved batch by batch;
 *    the ratio is median latency deep over empty.
 *
 * Uses its own schemas (ojs_bench_*), dropped at the start and the end; the tables start from a
 * baseline of BENCH_BASELINE jobs (default 10,000), each recorded under its own key.
 */
import { readFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import pg from 'pg';
import { makeUniqueWorkerUtils, type UniqueWorkerUtils } from '../adapters/graphile-worker/index.js';
import { withDefaultUser } from '../adapters/graphile-worker/graphile-worker-pg.js';

const GRAPHILE_SCHEMA = 'ojs_bench_graphile_worker';
const UNIQUE_SCHEMA = 'ojs_bench_unique';
const LANES = 20;
const BATCH = Number(process.env.BENCH_BATCH ?? 300);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const BREAKDOWN_CALLS = Number(process.env.BENCH_BREAKDOWN_CALLS ?? 500);
const DEPTH = Number(process.env.BENCH_DEPTH ?? 0);
/**
 * Jobs already in the tables when the bench starts. Not zero: right after a TRUNCATE the planner
 * sees near-empty tables and caches sequential-scan plans in the adapter's plpgsql functions; a
 * running install's tables are never empty.
 */
const BASELINE = Number(process.env.BENCH_BASELINE ?? 10_000);
const WARMUP = 200;
/** µs per clock tick: /proc reports CPU time in ticks of 1/CLK_TCK s, 100 on Linux. */
const TICK_US = 10_000;

const connectionString = withDefaultUser(process.env.DATABASE_URL ?? 'postgres://127.0.0.1:5432/test', () => userInfo().username);
const pool = new pg.Pool({ connectionString, max: LANES });
pool.on('error', () => undefined);
pool.on('connect', (client) => client.on('error', () => undefined));

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const quantile = (values: number[], q: number) => [...values].sort((a, b) => a - b)[Math.floor(values.length * q)]!;

async function analyze(graphileSchema: string, uniqueSchema: string): Promise<void> {
  await pool.query(`vacuum analyze "${graphileSchema}"._private_jobs, "${uniqueSchema}".jobs, "${uniqueSchema}".heads`);
}

/** `depth` Graphile jobs, each with its ledger record, the head of its own key: the table a busy install has. */
async function fill(depth: number): Promise<void> {
  const g = `"${GRAPHILE_SCHEMA}"`;
  const u = `"${UNIQUE_SCHEMA}"`;
  await pool.query(`insert into ${g}._private_tasks (identifier) values ('bench_depth') on conflict do nothing`);
  await pool.query(
    `insert into ${g}._private_jobs (task_id, payload, run_at, max_attempts)
     select (select id from ${g}._private_tasks where identifier = 'bench_depth'), json_build_object('n', n), now(), 25
     from generate_series(1, $1::int) n`,
    [depth],
  );
  // Each key's one record is its head.
  await pool.query(
    `insert into ${u}.jobs (job_id, ojs_id, fingerprint, type, queue, created_at, scheduled_at, max_attempts, priority, policy, head)
     select id, id::text, md5(id::text), 'bench_depth', 'default', now(), run_at, 25, 0, '{"states":["available"]}'::jsonb, true
     from ${g}._private_jobs j where not exists (select 1 from ${u}.jobs l where l.job_id = j.id)`,
  );
  await analyze(GRAPHILE_SCHEMA, UNIQUE_SCHEMA);
  // Write the bulk load out now, so its flush does not land on whichever path runs next.
  // CHECKPOINT needs superuser (or pg_checkpoint); without it the figures are only noisier.
  await pool.query('checkpoint').catch(() => undefined);
}

type Call = () => Promise<unknown>;

/** The paths of the table, on `utils`; `tag` keeps keys apart between phases. */
function paths(utils: UniqueWorkerUtils, tag: string): Record<string, Call> {
  let next = 0;
  const hot = { hot: tag };
  return {
    'plain addJob': () => utils.addJob('bench', { i: next++, tag }),
    // Graphile's own deduplication, for reference: a job key (replace mode), a new key per call.
    'addJob with Graphile jobKey': () => utils.addJob('bench', { i: next++, tag }, { jobKey: `${tag}:${next++}` }),
    'unique insert': () => utils.addJob('bench', { i: next++, tag }, { unique: { keys: ['type', 'args'] } }),
    'duplicate (ignore)': () => utils.addJob('bench', hot, { unique: { keys: ['type', 'args'], on_conflict: 'ignore' } }),
    // A reject duplicate throws DuplicateJobError: that is its answer.
    'duplicate (reject)': () =>
      utils.addJob('bench', hot, { unique: { keys: ['type', 'args'], on_conflict: 'reject' } }).catch((error: unknown) => {
        if ((error as { code?: string }).code !== 'duplicate') throw error;
      }),
    replace: () => utils.addJob('bench', { hot: `${tag}:replace` }, { unique: { keys: ['type', 'args'], on_conflict: 'replace' } }),
  };
}

/** `n` calls of `call` over `lanes` lanes; jobs per second. */
async function batch(lanes: number, call: Call, n: number): Promise<number> {
  let left = n;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (left-- > 0) await call();
    }),
  );
  return n / (Number(process.hrtime.bigint() - started) / 1e9);
}

interface RatioRow {
  path: string;
  lanes: number;
  ratios: number[];
  pathOps: number[];
  plainOps: number[];
  target: string;
}

/** The paths with their targets, then two for reference (no target). */
const RATIO_PATHS: [string, string][] = [
  ['unique insert', '≥ 0.95'],
  ['duplicate (ignore)', '≥ 3'],
  ['duplicate (reject)', '≥ 3'],
  ['addJob with Graphile jobKey', ''],
  ['replace', ''],
];

async function ratios(utils: UniqueWorkerUtils): Promise<RatioRow[]> {
  const rows: RatioRow[] = [];
  for (const lanes of [1, LANES]) {
    const p = paths(utils, `ratio${lanes}:${Date.now()}`);
    const names = ['plain addJob', ...RATIO_PATHS.map(([name]) => name)];
    for (const name of names) await batch(lanes, p[name]!, WARMUP);
    const ops = new Map<string, number[]>(names.map((name) => [name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      // Rotate the order: each path runs first, second, … equally often.
      const order = names.map((_, k) => names[(k + round) % names.length]!);
      for (const name of order) ops.get(name)!.push(await batch(lanes, p[name]!, BATCH));
    }
    const plain = ops.get('plain addJob')!;
    for (const [name, target] of RATIO_PATHS) {
      const mine = ops.get(name)!;
      rows.push({ path: name, lanes, ratios: mine.map((o, k) => o / plain[k]!), pathOps: mine, plainOps: plain, target });
    }
  }
  return rows;
}

interface Breakdown {
  path: string;
  latencyMs: number;
  nodeUs: number;
  serverUs: number | null;
  /** Per call; null without pg_walinspect (the cluster-wide figures are then in `clusterWal`). */
  wal: Wal | null;
  clusterWal: { records: number; bytes: number } | null;
}

function backendCpuUs(pid: number): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_US; // utime, stime
  } catch {
    return null; // PostgreSQL on another host
  }
}

interface Wal {
  records: number;
  bytes: number;
  fpiBytes: number;
  /** Records by resource manager and type (e.g. `Heap INSERT`, `Btree INSERT_LEAF`, `Transaction COMMIT`). */
  byKind: Record<string, number>;
  /** Heap inserts (Heap INSERT records, speculative ones included) by table. */
  heapInserts: Record<string, number>;
  /** Index entries written (Btree INSERT_* records) by index. */
  indexInserts: Record<string, number>;
}

const noWal = (): Wal => ({ records: 0, bytes: 0, fpiBytes: 0, byKind: {}, heapInserts: {}, indexInserts: {} });

/**
 * WAL of the bench's own transactions between two LSNs (pg_walinspect): records of transactions
 * that wrote one of the bench's relations, so other databases' load on the cluster does not enter.
 */
async function ownWal(from: string, to: string): Promise<Wal> {
  // A path that wrote nothing (the duplicate path) may leave the flushed LSN where it started.
  const { rows: span } = await pool.query<{ empty: boolean }>('select $2::pg_lsn <= $1::pg_lsn as empty', [from, to]);
  if (span[0]!.empty) return noWal();
  const { rows } = await pool.query<{ kind: string; rel: string | null; records: number; bytes: string; fpi: string }>(
    `with r as (select * from pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn)),
     rels as (select '/' || (select oid from pg_database where datname = current_database()) || '/' || c.relfilenode || ' ' as tag,
                     c.relname as name
              from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = any($3) and c.relfilenode <> 0),
     ours as (select distinct r.xid from r where r.xid <> 0 and exists (select 1 from rels where strpos(r.block_ref, rels.tag) > 0))
     select r.resource_manager || ' ' || r.record_type as kind,
            (select rels.name from rels where strpos(r.block_ref, rels.tag) > 0 limit 1) as rel,
            count(*)::int as records, sum(r.record_length)::bigint as bytes, sum(r.fpi_length)::bigint as fpi
       from r where r.xid in (select xid from ours) group by 1, 2`,
    [from, to, [GRAPHILE_SCHEMA, UNIQUE_SCHEMA]],
  );
  const wal = noWal();
  for (const row of rows) {
    wal.records += row.records;
    wal.bytes += Number(row.bytes);
    wal.fpiBytes += Number(row.fpi);
    wal.byKind[row.kind] = (wal.byKind[row.kind] ?? 0) + row.records;
    if (row.rel && /^Heap INSERT/.test(row.kind)) wal.heapInserts[row.rel] = (wal.heapInserts[row.rel] ?? 0) + row.records;
    if (row.rel && /^Btree INSERT/.test(row.kind)) wal.indexInserts[row.rel] = (wal.indexInserts[row.rel] ?? 0) + row.records;
  }
  return wal;
}

async function clusterWal(): Promise<{ records: number; bytes: number }> {
  const { rows } = await pool.query<{ records: string; bytes: string }>(
    'select wal_records as records, wal_bytes as bytes from pg_stat_wal',
  );
  return { records: Number(rows[0]!.records), bytes: Number(rows[0]!.bytes) };
}

async function breakdown(walinspect: boolean): Promise<Breakdown[]> {
  // One connection, so its backend's CPU time is the server side of every call.
  const onePool = new pg.Pool({ connectionString, max: 1, idleTimeoutMillis: 0 });
  onePool.on('error', () => undefined);
  onePool.on('connect', (client) => client.on('error', () => undefined));
  const utils = await makeUniqueWorkerUtils({ pgPool: onePool, schema: GRAPHILE_SCHEMA, uniqueSchema: UNIQUE_SCHEMA });
  const pid = await utils.withPgClient(
    async (client) => (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid,
  );
  const p = paths(utils, `breakdown:${Date.now()}`);
  const names = Object.keys(p);
  for (const name of names) await batch(1, p[name]!, WARMUP);
  interface Total {
    latencies: number[];
    nodeUs: number;
    serverUs: number | null;
    wal: Wal;
    cluster: { records: number; bytes: number };
  }
  const totals = new Map<string, Total>();
  const BREAKDOWN_ROUNDS = 3;
  const perRound = Math.ceil(BREAKDOWN_CALLS / BREAKDOWN_ROUNDS);
  const add = (into: Record<string, number>, from: Record<string, number>) => {
    for (const [name, n] of Object.entries(from)) into[name] = (into[name] ?? 0) + n;
  };
  for (let round = 0; round < BREAKDOWN_ROUNDS; round++) {
    for (const name of round % 2 ? [...names].reverse() : names) {
      const lsnBefore = (await pool.query<{ lsn: string }>('select pg_current_wal_insert_lsn() as lsn')).rows[0]!.lsn;
      const clusterBefore = await clusterWal();
      const server0 = backendCpuUs(pid);
      const node0 = process.cpuUsage();
      const latencies: number[] = [];
      for (let k = 0; k < perRound; k++) {
        const start = process.hrtime.bigint();
        await p[name]!();
        latencies.push(Number(process.hrtime.bigint() - start) / 1e6);
      }
      const node = process.cpuUsage(node0);
      const server1 = backendCpuUs(pid);
      const clusterAfter = await clusterWal();
      const lsnAfter = (await pool.query<{ lsn: string }>('select pg_current_wal_flush_lsn() as lsn')).rows[0]!.lsn;
      const wal = walinspect ? await ownWal(lsnBefore, lsnAfter) : noWal();
      const entry: Total = totals.get(name) ?? { latencies: [], nodeUs: 0, serverUs: 0, wal: noWal(), cluster: { records: 0, bytes: 0 } };
      entry.latencies.push(...latencies);
      entry.nodeUs += node.user + node.system;
      entry.serverUs = server0 === null || server1 === null || entry.serverUs === null ? null : entry.serverUs + (server1 - server0);
      entry.wal.records += wal.records;
      entry.wal.bytes += wal.bytes;
      entry.wal.fpiBytes += wal.fpiBytes;
      add(entry.wal.byKind, wal.byKind);
      add(entry.wal.heapInserts, wal.heapInserts);
      add(entry.wal.indexInserts, wal.indexInserts);
      entry.cluster.records += clusterAfter.records - clusterBefore.records;
      entry.cluster.bytes += clusterAfter.bytes - clusterBefore.bytes;
      totals.set(name, entry);
    }
  }
  await utils.release();
  await onePool.end();
  const calls = perRound * BREAKDOWN_ROUNDS;
  const per = (record: Record<string, number>) => Object.fromEntries(Object.entries(record).map(([name, n]) => [name, n / calls]));
  return names.map((name) => {
    const t = totals.get(name)!;
    return {
      path: name,
      latencyMs: median(t.latencies),
      nodeUs: t.nodeUs / calls,
      serverUs: t.serverUs === null ? null : t.serverUs / calls,
      wal: walinspect
        ? {
            records: t.wal.records / calls,
            bytes: t.wal.bytes / calls,
            fpiBytes: t.wal.fpiBytes / calls,
            byKind: per(t.wal.byKind),
            heapInserts: per(t.wal.heapInserts),
            indexInserts: per(t.wal.indexInserts),
          }
        : null,
      clusterWal: walinspect ? null : { records: t.cluster.records / calls, bytes: t.cluster.bytes / calls },
    };
  });
}

const EMPTY_GRAPHILE_SCHEMA = `${GRAPHILE_SCHEMA}_empty`;
const EMPTY_UNIQUE_SCHEMA = `${UNIQUE_SCHEMA}_empty`;
const DEPTH_ROUNDS = 6;
const DEPTH_BATCH = 300;

interface DepthRow {
  path: string;
  empty: number[];
  deep: number[];
}

/**
 * The same calls against a table of DEPTH jobs (the bench's schemas) and an empty pair of
 * schemas, interleaved batch by batch with the order flipped every round, so load elsewhere on
 * the machine lands on both sides alike.
 */
async function depthComparison(deepUtils: UniqueWorkerUtils): Promise<DepthRow[]> {
  const started = Date.now();
  await fill(DEPTH);
  console.error(`filled ${DEPTH} jobs in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  await pool.query(`drop schema if exists "${EMPTY_UNIQUE_SCHEMA}" cascade; drop schema if exists "${EMPTY_GRAPHILE_SCHEMA}" cascade`);
  const emptyUtils = await makeUniqueWorkerUtils({ pgPool: pool, schema: EMPTY_GRAPHILE_SCHEMA, uniqueSchema: EMPTY_UNIQUE_SCHEMA });
  const tag = `depth:${Date.now()}`;
  const sides = { empty: paths(emptyUtils, tag), deep: paths(deepUtils, tag) };
  const names = ['duplicate (ignore)', 'unique insert', 'plain addJob'];
  for (const name of names) for (const side of ['empty', 'deep'] as const) await batch(1, sides[side][name]!, WARMUP);
  // The empty side's tables hold only the warm-up's jobs: analyze them, so its plans are a running
  // install's, not those of a just-created table (see BASELINE).
  await analyze(EMPTY_GRAPHILE_SCHEMA, EMPTY_UNIQUE_SCHEMA);
  const rows: DepthRow[] = names.map((path) => ({ path, empty: [], deep: [] }));
  for (let round = 0; round < DEPTH_ROUNDS; round++) {
    const order = round % 2 === 0 ? (['empty', 'deep'] as const) : (['deep', 'empty'] as const);
    for (const row of rows) {
      for (const side of order) {
        for (let k = 0; k < DEPTH_BATCH; k++) {
          const start = process.hrtime.bigint();
          await sides[side][row.path]!();
          row[side].push(Number(process.hrtime.bigint() - start) / 1e6);
        }
      }
    }
  }
  await emptyUtils.release();
  await pool.query(`drop schema if exists "${EMPTY_UNIQUE_SCHEMA}" cascade; drop schema if exists "${EMPTY_GRAPHILE_SCHEMA}" cascade`);
  return rows;
}

async function main(): Promise<void> {
  await pool.query(`drop schema if exists "${UNIQUE_SCHEMA}" cascade; drop schema if exists "${GRAPHILE_SCHEMA}" cascade`);
  const walinspect = await pool.query('create extension if not exists pg_walinspect').then(
    () => true,
    () => false,
  );
  const utils = await makeUniqueWorkerUtils({ pgPool: pool, schema: GRAPHILE_SCHEMA, uniqueSchema: UNIQUE_SCHEMA });
  await fill(BASELINE);

  const ratioRows = await ratios(utils);
  const breakdownRows = await breakdown(walinspect);
  const depthRows = DEPTH > 0 ? await depthComparison(utils) : [];

  console.log(`graphile-worker adapter bench: Node ${process.version}, ${BASELINE} jobs in the tables at the start`);
  console.log('');
  console.log(
    `Ratios: jobs/s of a path ÷ plain addJob's in the same round; ${ROUNDS} rounds of one ${BATCH}-call batch per path, order rotated each round.`,
  );
  console.log('');
  console.log('| path ÷ plain addJob | in flight | median | min–max | plain jobs/s | path jobs/s | target |');
  console.log('|---|---|---|---|---|---|---|');
  for (const r of ratioRows) {
    const sorted = [...r.ratios].sort((a, b) => a - b);
    console.log(
      `| ${r.path} | ${r.lanes} | ${median(r.ratios).toFixed(2)} | ${sorted[0]!.toFixed(2)}–${sorted.at(-1)!.toFixed(2)} | ${median(r.plainOps).toFixed(0)} | ${median(r.pathOps).toFixed(0)} | ${r.target} |`,
    );
  }
  for (const r of depthRows) {
    if (r.path !== 'duplicate (ignore)') continue;
    console.log(
      `| duplicate check with ${DEPTH} jobs ÷ empty (median latency) | 1 | ${(median(r.deep) / median(r.empty)).toFixed(2)} | | | | ≤ 1.1 |`,
    );
  }
  console.log('');
  const wal = walinspect
    ? "WAL: pg_walinspect over the run's LSN range, only transactions that wrote the bench's relations (heap and index inserts counted from its Heap INSERT and Btree INSERT records)"
    : 'WAL: cluster-wide pg_stat_wal delta (pg_walinspect unavailable), inflated by other load';
  console.log(
    `Per call, sequential on one connection, ${Math.ceil(BREAKDOWN_CALLS / 3) * 3} calls per path over 3 interleaved rounds. ${wal}. PostgreSQL CPU: the backend's utime+stime (/proc); Node CPU: process.cpuUsage.`,
  );
  console.log('');
  console.log(
    '| path | latency median ms | Node CPU µs | PostgreSQL CPU µs | WAL records | WAL bytes (of which FPI) | heap inserts by table | index entries |',
  );
  console.log('|---|---|---|---|---|---|---|---|');
  const fmt = (record: Record<string, number>) =>
    Object.entries(record)
      .filter(([, n]) => n >= 0.005)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([name, n]) => `${name} ${n.toFixed(2)}`)
      .join(', ');
  const sum = (record: Record<string, number>) => Object.values(record).reduce((a, b) => a + b, 0);
  for (const r of breakdownRows) {
    const cpu = r.serverUs === null ? 'n/a' : r.serverUs.toFixed(0);
    if (r.wal) {
      console.log(
        `| ${r.path} | ${r.latencyMs.toFixed(3)} | ${r.nodeUs.toFixed(0)} | ${cpu} | ${r.wal.records.toFixed(2)} | ${r.wal.bytes.toFixed(0)} (${r.wal.fpiBytes.toFixed(0)}) | ${fmt(r.wal.heapInserts)} | ${sum(r.wal.indexInserts).toFixed(2)} |`,
      );
    } else {
      console.log(
        `| ${r.path} | ${r.latencyMs.toFixed(3)} | ${r.nodeUs.toFixed(0)} | ${cpu} | ${r.clusterWal!.records.toFixed(2)} | ${r.clusterWal!.bytes.toFixed(0)} | | |`,
      );
    }
  }
  if (breakdownRows[0]?.wal) {
    console.log('');
    console.log('WAL records per call by kind:');
    console.log('');
    for (const r of breakdownRows) console.log(`- ${r.path}: ${fmt(r.wal!.byKind)}`);
  }
  if (depthRows.length > 0) {
    console.log('');
    console.log(`Depth: sequential, ${DEPTH_ROUNDS} interleaved rounds of ${DEPTH_BATCH} calls per side.`);
    console.log('');
    console.log(`| path | median ms, empty | median ms, ${DEPTH} jobs | ratio | p95 ms, empty | p95 ms, deep |`);
    console.log('|---|---|---|---|---|---|');
    for (const r of depthRows) {
      console.log(
        `| ${r.path} | ${median(r.empty).toFixed(3)} | ${median(r.deep).toFixed(3)} | ${(median(r.deep) / median(r.empty)).toFixed(2)} | ${quantile(r.empty, 0.95).toFixed(3)} | ${quantile(r.deep, 0.95).toFixed(3)} |`,
      );
    }
  }
  await utils.release();
  await pool.query(`drop schema if exists "${UNIQUE_SCHEMA}" cascade; drop schema if exists "${GRAPHILE_SCHEMA}" cascade`);
}

try {
  await main();
} finally {
  await pool.end();
}
