import createSubject from '../conformance/subjects/memory.js';
import { describeExpressiveness } from '../expressiveness/describe-expressiveness.js';

describeExpressiveness('memory', () => createSubject());
