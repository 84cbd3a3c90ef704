/** The rows of docs/expressiveness.md through `withUniqueness(queue).addBulk` (test/expressiveness). */
import { describeBullMQEntryExpressiveness } from './bullmq-expressiveness-entry.js';

describeBullMQEntryExpressiveness('withUniqueness.addBulk');
