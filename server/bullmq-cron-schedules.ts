/**
 * The BullMQ gateway's crons, on BullMQ's job schedulers: each cron is a scheduler
 * (`upsertJobScheduler(name, { pattern, tz })`) on the gateway's own queue {@link CRON_QUEUE},
 * whose template is a small tick job naming the cron. BullMQ times the ticks (cron-parser, the
 * time zone, the next tick added when a tick job is taken, from now: ticks missed while no
 * worker ran fire once) and gives each tick job one id (`repeat:<name>:<ms>`), so a scheduler
 * upserted by two processes still makes one job a tick. Every gateway process runs a worker on
 * that queue ({@link start}); BullMQ's lock hands each tick job to one of them, which pushes the
 * cron's job (cron-firing.ts). A tick job is tried once (`attempts: 1`); one run again after a
 * stall pushes nothing new, because the job it pushes has an id fixed by the tick.
 *
 * The definitions (and the history of runs) are kept beside the schedulers, in hashes under
 * `<prefix>:ojs-gateway:`: the tick job carries only the cron's name, and a tick whose cron was
 * unregistered meanwhile finds none and does nothing. `CRON_QUEUE` is not a valid OJS queue name,
 * so no FETCH can take its tick jobs.
 */
import { Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { plainExpression } from './cron-expression.js';
import type { CronDefinition, CronFire, CronRecord, CronSchedules } from './cron-schedules.js';

/** The gateway's queue of tick jobs (starts with `_`: refused as an OJS queue name). */
export const CRON_QUEUE = '_ojs-gateway-cron';
const TICK_JOB = 'ojs-gateway-cron-tick';
/** Tick jobs worked at once per process (each pushes one job). */
const TICK_CONCURRENCY = 4;

interface Stored {
  definition: CronDefinition;
  created_at: string;
}

export interface BullmqCronSchedules extends CronSchedules {
  close(): Promise<void>;
}

export function createBullmqCronSchedules(options: { redis: Redis; workerRedis: Redis; prefix: string }): BullmqCronSchedules {
  return new BullmqCrons(options.redis, options.workerRedis, options.prefix);
}

class BullmqCrons implements BullmqCronSchedules {
  readonly #queue: Queue;
  #worker: Worker | null = null;

  constructor(
    readonly redis: Redis,
    readonly workerRedis: Redis,
    readonly prefix: string,
  ) {
    this.#queue = new Queue(CRON_QUEUE, { connection: redis, prefix });
    this.#queue.on('error', () => undefined);
  }

  get #definitions(): string {
    return `${this.prefix}:ojs-gateway:crons`;
  }

  #runs(name: string): string {
    return `${this.prefix}:ojs-gateway:cron-runs:${name}`;
  }

  async register(definition: CronDefinition): Promise<{ record: CronRecord; created: boolean }> {
    const old = await this.#stored(definition.name);
    const stored: Stored = { definition, created_at: old?.created_at ?? new Date().toISOString() };
    await this.redis.hset(this.#definitions, definition.name, JSON.stringify(stored));
    if (definition.enabled) {
      await this.#queue.upsertJobScheduler(
        definition.name,
        { pattern: plainExpression(definition.expression), tz: definition.timezone },
        { name: TICK_JOB, data: { cron: definition.name }, opts: { attempts: 1, removeOnComplete: true, removeOnFail: 100 } },
      );
    } else {
      await this.#queue.removeJobScheduler(definition.name);
    }
    return { record: (await this.get(definition.name))!, created: old === null };
  }

  async list(): Promise<CronRecord[]> {
    const all = await this.redis.hgetall(this.#definitions);
    const names = Object.keys(all).sort();
    const next = new Map((await this.#queue.getJobSchedulers()).map((scheduler) => [scheduler.key, scheduler.next]));
    return Promise.all(names.map((name) => this.#record(JSON.parse(all[name]!) as Stored, next.get(name))));
  }

  async get(name: string): Promise<CronRecord | null> {
    const stored = await this.#stored(name);
    if (!stored) return null;
    return this.#record(stored, (await this.#queue.getJobScheduler(name))?.next);
  }

  async remove(name: string): Promise<CronRecord | null> {
    const record = await this.get(name);
    if (!record) return null;
    await this.#queue.removeJobScheduler(name);
    await this.redis.multi().hdel(this.#definitions, name).del(this.#runs(name)).exec();
    return { ...record, next_run_at: null };
  }

  start(fire: CronFire): void {
    if (this.#worker) return;
    this.#worker = new Worker(CRON_QUEUE, (job: Job) => this.#tick(job, fire), {
      connection: this.workerRedis,
      prefix: this.prefix,
      concurrency: TICK_CONCURRENCY,
    });
    this.#worker.on('error', () => undefined);
  }

  /**
   * Forced: a worker that never reached Redis would wait for it. A tick cut off mid-way is run
   * again by another process's worker (a stalled job), and pushes no second job.
   */
  async close(): Promise<void> {
    await this.#worker?.close(true).catch(() => undefined);
    await this.#queue.close().catch(() => undefined);
  }

  /** One tick job: the cron's job pushed, and the run recorded. */
  async #tick(job: Job, fire: CronFire): Promise<string | null> {
    const name = (job.data as { cron?: unknown }).cron;
    if (typeof name !== 'string') return null;
    const record = await this.get(name);
    if (!record) return null;
    const tick = job.opts.prevMillis ?? job.timestamp;
    const jobId = await fire(record, tick);
    if (jobId !== null) {
      await this.redis
        .multi()
        .hset(this.#runs(name), { last_run_at: new Date(tick).toISOString(), last_job_id: jobId })
        .hincrby(this.#runs(name), 'run_count', 1)
        .exec();
    }
    return jobId;
  }

  async #stored(name: string): Promise<Stored | null> {
    const raw = await this.redis.hget(this.#definitions, name);
    return raw === null ? null : (JSON.parse(raw) as Stored);
  }

  async #record(stored: Stored, next: number | undefined): Promise<CronRecord> {
    const runs = await this.redis.hgetall(this.#runs(stored.definition.name));
    return {
      ...stored.definition,
      created_at: stored.created_at,
      next_run_at: stored.definition.enabled && next ? new Date(next).toISOString() : null,
      last_run_at: runs.last_run_at ?? null,
      run_count: Number(runs.run_count ?? 0),
      last_job_id: runs.last_job_id ?? null,
    };
  }
}
