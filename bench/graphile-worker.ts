/**
 * Graphile Worker adapter throughput, as ratios against plain `addJob` measured in the same run
 * (not a test: machines are shared and noisy, so read the ratios, not the absolute figures).
 *
 *   npm run bench:graphile-worker                 # DATABASE_URL, default postgres://127.0.0.1:5432/test
 *   BENCH_CALLS=1000 BENCH_DEPTH=100000 BENCH_ROUNDS=1 BENCH_BASELINE=10000 npm run bench:graphile-worker
 *
 * Variants, each sequential (1 lane) and 20-concurrent (20 lanes over a pool of 20):
 *   plain addJob · addJob with Graphile's jobKey (replace, a new key per call) · unique insert
 *   (a new key per call) · unique duplicate path (`ignore` on one existing key) · unique replace
 *   (one key, each call replaces the last). Then the insert target alone as an A/B: plain addJob
 *   and the unique insert in alternating batches (BENCH_AB_ROUNDS, default 12). Then depth: the duplicate check, the unique insert and
 *   plain addJob with BENCH_DEPTH jobs already in Graphile's table and in the ledger against an
 *   empty pair of schemas, interleaved (the "depth" ratio: median latency deep over empty).
 *
 * Uses its own schemas (ojs_bench_*), dropped at the start; before every variant the tables are
 * emptied and refilled with BENCH_BASELINE jobs (default 10,000), so every variant starts from the
 * same state.
 */
import { userInfo } from 'node:os';
import pg from 'pg';
import { makeUniqueWorkerUtils, type UniqueWorkerUtils } from '../adapters/graphile-worker/index.js';
import { withDefaultUser } from '../adapters/graphile-worker/graphile-worker-pg.js';

const GRAPHILE_SCHEMA = 'ojs_bench_graphile_worker';
const UNIQUE_SCHEMA = 'ojs_bench_unique';
const CALLS = Number(process.env.BENCH_CALLS ?? 3000);
const WARMUP = Math.max(100, Math.floor(CALLS / 10));
const DEPTH = Number(process.env.BENCH_DEPTH ?? 1_000_000);
const LANES = 20;
/**
 * Jobs already in the tables when each variant starts. Not zero: right after a TRUNCATE the
 * planner sees near-empty tables and caches sequential-scan plans in the adapter's plpgsql
 * functions, which then grow slower with every insert of the run until autovacuum's next ANALYZE:
 * a running install's tables are never empty.
 */
const BASELINE = Number(process.env.BENCH_BASELINE ?? 10_000);
/** Whole passes over every variant; the table reports each variant's median pass. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const pool = new pg.Pool({
  connectionString: withDefaultUser(process.env.DATABASE_URL ?? 'postgres://127.0.0.1:5432/test', () => userInfo().username),
  max: LANES,
});
pool.on('error', () => undefined);
pool.on('connect', (client) => client.on('error', () => undefined));

interface Row {
  variant: string;
  lanes: number;
  jobsPerSecond: number;
  medianMs: number;
  p95Ms: number;
}

/**
 * `call(i)` for WARMUP warm-up indices, then CALLS measured ones (never the same index twice),
 * over `lanes` lanes pulling from one counter.
 */
async function measure(
  variant: string,
  lanes: number,
  call: (i: number) => Promise<unknown>,
  afterWarmup?: () => Promise<void>,
): Promise<Row> {
  const latencies: number[] = [];
  const pass = async (from: number, to: number, record: boolean) => {
    let next = from;
    const lane = async () => {
      for (let i = next++; i < to; i = next++) {
        const start = process.hrtime.bigint();
        await call(i);
        if (record) latencies.push(Number(process.hrtime.bigint() - start) / 1e6);
      }
    };
    await Promise.all(Array.from({ length: lanes }, lane));
  };
  await pass(0, WARMUP, false);
  await afterWarmup?.();
  const started = process.hrtime.bigint();
  await pass(WARMUP, WARMUP + CALLS, true);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  latencies.sort((a, b) => a - b);
  return {
    variant,
    lanes,
    jobsPerSecond: CALLS / seconds,
    medianMs: latencies[Math.floor(latencies.length / 2)]!,
    p95Ms: latencies[Math.floor(latencies.length * 0.95)]!,
  };
}

async function emptyTables(): Promise<void> {
  await pool.query(`truncate "${GRAPHILE_SCHEMA}"._private_jobs, "${UNIQUE_SCHEMA}".jobs, "${UNIQUE_SCHEMA}".heads`);
  await analyzeTables();
}

