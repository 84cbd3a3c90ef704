/**
 * Type tests of the `countDuplicates` option (docs/decisions.md, "Duplicate counts"): every entry
 * point and backend that takes it accepts it as a boolean, and refuses a misspelt name, so a typo
 * cannot silently leave counting off. Compiled by `npm run typecheck`, never run.
 *
 * Each `@ts-expect-error` is a test: it fails compilation if the line below it compiles.
 */
import type pg from 'pg';
import { FlowProducer, Queue } from 'bullmq';
import { createBullMQBackend, withUniqueness } from '../../adapters/bullmq/index.js';
import {
  addJobWithClient,
  createGraphileWorkerBackend,
  makeUniqueWorkerUtils,
  withUniqueHelpers,
} from '../../adapters/graphile-worker/index.js';
import { createMemoryBackend } from '../../adapters/memory/index.js';
import { createGatewayStore } from '../../server/create-gateway-store.js';

declare const queue: Queue;
declare const flowProducer: FlowProducer;
declare const client: pg.PoolClient;
declare const pgPool: pg.Pool;

// Accepted, on every entry point and backend.
withUniqueness(queue, { countDuplicates: true });
withUniqueness(flowProducer, { countDuplicates: true });
createBullMQBackend({ connection: 'redis://127.0.0.1:6379', countDuplicates: true });
void makeUniqueWorkerUtils({ pgPool, countDuplicates: true });
withUniqueHelpers({}, { countDuplicates: true });
void addJobWithClient(client, 'task', {}, {}, { countDuplicates: true });
createGraphileWorkerBackend({ pgPool, countDuplicates: true });
createMemoryBackend({ countDuplicates: true });
void createGatewayStore({ backend: 'memory', countDuplicates: true });

// A typo is refused, not ignored.
// @ts-expect-error misspelt option (withUniqueness, a queue)
withUniqueness(queue, { countDuplicate: true });
// @ts-expect-error misspelt option (withUniqueness, a flow producer)
withUniqueness(flowProducer, { countduplicates: true });
// @ts-expect-error misspelt option (createBullMQBackend)
createBullMQBackend({ connection: 'redis://127.0.0.1:6379', countDuplicate: true });
// @ts-expect-error misspelt option (makeUniqueWorkerUtils)
void makeUniqueWorkerUtils({ pgPool, countDuplicate: true });
// @ts-expect-error misspelt option (withUniqueHelpers)
withUniqueHelpers({}, { countDuplicate: true });
// @ts-expect-error misspelt option (addJobWithClient)
void addJobWithClient(client, 'task', {}, {}, { countDuplicate: true });
// @ts-expect-error misspelt option (createGraphileWorkerBackend)
createGraphileWorkerBackend({ pgPool, countDuplicate: true });
// @ts-expect-error misspelt option (createMemoryBackend)
createMemoryBackend({ countDuplicate: true });
// @ts-expect-error misspelt option (createGatewayStore)
void createGatewayStore({ backend: 'memory', countDuplicate: true });

// A boolean, not a string.
// @ts-expect-error not a boolean
withUniqueness(queue, { countDuplicates: 'yes' });
// @ts-expect-error not a boolean
createGraphileWorkerBackend({ pgPool, countDuplicates: 1 });
