/** The conformance suite's parts (gateway-conformance.ts) cover every file of the suite exactly once. */
import { expect } from 'chai';
import { CONFORMANCE_PARTS } from './gateway-conformance.js';
import { loadSuites, SUITES_DIR } from './ojs-conformance-runner.js';

describe('OJS conformance suite parts', function () {
  it('every suite file is in exactly one part', function () {
    const suites = loadSuites();
    if (suites.length === 0) this.skip(); // ../shared absent (SUITES_DIR), as the conformance files say
    const misplaced = suites
      .map(({ file }) => file.split('\\').join('/'))
      .filter((file) => Object.values(CONFORMANCE_PARTS).filter((inPart) => inPart(file)).length !== 1);
    expect(misplaced, `files in no part or in several (${SUITES_DIR})`).to.deep.equal([]);
  });
});
