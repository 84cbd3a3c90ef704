/**
 * The gateway store each conformance test file serves the suite from: one per backend and part
 * (gateway-conformance.ts), so the parts, running side by side, never share a prefix or schemas.
 * BullMQ under `ojs-test:<salt>:gateway-conformance-<part>` (the reset deletes that prefix's keys);
 * Graphile Worker on `gwt_<salt>_gateway_<part>_…` (the reset truncates their job tables).
 *
 * Memory runs on a clock the suite's waits move (the store's crons look again after each move)
 * instead of sleeping: its files then take seconds, not minutes. BullMQ and Graphile Worker read
 * Redis `TIME` and PostgreSQL `now()`, which cannot be moved: they wait in real time. The memory
 * store's real timer is tested by test/gateway/gateway-cron.test.ts (per-second crons).
 */
import { createMemoryGatewayStore } from '../../server/memory-gateway-store.js';
import { createBullmqGatewayStore } from '../../server/bullmq-gateway-store.js';
import { createGraphileWorkerGatewayStore } from '../../server/graphile-worker-gateway-store.js';
import { REDIS_URL } from '../adapters/bullmq-test-redis.js';
import { databaseUrl } from '../conformance/subjects/graphile-worker.js';
import { RUN_SALT } from '../run-salt.js';
import { describeConformance, type ConformancePart, type ConformanceServer } from './gateway-conformance.js';

export type ConformanceBackend = 'memory' | 'bullmq' | 'graphile-worker';

/** A memory store on a clock that moves only when the suite waits (from the real time it starts at). */
function movableMemoryStore(): ConformanceServer {
  let movedMs = 0;
  const store = createMemoryGatewayStore({ clock: { now: () => Date.now() + movedMs } });
  const elapse = async (ms: number) => {
    movedMs += ms;
    await store.cron.lookNow();
  };
  return { store, elapse };
}

function makeServer(backend: ConformanceBackend, part: ConformancePart): ConformanceServer {
  const name = part.replaceAll('-', '_');
  switch (backend) {
    case 'memory':
      return movableMemoryStore();
    case 'bullmq':
      return { store: createBullmqGatewayStore({ redisUrl: REDIS_URL, prefix: `ojs-test:${RUN_SALT}:gateway-conformance-${part}` }) };
    case 'graphile-worker':
      return {
        store: createGraphileWorkerGatewayStore({
          databaseUrl: databaseUrl(),
          graphileSchema: `gwt_${RUN_SALT}_gateway_${name}_gw`,
          uniqueSchema: `gwt_${RUN_SALT}_gateway_${name}_ou`,
        }),
      };
  }
}

/** The suite's files of `part` against the gateway on `backend`. */
export function describeConformancePart(backend: ConformanceBackend, part: ConformancePart): void {
  describeConformance(backend, part, async () => makeServer(backend, part));
}
