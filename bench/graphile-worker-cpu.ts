/**
 * CPU cost per call of the Graphile Worker adapter's enqueue paths, against plain `addJob` in the
 * same run: the PostgreSQL backend's user+system time (read from /proc/<pid>/stat, so PostgreSQL
 * must run on this host) and the Node process's, plus wall time. On a shared machine CPU time is
 * disturbed far less than wall time by load elsewhere, which is why this exists beside
 * `bench/graphile-worker.ts`, whose wall-clock ratios swing with load elsewhere. Not a test.
 *
 *   npx tsx bench/graphile-worker-cpu.ts                         # this checkout
 *   BENCH_COMPARE=/path/to/other/checkout npx tsx bench/graphile-worker-cpu.ts
 *
 * With BENCH_COMPARE, the other checkout's adapter (its node_modules must resolve) runs beside
 * this one, each on its own schemas and its own single connection, variants interleaved batch by
 * batch (order reversed every round); each figure is the median over BENCH_ROUNDS batches of
 * BENCH_CALLS calls. Every side starts from a 10,000-job baseline, as in bench/graphile-worker.ts.
 * `replace` runs on one key per side, so its figure depends on how many calls preceded it: compare
 * sides within one run only.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { userInfo } from 'node:os';
import pg from 'pg';
import { makeUniqueWorkerUtils } from '../adapters/graphile-worker/index.js';
import { withDefaultUser } from '../adapters/graphile-worker/graphile-worker-pg.js';

const CALLS = Number(process.env.BENCH_CALLS ?? 1000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const BASELINE = 10_000;
const connectionString = withDefaultUser(process.env.DATABASE_URL ?? 'postgres://127.0.0.1:5432/test', () => userInfo().username);
/** µs per clock tick: /proc reports CPU time in ticks of 1/CLK_TCK s, 100 on Linux. */
const TICK_US = 10_000;

type MakeUtils = typeof makeUniqueWorkerUtils;
interface Side {
  name: string;
  utils: Awaited<ReturnType<MakeUtils>>;
  pool: pg.Pool;
  pid: number;
}

async function side(name: string, make: MakeUtils, graphileSchema: string, uniqueSchema: string): Promise<Side> {
  const admin = new pg.Pool({ connectionString, max: 1 });
  await admin.query(`drop schema if exists "${uniqueSchema}" cascade; drop schema if exists "${graphileSchema}" cascade`);
  // idleTimeoutMillis 0: the one connection must live the whole run, since its backend's pid is
  // where the CPU time is read (pg's default closes it after 10 s idle).
  const pool = new pg.Pool({ connectionString, max: 1, idleTimeoutMillis: 0 });
  pool.on('error', () => undefined);
  const utils = await make({ pgPool: pool, schema: graphileSchema, uniqueSchema });
  const g = `"${graphileSchema}"`;
  const u = `"${uniqueSchema}"`;
  await admin.query(`insert into ${g}._private_tasks (identifier) values ('bench_depth') on conflict do nothing`);
  await admin.query(
    `insert into ${g}._private_jobs (task_id, payload, run_at, max_attempts)
     select (select id from ${g}._private_tasks where identifier = 'bench_depth'), json_build_object('n', n), now(), 25
     from generate_series(1, $1::int) n`,
    [BASELINE],
  );
  await admin.query(
    `insert into ${u}.jobs (job_id, ojs_id, fingerprint, type, queue, created_at, scheduled_at, max_attempts, priority, policy, head)
     select id, id::text, md5(id::text), 'bench_depth', 'default', now(), run_at, 25, 0, '{"states":["available"]}'::jsonb, true from ${g}._private_jobs`,
  );
  await admin.query(`vacuum analyze ${g}._private_jobs, ${u}.jobs, ${u}.heads`);
  await admin.end();
  const pid = await utils.withPgClient(
    async (client) => (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid,
  );
  return { name, utils, pool, pid };
}

function backendCpuUs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_US; // utime, stime
}

async function main(): Promise<void> {
  const sides = [await side('this', makeUniqueWorkerUtils, 'ojs_cpu_graphile_worker', 'ojs_cpu_unique')];
  if (process.env.BENCH_COMPARE) {
    const other = (await import(resolve(process.env.BENCH_COMPARE, 'adapters/graphile-worker/index.ts'))) as {
      makeUniqueWorkerUtils: MakeUtils;
    };
    sides.push(await side('compare', other.makeUniqueWorkerUtils, 'ojs_cpu_cmp_graphile_worker', 'ojs_cpu_cmp_unique'));
  }
  const run = `r${Date.now()}`;
  let i = 0;
  const variants: [string, Side, () => Promise<unknown>][] = sides.flatMap((s): [string, Side, () => Promise<unknown>][] => [
    [`${s.name}: plain addJob`, s, () => s.utils.addJob('bench', { i: i++ })],
    [`${s.name}: unique insert`, s, () => s.utils.addJob('bench', { i: i++, run }, { unique: { keys: ['type', 'args'] } })],
    [
      `${s.name}: unique replace`,
      s,
      () => s.utils.addJob('bench', { hot: run }, { unique: { keys: ['type', 'args'], on_conflict: 'replace' } }),
    ],
  ]);
  for (const [, , call] of variants) for (let k = 0; k < 200; k++) await call();
  const samples = new Map<string, { server: number[]; node: number[]; wall: number[] }>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, s, call] of round % 2 ? [...variants].reverse() : variants) {
      const server0 = backendCpuUs(s.pid);
      const node0 = process.cpuUsage();
      const wall0 = process.hrtime.bigint();
      for (let k = 0; k < CALLS; k++) await call();
      const wall = Number(process.hrtime.bigint() - wall0) / 1e3 / CALLS;
      const node = process.cpuUsage(node0);
      const entry = samples.get(name) ?? { server: [], node: [], wall: [] };
      entry.server.push((backendCpuUs(s.pid) - server0) / CALLS);
      entry.node.push((node.user + node.system) / CALLS);
      entry.wall.push(wall);
      samples.set(name, entry);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(`graphile-worker adapter CPU bench: ${CALLS} calls per batch, median of ${ROUNDS} batches, one connection per side`);
  console.log('');
  console.log('| variant | server CPU µs/call | Node CPU µs/call | wall µs/call |');
  console.log('|---|---|---|---|');
  for (const [name, e] of samples)
    console.log(`| ${name} | ${median(e.server).toFixed(0)} | ${median(e.node).toFixed(0)} | ${median(e.wall).toFixed(0)} |`);
  for (const s of sides) {
    await s.utils.release();
    await s.pool.end();
  }
  const admin = new pg.Pool({ connectionString, max: 1 });
  await admin.query(
    'drop schema if exists ojs_cpu_unique cascade; drop schema if exists ojs_cpu_graphile_worker cascade; drop schema if exists ojs_cpu_cmp_unique cascade; drop schema if exists ojs_cpu_cmp_graphile_worker cascade',
  );
  await admin.end();
}

await main();
