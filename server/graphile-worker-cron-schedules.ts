/**
 * The Graphile Worker gateway's crons. Graphile's own cron cannot take them: its crontab is read
 * when a runner starts, and the gateway runs no runner. So they are rows of `gateway_crons` in
 * the adapter's schema (migration 0001), and every gateway process over the database polls the
 * due ones (gateway-cron-due.sql, on the database's clock), sleeping until the earliest next tick
 * (at least a second, at most {@link MAX_SLEEP_MS}, so a cron another process registered is seen
 * within that). A process fires a tick only after claiming it (gateway-cron-claim.sql: the row's
 * next_run_at moved on from that very tick, in one statement), so one process fires each tick,
 * at most once: a process that dies between the claim and the push loses that tick, as ojs-cron
 * §7.1 prefers to a double fire. The next tick is computed from the database's now, so ticks
 * missed while no process ran fire once (§7.3).
 */
import type pg from 'pg';
import type { SchemaNames } from '../adapters/graphile-worker/graphile-worker-sql.js';
import { GatewaySql } from './graphile-worker-gateway-sql.js';
import { nextRunAt } from './cron-definition.js';
import type { CronDefinition, CronFire, CronRecord, CronSchedules } from './cron-schedules.js';

const MIN_SLEEP_MS = 1000;
const MAX_SLEEP_MS = 5000;
const DUE_BATCH = 100;

interface CronRow {
  name: string;
  definition: CronDefinition;
  created_at: string;
  next_run_at: string | null;
  last_run_at: string | null;
  run_count: string;
  last_job_id: string | null;
}

interface DueRow {
  name: string | null;
  definition: CronDefinition | null;
  tick: string | null;
  now: string;
}

export interface GraphileCronSchedules extends CronSchedules {
  /** Stops polling and waits for a poll under way (before the pool ends). */
  close(): Promise<void>;
}

const iso = (ms: string | null) => (ms === null ? null : new Date(Number(ms)).toISOString());

function recordOf(row: CronRow): CronRecord {
  return {
    ...row.definition,
    name: row.name,
    created_at: iso(row.created_at)!,
    next_run_at: iso(row.next_run_at),
    last_run_at: iso(row.last_run_at),
    run_count: Number(row.run_count),
    last_job_id: row.last_job_id,
  };
}

export function createGraphileCronSchedules(pool: pg.Pool, schemas: SchemaNames, ready: () => Promise<void>): GraphileCronSchedules {
  const run = GatewaySql.for(schemas).runner(pool, ready);
  let fire: CronFire | null = null;
  let timer: NodeJS.Timeout | null = null;
  let polling: Promise<void> | null = null;
  let closed = false;

  const arm = (sleep: number) => {
    if (timer) clearTimeout(timer);
    if (closed || !fire) return;
    timer = setTimeout(() => (polling = poll().finally(() => (polling = null))), Math.min(Math.max(sleep, MIN_SLEEP_MS), MAX_SLEEP_MS));
    timer.unref();
  };

  const poll = async (): Promise<void> => {
    let sleep = MAX_SLEEP_MS;
    try {
      const rows = await run<DueRow>('gateway-cron-due', [DUE_BATCH], 'reading due crons');
      for (const row of rows) {
        if (closed) return;
        if (row.name === null) {
          if (row.tick !== null) sleep = Number(row.tick) - Number(row.now);
          continue;
        }
        const next = nextRunAt(row.definition!, Number(row.now));
        const claimed = await run(
          'gateway-cron-claim',
          [row.name, row.tick, next === null ? null : String(Date.parse(next))],
          'claiming a cron tick',
        );
        if (claimed.length === 0) continue;
        const record = await get(row.name);
        if (!record) continue;
        const tick = Number(row.tick);
        const jobId = await fire!(record, tick).catch(() => null);
        if (jobId !== null)
          await run('gateway-cron-record-run', [row.name, String(tick), jobId], 'recording a cron run').catch(() => undefined);
      }
      // A full batch: more may be due now.
      if (rows.length - 1 >= DUE_BATCH) sleep = 0;
    } catch {
      // The database is away: look again later.
    }
    arm(sleep);
  };

  const get = async (name: string): Promise<CronRecord | null> => {
    const [row] = await run<CronRow>('gateway-cron-list', [name], 'reading a cron');
    return row ? recordOf(row) : null;
  };

  return {
    async register(definition) {
      const now = Number((await run<{ now: string }>('gateway-now', [], 'reading the clock'))[0]!.now);
      const next = nextRunAt(definition, now);
      const [row] = await run<CronRow & { created: boolean }>(
        'gateway-cron-upsert',
        [definition.name, JSON.stringify(definition), next === null ? null : String(Date.parse(next))],
        'registering a cron',
      );
      arm(0);
      return { record: recordOf(row!), created: row!.created };
    },
    async list() {
      return (await run<CronRow>('gateway-cron-list', [null], 'listing crons')).map(recordOf);
    },
    get,
    async remove(name) {
      const [row] = await run<CronRow>('gateway-cron-delete', [name], 'deleting a cron');
      return row ? recordOf(row) : null;
    },
    start(given) {
      fire = given;
      arm(0);
    },
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      await polling;
    },
  };
}
