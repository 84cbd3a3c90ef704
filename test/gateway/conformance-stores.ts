/**
 * The gateway store each conformance test file serves the suite from: one per backend and part
 * (gateway-conformance.ts), so the parts, running side by side, never share a prefix or schemas.
 * BullMQ under `ojs-test:<salt>:gateway-conformance-<part>` (the reset deletes that prefix's keys);
 * Graphile Worker on `gwt_<salt>_gateway_<part>_…` (the reset truncates their job tables).
 */
import type { GatewayStore } from '../../server/gateway-store.js';
import { createMemoryGatewayStore } from '../../server/memory-gateway-store.js';
import { createBullmqGatewayStore } from '../../server/bullmq-gateway-store.js';
import { createGraphileWorkerGatewayStore } from '../../server/graphile-worker-gateway-store.js';
import { REDIS_URL } from '../adapters/bullmq-test-redis.js';
import { databaseUrl } from '../conformance/subjects/graphile-worker.js';
import { RUN_SALT } from '../run-salt.js';
import { describeConformance, type ConformancePart } from './gateway-conformance.js';

export type ConformanceBackend = 'memory' | 'bullmq' | 'graphile-worker';

function makeStore(backend: ConformanceBackend, part: ConformancePart): GatewayStore {
  const name = part.replaceAll('-', '_');
  switch (backend) {
    case 'memory':
      return createMemoryGatewayStore();
    case 'bullmq':
      return createBullmqGatewayStore({ redisUrl: REDIS_URL, prefix: `ojs-test:${RUN_SALT}:gateway-conformance-${part}` });
    case 'graphile-worker':
      return createGraphileWorkerGatewayStore({
        databaseUrl: databaseUrl(),
        graphileSchema: `gwt_${RUN_SALT}_gateway_${name}_gw`,
        uniqueSchema: `gwt_${RUN_SALT}_gateway_${name}_ou`,
      });
  }
}

/** The suite's files of `part` against the gateway on `backend`. */
export function describeConformancePart(backend: ConformanceBackend, part: ConformancePart): void {
  describeConformance(backend, part, async () => makeStore(backend, part));
}
