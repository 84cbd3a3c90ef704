/** The public OJS conformance suite's levels 0 and 1, against the gateway on memory (its clock moved by the waits: conformance-stores.ts). */
import { describeConformancePart } from './conformance-stores.js';

describeConformancePart('memory', 'core');
