/**
 * `npm run demo -- --backend bullmq` runs end to end on Redis and says what the memory demo says.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'chai';

describe('bullmq adapter: npm run demo -- --backend bullmq', function () {
  this.timeout(60_000);

  it('walks through every strategy on BullMQ and ends with one live job per burst', async function () {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'examples/demo.ts', '--backend', 'bullmq'], {
      timeout: 60_000,
    });
    expect(stdout).to.contain('strong');
    expect(stdout).to.match(/-> replaced .*cancelled/);
    expect(stdout).to.match(/scheduled_at kept: (\S+) -> \1/);
    for (const strategy of ['reject', 'ignore', 'replace'])
      expect(stdout).to.match(new RegExp(`${strategy}\\s+created 1,.*live jobs now: 1`));
  });
});
