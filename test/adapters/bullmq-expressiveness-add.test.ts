/** The rows of docs/expressiveness.md through `withUniqueness(queue).add` (test/expressiveness). */
import { describeBullMQEntryExpressiveness } from './bullmq-expressiveness-entry.js';

describeBullMQEntryExpressiveness('withUniqueness.add');
