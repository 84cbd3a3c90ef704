/**
 * The shared OJS conformance suite through the entry points BullMQ users call:
 * `withUniqueness(queue).add` and `.addBulk` (test/conformance/entry-points/bullmq-entry-points.ts
 * says how an OJS job maps to their arguments). Same isolation as bullmq-conformance.test.ts.
 */
import { createHash } from 'node:crypto';
import { BULLMQ_ENTRY_POINTS, createBullMQEntrySubject } from '../conformance/entry-points/bullmq-entry-points.js';
import { describeConformance } from '../conformance/describe-conformance.js';
import { RUN_SALT } from '../run-salt.js';

for (const entry of BULLMQ_ENTRY_POINTS) {
  describeConformance(`bullmq ${entry}`, ({ title }) =>
    createBullMQEntrySubject(entry, {
      prefix: `ojs-test:${RUN_SALT}:${createHash('sha1').update(`bullmq-entry-points-conformance.test.ts\0${title}`).digest('hex')}`,
    }),
  );
}
