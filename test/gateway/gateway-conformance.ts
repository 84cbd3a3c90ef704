/**
 * Runs every suite file (one mocha test each, titled by test id and file) against a gateway
 * started in-process on an ephemeral port with `--test-reset`. Skips, saying so, when
 * `../shared/ojs-conformance/suites` is absent. A file listed in conformance-known-gaps.ts must
 * still fail (so the list cannot outlive its gap); every other file must pass.
 */
import { expect } from 'chai';
import type { FastifyInstance } from 'fastify';
import type { GatewayStore } from '../../server/gateway-store.js';
import { createOjsServer } from '../../server/ojs-server.js';
import { knownGap } from './conformance-known-gaps.js';
import { loadSuites, runConformanceTest, SUITES_DIR, waitsOf } from './ojs-conformance-runner.js';

/**
 * The suite's files in parts that run as test files of their own, so that mocha's workers run
 * them side by side: two per-minute cron files wait over three minutes of real time between them.
 */
export const CONFORMANCE_PARTS = {
  /** Levels 0 and 1. */
  core: (file: string) => /^level-[01]-/.test(file),
  /** Waits for two ticks of a per-minute cron (about 130 s). */
  'cron-overlap': (file: string) => file.endsWith('cron-overlap-prevention.json'),
  /** Levels 2 to 4 but the cron overlap file. */
  scheduled: (file: string) => /^level-[234]-/.test(file) && !file.endsWith('cron-overlap-prevention.json'),
} as const;

export type ConformancePart = keyof typeof CONFORMANCE_PARTS;

/** The store a part's gateway serves, and how the suite's waits let time pass on it (default: real sleeps). */
export interface ConformanceServer {
  store: GatewayStore;
  elapse?: (ms: number) => Promise<void>;
}

export function describeConformance(backend: string, part: ConformancePart, makeServer: () => Promise<ConformanceServer>): void {
  describe(`OJS conformance suites over HTTP: ${backend} (${part})`, function () {
    this.timeout(90_000);
    const inPart = CONFORMANCE_PARTS[part];
    const suites = loadSuites().filter(({ file }) => inPart(file.split('\\').join('/')));
    let app: FastifyInstance;
    let baseUrl = '';
    let elapse: ConformanceServer['elapse'];
    before(async function () {
      if (suites.length === 0) return;
      const server = await makeServer();
      elapse = server.elapse;
      app = await createOjsServer({ store: server.store, testReset: true });
      baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
    });
    after(async () => {
      await app?.close();
    });
    if (suites.length === 0) {
      it(`skipped: the conformance suites are absent (${SUITES_DIR})`, function () {
        this.skip();
      });
      return;
    }
    const reset = async () => {
      const response = await fetch(`${baseUrl}/ojs/v1/admin/reset`, { method: 'POST' });
      expect(response.status, 'reset').to.equal(200);
    };
    for (const { file, test } of suites) {
      const gap = knownGap(file);
      if (gap !== null) {
        it(`${test.test_id} ${file} still fails, a known gap: ${gap}`, async () => {
          const failures = await runConformanceTest(baseUrl, test, reset, { failFast: true, elapse });
          expect(failures, `${file} passes now: take it off test/gateway/conformance-known-gaps.ts`).to.not.deep.equal([]);
        });
        continue;
      }
      it(`${test.test_id} ${file}`, async function () {
        this.timeout(90_000 + (elapse ? 0 : waitsOf(test)));
        const failures = await runConformanceTest(baseUrl, test, reset, { elapse });
        expect(failures, failures.join('\n')).to.deep.equal([]);
      });
    }
  });
}
