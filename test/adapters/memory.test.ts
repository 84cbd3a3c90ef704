import createSubject from '../../examples/demo-backends/memory.js';
import { describeConformance } from '../conformance/describe-conformance.js';

describeConformance('memory', () => createSubject());
