/**
 * The shared OJS conformance suite on BullMQ (real Redis, real BullMQ Worker). Each test gets
 * the key prefix `ojs-test:<run salt>:<sha1(file + title)>`; a failed test's keys are kept for inspection.
 */
import { createHash } from 'node:crypto';
import createSubject from '../conformance/subjects/bullmq.js';
import { describeConformance } from '../conformance/describe-conformance.js';
import { RUN_SALT } from '../run-salt.js';

describeConformance('bullmq', ({ title }) =>
  createSubject({ prefix: `ojs-test:${RUN_SALT}:${createHash('sha1').update(`bullmq-conformance.test.ts\0${title}`).digest('hex')}` }),
);
