/** The public OJS conformance suite's levels 2 to 4 but the cron overlap file, against the gateway on memory (its clock moved by the waits: conformance-stores.ts). */
import { describeConformancePart } from './conformance-stores.js';

describeConformancePart('memory', 'scheduled');
