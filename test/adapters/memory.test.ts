import createSubject from '../conformance/subjects/memory.js';
import { describeConformance } from '../conformance/describe-conformance.js';

describeConformance('memory', () => createSubject());
