import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

describe('README', function () {
  this.timeout(20_000);
  const readme = readFileSync('README.md', 'utf8');
  const quickStart = /```ts\n([\s\S]*?)```/.exec(readme)![1]!;

  it('its quick start is examples/quick-start.ts, and it prints what its comments say', function () {
    const example = readFileSync('examples/quick-start.ts', 'utf8');
    expect(example.split('\n').slice(1).join('\n')).to.equal(quickStart);
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'examples/quick-start.ts'], { encoding: 'utf8' });
    expect(run.status, run.stderr).to.equal(0);
    const [first, second] = run.stdout.trim().split('\n');
    expect(first).to.equal('created deduplicated true');
    expect(second).to.match(/^[0-9a-f-]{36} available$/);
  });

  it('names the two set-up commands', function () {
    expect(readme).to.contain('`npm ci && npm run demo`').and.contain('`npm ci && npm test`');
  });
});
