/** The rows of docs/expressiveness.md through one entry point of the BullMQ wrapper: a key prefix per test. */
import { createHash } from 'node:crypto';
import { createBullMQEntrySubject, type BullMQEntryPoint } from '../conformance/entry-points/bullmq-entry-points.js';
import { describeExpressiveness } from '../expressiveness/describe-expressiveness.js';
import { RUN_SALT } from '../run-salt.js';

export function describeBullMQEntryExpressiveness(entry: BullMQEntryPoint): void {
  describeExpressiveness(`bullmq ${entry}`, ({ title }) =>
    createBullMQEntrySubject(entry, {
      prefix: `ojs-test:${RUN_SALT}:${createHash('sha1').update(`bullmq-expressiveness.test.ts\0${entry}\0${title}`).digest('hex')}`,
    }),
  );
}
