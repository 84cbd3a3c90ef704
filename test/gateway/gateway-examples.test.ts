/**
 * The migration examples (examples/gateway/), run as a user runs them, with a salted prefix and
 * schemas (OJS_EXAMPLE_SALT).
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { RUN_SALT } from '../run-salt.js';

function runExample(name: string): string {
  const result = spawnSync(process.execPath, ['--import', 'tsx', `examples/gateway/${name}.ts`], {
    encoding: 'utf8',
    env: { ...process.env, OJS_EXAMPLE_SALT: `gw${RUN_SALT}` },
  });
  expect(result.status, result.stderr).to.equal(0);
  return result.stdout;
}

describe('the gateway migration examples', function () {
  this.timeout(60_000);

  it('BullMQ: the HTTP job meets the producer job, an HTTP worker acks it, the BullMQ Worker runs an HTTP job', () => {
    const lines = runExample('bullmq').trim().split('\n');
    expect(lines[0]).to.match(/^producer \(BullMQ\): job (\S+) created$/);
    const id = /job (\S+) created/.exec(lines[0]!)![1];
    expect(lines[1]).to.equal(`service (HTTP): 409 duplicate, existing job ${id}`);
    expect(lines[2]).to.equal(`HTTP worker: ${id} completed`);
    expect(lines[3]).to.match(/^BullMQ worker: [0-9a-f-]{36} order 2$/);
  });

  it('Graphile Worker: the same, with makeUniqueWorkerUtils and a task runner', () => {
    const lines = runExample('graphile-worker').trim().split('\n');
    expect(lines[0]).to.match(/^producer \(Graphile\): job (\S+) created$/);
    const id = /job (\S+) created/.exec(lines[0]!)![1];
    expect(lines[1]).to.equal(`service (HTTP): 409 duplicate, existing job ${id}`);
    expect(lines[2]).to.equal(`HTTP worker: ${id} completed`);
    expect(lines).to.include('Graphile task: order 2');
  });
});
