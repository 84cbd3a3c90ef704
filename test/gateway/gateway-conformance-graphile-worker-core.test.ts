/** The public OJS conformance suite's levels 0 and 1, against the gateway on graphile-worker (conformance-stores.ts). */
import { describeConformancePart } from './conformance-stores.js';

describeConformancePart('graphile-worker', 'core');
