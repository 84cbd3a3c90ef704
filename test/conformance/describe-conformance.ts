/**
 * The OJS unique-jobs conformance suite, written once and run against every backend. A backend's
 * test file wires its connections into a `MakeConformanceSubject` and calls
 * `describeConformance(name, makeSubject)`; nothing here knows which backend it drives.
 *
 * Sections follow the spec; titles carry the section and, where one exists, the §14 scenario.
 */
import type { MakeConformanceSubject } from './conformance-subject.js';
import type { SuiteContext } from './suite-context.js';
import type { ConformanceSubject } from './conformance-subject.js';
import { policyValidation } from './02-policy-validation.js';
import { keyComputation } from './04-key-computation.js';
import { conflictStrategies } from './05-conflict-strategies.js';
import { stateFiltering } from './06-state-filtering.js';
import { period } from './07-period.js';
import { concurrency } from './08-concurrency.js';
import { retry } from './09-retry.js';
import { duplicateCounts } from './10-duplicate-counts.js';

export function describeConformance(name: string, makeSubject: MakeConformanceSubject): void {
  describe(`OJS unique jobs conformance: ${name}`, function () {
    this.timeout(30_000);
    let current: ConformanceSubject | undefined;
    const ctx: SuiteContext = {
      get subject() {
        if (!current) throw new Error('no conformance subject: called outside a test');
        return current;
      },
    };

    beforeEach(async function () {
      current = await makeSubject({ title: this.currentTest!.fullTitle() });
    });

    afterEach(async function () {
      const subject = current;
      current = undefined;
      // A skipped test ('pending') left nothing worth inspecting; only a failure keeps its data.
      const state = this.currentTest?.state;
      await subject?.close({ passed: state === 'passed' || state === 'pending' });
    });

    policyValidation(ctx);
    keyComputation(ctx);
    conflictStrategies(ctx);
    stateFiltering(ctx);
    period(ctx);
    concurrency(ctx);
    retry(ctx);
    duplicateCounts(ctx);
  });
}
