/**
 * The public OJS conformance suites against the gateway on BullMQ, one server for the file, under
 * a salted prefix (`ojs-test:<salt>:gateway-conformance`); the reset deletes that prefix's keys.
 */
import { RUN_SALT } from '../run-salt.js';
import { REDIS_URL } from '../adapters/bullmq-test-redis.js';
import { describeConformance } from './gateway-conformance.js';
import { createBullmqGatewayStore } from '../../server/bullmq-gateway-store.js';

describeConformance('bullmq', async () =>
  createBullmqGatewayStore({ redisUrl: REDIS_URL, prefix: `ojs-test:${RUN_SALT}:gateway-conformance` }),
);
