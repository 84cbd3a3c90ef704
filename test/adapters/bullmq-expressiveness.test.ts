/**
 * The rows of docs/expressiveness.md on BullMQ (test/expressiveness): a key prefix per test.
 */
import { createHash } from 'node:crypto';
import createSubject from '../conformance/subjects/bullmq.js';
import { describeExpressiveness } from '../expressiveness/describe-expressiveness.js';
import { RUN_SALT } from '../run-salt.js';

describeExpressiveness('bullmq', ({ title }) =>
  createSubject({ prefix: `ojs-test:${RUN_SALT}:${createHash('sha1').update(`bullmq-expressiveness.test.ts\0${title}`).digest('hex')}` }),
);
