/** The public OJS conformance suite's levels 2 to 4 but the cron overlap file, against the gateway on bullmq (conformance-stores.ts). */
import { describeConformancePart } from './conformance-stores.js';

describeConformancePart('bullmq', 'scheduled');
