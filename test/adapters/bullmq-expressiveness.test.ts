/**
 * The rows of docs/expressiveness.md on BullMQ (test/expressiveness), through the backend and
 * through `withUniqueness(queue).add` / `.addBulk`: a key prefix per test.
 */
import { createHash } from 'node:crypto';
import createSubject from '../conformance/subjects/bullmq.js';
import { BULLMQ_ENTRY_POINTS, createBullMQEntrySubject } from '../conformance/entry-points/bullmq-entry-points.js';
import { describeExpressiveness } from '../expressiveness/describe-expressiveness.js';
import { RUN_SALT } from '../run-salt.js';

describeExpressiveness('bullmq', ({ title }) =>
  createSubject({ prefix: `ojs-test:${RUN_SALT}:${createHash('sha1').update(`bullmq-expressiveness.test.ts\0${title}`).digest('hex')}` }),
);

for (const entry of BULLMQ_ENTRY_POINTS) {
  describeExpressiveness(`bullmq ${entry}`, ({ title }) =>
    createBullMQEntrySubject(entry, {
      prefix: `ojs-test:${RUN_SALT}:${createHash('sha1').update(`bullmq-expressiveness.test.ts\0${entry}\0${title}`).digest('hex')}`,
    }),
  );
}
