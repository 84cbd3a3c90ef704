/**
 * The BullMQ examples run as documented (docs/bullmq.md) and say what they claim.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { RUN_SALT } from '../run-salt.js';

const run = async (file: string) =>
  (
    await promisify(execFile)(process.execPath, ['--import', 'tsx', file], {
      timeout: 60_000,
      env: { ...process.env, OJS_EXAMPLE_SALT: RUN_SALT },
    })
  ).stdout;

describe('bullmq adapter: examples', function () {
  this.timeout(60_000);

  it('examples/bullmq/strategies.ts shows each strategy', async function () {
    const out = await run('examples/bullmq/strategies.ts');
    expect(out).to.match(/welcome user 42 again\s+-> rejected: duplicate of 1 \(available\)/);
    expect(out).to.match(/digest user 7 again\s+-> deduplicated 2/);
    expect(out).to.contain('data {"user_id":7,"items":[1]}');
    expect(out).to.match(/resize avatar \(new\.jpg\)\s+-> replaced 4 \(cancelled 3\)/);
    expect(out).to.match(/scheduled_at (\S+) -> \1/);
    expect(out).to.contain('cancelled record: cancelled, replaced_by 4; BullMQ getJob: undefined');
  });

  it('examples/bullmq/worker.ts processes a job with a Worker and keeps its key after completion', async function () {
    const out = await run('examples/bullmq/worker.ts');
    expect(out).to.contain('worker: job 1 completed');
    expect(out).to.contain('added again after completion: deduplicated, existing job 1 is completed');
    expect(out).to.contain('removeOnComplete: true is refused');
  });
});
