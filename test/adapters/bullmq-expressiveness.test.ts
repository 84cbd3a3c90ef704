/**
 * The rows of docs/expressiveness.md on BullMQ (test/expressiveness) through the backend: a key
 * prefix per test. Through `withUniqueness(queue).add` / `.addBulk`:
 * bullmq-expressiveness-add.test.ts and bullmq-expressiveness-add-bulk.test.ts (a file each, so
 * that mocha's parallel workers run them side by side).
 */
import { createHash } from 'node:crypto';
import createSubject from '../conformance/subjects/bullmq.js';
import { describeExpressiveness } from '../expressiveness/describe-expressiveness.js';
import { RUN_SALT } from '../run-salt.js';

describeExpressiveness('bullmq', ({ title }) =>
  createSubject({ prefix: `ojs-test:${RUN_SALT}:${createHash('sha1').update(`bullmq-expressiveness.test.ts\0${title}`).digest('hex')}` }),
);
