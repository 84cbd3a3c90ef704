/**
 * The shared OJS conformance suite on BullMQ (real Redis, real BullMQ Worker). Each test gets
 * the key prefix `ojs-test:<sha1(file + title)>`; a failed test's keys are kept for inspection.
 */
import { createHash } from 'node:crypto';
import createSubject from '../../examples/demo-backends/bullmq.js';
import { describeConformance } from '../conformance/describe-conformance.js';

describeConformance('bullmq', ({ title }) =>
  createSubject({ prefix: `ojs-test:${createHash('sha1').update(`bullmq-conformance.test.ts\0${title}`).digest('hex')}` }),
);
