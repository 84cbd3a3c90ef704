/** The bench's stand-in store (bench/gateway.ts, bench/gateway-cpu.ts): the server's own cost with no backend behind it. */
import type { GatewayJob, GatewayStore } from '../server/gateway-store.js';

/** A store that answers every PUSH at once with a fixed job: the gateway server's own cost. */
export function instantStore(): GatewayStore {
  const job: GatewayJob = {
    id: '019abcde-0000-7000-8000-000000000000',
    type: 'bench.job',
    queue: 'bench',
    args: { n: 0, pad: 'x' },
    meta: {},
    state: 'available',
    attempt: 0,
    max_attempts: 3,
    priority: 0,
    created_at: new Date(0).toISOString(),
    scheduled_at: new Date(0).toISOString(),
    // What a real store answers for the bench's body: the answer is as long as theirs (586 bytes).
    unique: {
      keys: ['type', 'args'],
      args_keys: ['n'],
      meta_keys: null,
      period: null,
      states: ['available', 'active', 'scheduled', 'retryable', 'pending'],
      on_conflict: 'reject',
    },
    uniqueness_key: '604b1f36c248de03226cb18e1d0024baef0c6d4ce92fb549ae80dfead81276a8',
    enqueued_at: new Date(0).toISOString(),
    envelope: {},
  };
  const unused = () => Promise.reject(new Error('not in this bench'));
  return {
    backend: 'memory',
    capabilities: { unique_jobs: { strength: 'strong', mechanism: 'none', replace_active: false } },
    enqueue: async () => ({ outcome: 'created', job }),
    enqueueBatch: unused,
    getJob: unused,
    cancel: unused,
    activate: unused,
    fetch: unused,
    ack: unused,
    nack: unused,
    heartbeat: unused,
    release: unused,
    workerState: unused,
    setWorkerState: unused,
    queueStats: unused,
    setPaused: unused,
    isPaused: unused,
    setRateLimit: unused,
    now: unused,
    health: async () => ({ ok: true, type: 'none' }),
    reset: async () => undefined,
    close: async () => undefined,
    idempotency: { claim: unused, finish: unused, abandon: unused },
    deadLetters: { list: unused, retry: unused, remove: unused },
    cron: { register: unused, list: unused, get: unused, remove: unused, start: () => undefined },
    workflows: { create: unused, read: unused, ofJob: unused, write: unused },
  };
}
