/**
 * The Graphile Worker examples run as documented (`npx tsx examples/graphile-worker/<name>.ts`)
 * and print what docs/graphile-worker.md says they print.
 */
import { spawnSync } from 'node:child_process';
import { expect } from 'chai';

function runExample(name: string): string {
  const result = spawnSync(process.execPath, ['--import', 'tsx', `examples/graphile-worker/${name}.ts`], { encoding: 'utf8' });
  expect(result.stderr, `${name} stderr`).to.equal('');
  expect(result.status, `${name} exit status`).to.equal(0);
  return result.stdout;
}

describe('graphile-worker examples', function () {
  this.timeout(30_000);

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
