/** The public OJS conformance suite's per-minute cron overlap file, against the gateway on memory, whose clock the waits move (conformance-stores.ts). */
import { describeConformancePart } from './conformance-stores.js';

describeConformancePart('memory', 'cron-overlap');
