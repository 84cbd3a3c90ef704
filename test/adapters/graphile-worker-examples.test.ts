/**
 * The Graphile Worker examples run as documented (`npx tsx examples/graphile-worker/<name>.ts`)
 * and print what their opening comments say they do.
 */
import { spawnSync } from 'node:child_process';
import { expect } from 'chai';
import { RUN_SALT } from '../run-salt.js';
import { makePool } from './graphile-worker-fixture.js';

/** Salted example schema names (examples/graphile-worker/example-connection.ts), so two runs never share them. */
const env = { ...process.env, OJS_EXAMPLE_SALT: RUN_SALT };

function runExample(name: string): string {
  const result = spawnSync(process.execPath, ['--import', 'tsx', `examples/graphile-worker/${name}.ts`], { encoding: 'utf8', env });
  expect(result.stderr, `${name} stderr`).to.equal('');
  expect(result.status, `${name} exit status`).to.equal(0);
  return result.stdout;
}

describe('graphile-worker examples', function () {
  this.timeout(120_000); // a safety net: two runs at once on 2 CPUs take several times longer
  let failed = false;
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  // The examples keep their schemas for a look after a run; this run's salted ones go when all passed.
  after(async function () {
    if (failed) return;
    const pool = makePool(1);
    try {
      for (const name of ['ojs_example_unique', 'ojs_example_graphile_worker', 'ojs_example_shop'])
        await pool.query(`drop schema if exists "${name}_${RUN_SALT}" cascade`);
    } finally {
      await pool.end();
    }
  });

  it('npm run demo -- --backend graphile-worker walks through every section with one live job per burst', () => {
    const result = spawnSync(process.execPath, ['--import', 'tsx', 'examples/demo.ts', '--backend', 'graphile-worker'], {
      encoding: 'utf8',
      env,
    });
    expect(result.stderr).to.equal('');
    expect(result.status).to.equal(0);
    const out = result.stdout;
    expect(out).to.contain('ojs-unique demo on graphile-worker: strong uniqueness');
    for (const n of [1, 2, 3, 4, 5, 6, 7, 8, 9]) expect(out).to.match(new RegExp(`^${n}\\. `, 'm'));
    expect(out).to.match(/reject {3}created 1, deduplicated 0, replaced 0, rejected 99; live jobs now: 1/);
    expect(out).to.match(/ignore {3}created 1, deduplicated 99, replaced 0, rejected 0; live jobs now: 1/);
    expect(out).to.match(/replace {2}created 1, deduplicated 0, replaced 99, rejected 0; live jobs now: 1/);
    const kept = /scheduled_at kept: (\S+) -> (\S+)/.exec(out);
    expect(kept?.[1]).to.equal(kept?.[2]);
  });

  it('worker-utils: a redelivered webhook is deduplicated, a newer resize replaces the pending one', () => {
    const out = runExample('worker-utils');
    expect(out).to.match(/^webhook: created job (\d+), then deduplicated -> job \1 \(available\)$/m);
    expect(out).to.match(/^resize: job (\d+) replaced job (\d+) \(now cancelled\)$/m);
    expect(out).to.match(/^reject: duplicate of job \d+ \(available\)$/m);
  });

  it('follow-up-task: three tasks ask for one digest; one is created and two are deduplicated', () => {
    const out = runExample('follow-up-task');
    const outcomes = [...out.matchAll(/^order \d: digest (\w+) \(job (\d+)\)$/gm)];
    expect(outcomes.map((m) => m[1])).to.deep.equal(['created', 'deduplicated', 'deduplicated']);
    expect(new Set(outcomes.map((m) => m[2])).size).to.equal(1);
  });

  it('transactional-enqueue: the rolled-back order leaves no job behind', () => {
    const out = runExample('transactional-enqueue');
    expect(out).to.match(/^order 1: committed, invoice job \d+ created$/m);
    expect(out).to.contain('order 2: rolled back (payment declined)');
    expect(out).to.contain('orders: 1, invoice jobs in Graphile Worker: 1');
  });
});
