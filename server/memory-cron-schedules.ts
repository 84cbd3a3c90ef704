/**
 * The memory gateway's crons: a map and one timer in the process, on the store's clock. The timer
 * sleeps until the earliest next tick (at most a minute, and never less than a second after the
 * last look, ojs-cron §7.3); a due cron's next tick is computed from now before it fires, so ticks
 * missed while the process slept fire once (§7.3's one catch-up).
 */
import { nextRunAt } from './cron-definition.js';
import type { CronDefinition, CronFire, CronRecord, CronSchedules } from './cron-schedules.js';

const MAX_SLEEP_MS = 60_000;
const MIN_LOOK_MS = 1000;

export interface MemoryCronSchedules extends CronSchedules {
  clear(): void;
  close(): void;
  /**
   * Fires what is due now and sleeps again. For a clock a test moved: the timer sleeps in real
   * time, so it would not see the move until its sleep ends.
   */
  lookNow(): Promise<void>;
}

export function createMemoryCronSchedules(clock: { now(): number }): MemoryCronSchedules {
  return new MemoryCrons(clock);
}

class MemoryCrons implements MemoryCronSchedules {
  readonly #records = new Map<string, CronRecord>();
  #fire: CronFire | null = null;
  #timer: NodeJS.Timeout | null = null;
  /** The look under way, which a second look waits for (each fires a due tick once). */
  #looking: Promise<void> | null = null;
  #lookedAt = 0;
  #closed = false;

  constructor(readonly clock: { now(): number }) {}

  async register(definition: CronDefinition): Promise<{ record: CronRecord; created: boolean }> {
    const now = this.clock.now();
    const old = this.#records.get(definition.name);
    const record: CronRecord = {
      ...definition,
      created_at: old?.created_at ?? new Date(now).toISOString(),
      next_run_at: nextRunAt(definition, now),
      last_run_at: old?.last_run_at ?? null,
      run_count: old?.run_count ?? 0,
      last_job_id: old?.last_job_id ?? null,
    };
    this.#records.set(definition.name, record);
    this.#arm();
    return { record: { ...record }, created: old === undefined };
  }

  async list(): Promise<CronRecord[]> {
    return [...this.#records.values()].sort((a, b) => (a.name < b.name ? -1 : 1)).map((record) => ({ ...record }));
  }

  async get(name: string): Promise<CronRecord | null> {
    const record = this.#records.get(name);
    return record ? { ...record } : null;
  }

  async remove(name: string): Promise<CronRecord | null> {
    const record = this.#records.get(name);
    this.#records.delete(name);
    return record ? { ...record } : null;
  }

  start(fire: CronFire): void {
    this.#fire = fire;
    this.#arm();
  }

  clear(): void {
    this.#records.clear();
  }

  close(): void {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
  }

  async lookNow(): Promise<void> {
    await this.#looking;
    if (!this.#fire || this.#closed) return;
    if (this.#timer) clearTimeout(this.#timer);
    await this.#look();
  }

  #look(): Promise<void> {
    return (this.#looking = this.#tick().finally(() => (this.#looking = null)));
  }

  #arm(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    if (!this.#fire || this.#closed) return;
    const now = this.clock.now();
    const ticks = [...this.#records.values()].flatMap((record) => (record.next_run_at ? [Date.parse(record.next_run_at)] : []));
    const earliest = ticks.length > 0 ? Math.min(...ticks) : now + MAX_SLEEP_MS;
    const sleep = Math.min(Math.max(earliest - now, this.#lookedAt + MIN_LOOK_MS - now, 0), MAX_SLEEP_MS);
    this.#timer = setTimeout(() => void this.#look(), sleep);
    this.#timer.unref();
  }

  async #tick(): Promise<void> {
    this.#timer = null;
    const now = this.clock.now();
    this.#lookedAt = now;
    for (const record of [...this.#records.values()]) {
      if (record.next_run_at === null || Date.parse(record.next_run_at) > now) continue;
      const tick = Date.parse(record.next_run_at);
      record.next_run_at = nextRunAt(record, now);
      const jobId = await this.#fire!({ ...record }, tick).catch(() => null);
      // Unless it was unregistered or replaced meanwhile.
      if (jobId !== null && this.#records.get(record.name) === record) {
        record.last_run_at = new Date(tick).toISOString();
        record.run_count++;
        record.last_job_id = jobId;
      }
    }
    this.#arm();
  }
}