async function analyzeTables(): Promise<void> {
  await pool.query(`vacuum analyze "${GRAPHILE_SCHEMA}"._private_jobs, "${UNIQUE_SCHEMA}".jobs, "${UNIQUE_SCHEMA}".heads`);
}

/** DEPTH Graphile jobs, each with its ledger record under its own key: the table a busy install has. */
async function fill(depth: number): Promise<void> {
  await pool.query(`insert into "${GRAPHILE_SCHEMA}"._private_tasks (identifier) values ('bench_depth') on conflict do nothing`);
  await pool.query(
    `insert into "${GRAPHILE_SCHEMA}"._private_jobs (task_id, payload, run_at, max_attempts)
     select (select id from "${GRAPHILE_SCHEMA}"._private_tasks where identifier = 'bench_depth'), json_build_object('n', n), now(), 25
     from generate_series(1, $1::int) n`,
    [depth],
  );
  await pool.query(
    `insert into "${UNIQUE_SCHEMA}".jobs (job_id, ojs_id, fingerprint, type, queue, created_at, scheduled_at, max_attempts, priority, policy)
     select id, id::text, md5(id::text), 'bench_depth', 'default', now(), run_at, 25, 0, '{"states":["available"]}'::jsonb
     from "${GRAPHILE_SCHEMA}"._private_jobs`,
  );
  await pool.query(`insert into "${UNIQUE_SCHEMA}".heads (fingerprint) select fingerprint from "${UNIQUE_SCHEMA}".jobs`);
  await analyzeTables();
  // Write the bulk load out now, so its flush does not land on whichever variant runs next.
  // CHECKPOINT needs superuser (or pg_checkpoint); without it the figures are only noisier.
  await pool.query('checkpoint').catch(() => undefined);
}

const AB_ROUNDS = Number(process.env.BENCH_AB_ROUNDS ?? 12);
const AB_BATCH = 300;

interface AbRow {
  lanes: number;
  /** unique insert throughput ÷ plain addJob throughput, per round. */
  ratios: number[];
  plainOps: number;
  uniqueOps: number;
}

/**
 * The insert target alone, measured so that the machine's drift cancels: plain addJob and the
 * unique insert alternate in batches of AB_BATCH calls (under a second each, order flipped every
 * round) on the same schemas, instead of one 3,000-call pass per variant with a table refill in
 * between, whose ratio drifts between runs of the same code; this one reports every round's
 * ratio and their median.
 */
