/** The public OJS conformance suite's the per-minute cron overlap file (about 130 s of real time), against the gateway on memory (conformance-stores.ts). */
import { describeConformancePart } from './conformance-stores.js';

describeConformancePart('memory', 'cron-overlap');