async function insertAB(utils: UniqueWorkerUtils): Promise<AbRow[]> {
  await emptyTables();
  await fill(BASELINE);
  const run = `ab${Date.now()}`;
  let next = 0;
  const plain = () => utils.addJob('bench', { i: next++, run });
  const unique = () => utils.addJob('bench', { i: next++, run }, { unique: { keys: ['type', 'args'] } });
  const batch = async (lanes: number, call: () => Promise<unknown>, n: number) => {
    let left = n;
    const started = process.hrtime.bigint();
    await Promise.all(
      Array.from({ length: lanes }, async () => {
        while (left-- > 0) await call();
      }),
    );
    return n / (Number(process.hrtime.bigint() - started) / 1e9);
  };
  const rows: AbRow[] = [];
  for (const lanes of [1, LANES]) {
    await batch(lanes, plain, WARMUP);
    await batch(lanes, unique, WARMUP);
    const row: AbRow = { lanes, ratios: [], plainOps: 0, uniqueOps: 0 };
    const plainRuns: number[] = [];
    const uniqueRuns: number[] = [];
    for (let round = 0; round < AB_ROUNDS; round++) {
      let p: number;
      let u: number;
      if (round % 2 === 0) {
        p = await batch(lanes, plain, AB_BATCH);
        u = await batch(lanes, unique, AB_BATCH);
      } else {
        u = await batch(lanes, unique, AB_BATCH);
        p = await batch(lanes, plain, AB_BATCH);
      }
      plainRuns.push(p);
      uniqueRuns.push(u);
      row.ratios.push(u / p);
    }
    row.plainOps = median(plainRuns);
    row.uniqueOps = median(uniqueRuns);
    rows.push(row);
  }
  return rows;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const DEPTH_ROUNDS = 6;
const DEPTH_BATCH = Math.max(100, Math.floor(CALLS / DEPTH_ROUNDS));
const EMPTY_GRAPHILE_SCHEMA = `${GRAPHILE_SCHEMA}_empty`;
const EMPTY_UNIQUE_SCHEMA = `${UNIQUE_SCHEMA}_empty`;

interface DepthRow {
  variant: string;
  empty: { medianMs: number; p95Ms: number };
  deep: { medianMs: number; p95Ms: number };
}

/**
 * The same calls against a table of DEPTH jobs (the bench's own schemas) and an empty one (a
 * second schema pair), interleaved batch by batch with the order flipped every round, so load
 * elsewhere on the machine and WAL/checkpoint activity land on both sides alike. Three calls:
 * the duplicate check alone (`ignore` on an existing key: the read that must not grow with
 * depth), the unique insert (check + lock + insert), and Graphile's plain addJob (what the host
 * itself pays for the deeper table: its indexes grow too).
 */
async function depthComparison(deepUtils: UniqueWorkerUtils): Promise<DepthRow[]> {
  await emptyTables();
  const started = Date.now();
  await fill(DEPTH);
  console.error(`filled ${DEPTH} jobs in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  await pool.query(`drop schema if exists "${EMPTY_UNIQUE_SCHEMA}" cascade; drop schema if exists "${EMPTY_GRAPHILE_SCHEMA}" cascade`);
  const emptyUtils = await makeUniqueWorkerUtils({ pgPool: pool, schema: EMPTY_GRAPHILE_SCHEMA, uniqueSchema: EMPTY_UNIQUE_SCHEMA });
  const sides = { empty: emptyUtils, deep: deepUtils } as const;
  const run = `d${Date.now()}`;
  let next = 0;
  const calls: [string, (utils: UniqueWorkerUtils) => Promise<unknown>][] = [
    [
      'duplicate check (ignore, existing key)',
      (utils) => utils.addJob('bench', { hot: run }, { unique: { keys: ['type', 'args'], on_conflict: 'ignore' } }),
    ],
    ['unique insert (new key)', (utils) => utils.addJob('bench', { i: next++, run }, { unique: { keys: ['type', 'args'] } })],
    ['plain addJob', (utils) => utils.addJob('bench', { i: next++, run })],
  ];
  const latencies = new Map<string, number[]>();
  const batch = async (
    name: string,
    side: keyof typeof sides,
    call: (utils: UniqueWorkerUtils) => Promise<unknown>,
    n: number,
    record: boolean,
  ) => {
    for (let i = 0; i < n; i++) {
      const start = process.hrtime.bigint();
      await call(sides[side]);
      if (record)
        latencies.set(`${name}/${side}`, [...(latencies.get(`${name}/${side}`) ?? []), Number(process.hrtime.bigint() - start) / 1e6]);
    }
  };
  for (const [name, call] of calls) for (const side of ['empty', 'deep'] as const) await batch(name, side, call, WARMUP, false);
  // The empty side's tables hold only the warm-up's jobs: analyze them, so its plans are a running
  // install's, not those of a just-created table (see BASELINE).
  await pool.query(
    `vacuum analyze "${EMPTY_GRAPHILE_SCHEMA}"._private_jobs, "${EMPTY_UNIQUE_SCHEMA}".jobs, "${EMPTY_UNIQUE_SCHEMA}".heads`,
  );
  for (let round = 0; round < DEPTH_ROUNDS; round++) {
    const order = round % 2 === 0 ? (['empty', 'deep'] as const) : (['deep', 'empty'] as const);
    for (const [name, call] of calls) for (const side of order) await batch(name, side, call, DEPTH_BATCH, true);
    if (process.env.BENCH_VERBOSE) {
      for (const [name] of calls) {
        const last = (side: string) => {
          return median(latencies.get(`${name}/${side}`)!.slice(-DEPTH_BATCH)).toFixed(3);
        };
        console.error(`round ${round} ${name}: empty ${last('empty')} ms, deep ${last('deep')} ms`);
      }
    }
  }
  await emptyUtils.release();
  await pool.query(`drop schema if exists "${EMPTY_UNIQUE_SCHEMA}" cascade; drop schema if exists "${EMPTY_GRAPHILE_SCHEMA}" cascade`);
  const stats = (values: number[]) => ({
    medianMs: median(values),
    p95Ms: [...values].sort((a, b) => a - b)[Math.floor(values.length * 0.95)]!,
  });
  return calls.map(([name]) => ({
    variant: name,
    empty: stats(latencies.get(`${name}/empty`)!),
    deep: stats(latencies.get(`${name}/deep`)!),
  }));
}

async function main(): Promise<void> {
  await pool.query(`drop schema if exists "${UNIQUE_SCHEMA}" cascade; drop schema if exists "${GRAPHILE_SCHEMA}" cascade`);
  const utils: UniqueWorkerUtils = await makeUniqueWorkerUtils({ pgPool: pool, schema: GRAPHILE_SCHEMA, uniqueSchema: UNIQUE_SCHEMA });
  const run = `r${Date.now()}`;
  const variants: [string, (i: number) => Promise<unknown>, () => Promise<void>][] = [
    ['plain addJob', (i) => utils.addJob('bench', { i }), async () => undefined],
    ['addJob, Graphile jobKey (replace)', (i) => utils.addJob('bench', { i }, { jobKey: `${run}:${i}` }), async () => undefined],
    ['unique insert', (i) => utils.addJob('bench', { i, run }, { unique: { keys: ['type', 'args'] } }), async () => undefined],
    [
      'unique duplicate path (ignore)',
      () => utils.addJob('bench', { hot: run }, { unique: { keys: ['type', 'args'], on_conflict: 'ignore' } }),
      async () => void (await utils.addJob('bench', { hot: run }, { unique: { keys: ['type', 'args'], on_conflict: 'ignore' } })),
    ],
    [
      'unique replace',
      () => utils.addJob('bench', { hot: run }, { unique: { keys: ['type', 'args'], on_conflict: 'replace' } }),
      async () => undefined,
    ],
  ];

  // Variants are interleaved pass by pass, so a burst of load elsewhere on the machine hits all
  // of them rather than one; each variant's median pass is reported.
  const passes = new Map<string, Row[]>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const lanes of [1, LANES]) {
      for (const [name, call, prepare] of variants) {
        await emptyTables();
        await fill(BASELINE);
        await prepare();
        // Indices must not repeat across passes (a repeat would be a duplicate): offset them.
        const row = await measure(name, lanes, (i) => call(i + (round * 2 + (lanes === 1 ? 0 : 1)) * 10_000_000));
        const key = `${lanes}:${name}`;
        passes.set(key, [...(passes.get(key) ?? []), row]);
      }
    }
  }
  const rows = [...passes.values()].map(
    (runs) => [...runs].sort((a, b) => a.jobsPerSecond - b.jobsPerSecond)[Math.floor(runs.length / 2)]!,
  );

  const abRows = AB_ROUNDS > 0 ? await insertAB(utils) : [];
  const depthRows = DEPTH > 0 ? await depthComparison(utils) : [];

  const plain = new Map(rows.filter((r) => r.variant === 'plain addJob').map((r) => [r.lanes, r.jobsPerSecond]));
  console.log(
    `graphile-worker adapter bench: ${CALLS} calls per variant and pass after ${WARMUP} warm-up, median of ${ROUNDS} passes, pool of ${LANES}, Node ${process.version}`,
  );
  console.log('');
  console.log('| variant | lanes | jobs/s | × plain addJob | median ms | p95 ms |');
  console.log('|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(
      `| ${r.variant} | ${r.lanes} | ${r.jobsPerSecond.toFixed(0)} | ${(r.jobsPerSecond / plain.get(r.lanes)!).toFixed(2)} | ${r.medianMs.toFixed(2)} | ${r.p95Ms.toFixed(2)} |`,
    );
  }
  if (abRows.length > 0) {
    console.log('');
    console.log(
      `| unique insert ÷ plain addJob, ${AB_ROUNDS} alternating batches of ${AB_BATCH} | lanes | median ratio | min–max | plain jobs/s | unique jobs/s |`,
    );
    console.log('|---|---|---|---|---|---|');
    for (const r of abRows) {
      const sorted = [...r.ratios].sort((a, b) => a - b);
      console.log(
        `| insert A/B | ${r.lanes} | ${median(r.ratios).toFixed(2)} | ${sorted[0]!.toFixed(2)}–${sorted.at(-1)!.toFixed(2)} | ${r.plainOps.toFixed(0)} | ${r.uniqueOps.toFixed(0)} |`,
      );
    }
  }
  if (depthRows.length > 0) {
    console.log('');
    console.log(
      `| sequential, ${DEPTH_ROUNDS} interleaved rounds of ${DEPTH_BATCH} calls | median ms, empty | median ms, ${DEPTH} jobs | depth ratio | p95 ms, empty | p95 ms, deep |`,
    );
    console.log('|---|---|---|---|---|---|');
    for (const r of depthRows) {
      console.log(
        `| ${r.variant} | ${r.empty.medianMs.toFixed(3)} | ${r.deep.medianMs.toFixed(3)} | ${(r.deep.medianMs / r.empty.medianMs).toFixed(2)} | ${r.empty.p95Ms.toFixed(3)} | ${r.deep.p95Ms.toFixed(3)} |`,
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
