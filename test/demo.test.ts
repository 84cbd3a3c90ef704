import { expect } from 'chai';
import { spawnSync } from 'node:child_process';

describe('npm run demo (memory backend)', function () {
  this.timeout(30_000);

  it('walks through every section and ends with exactly one live job per burst', function () {
    const result = spawnSync(process.execPath, ['--import', 'tsx', 'examples/demo.ts'], { encoding: 'utf8' });
    expect(result.stderr).to.equal('');
    expect(result.status).to.equal(0);
    const out = result.stdout;
    expect(out).to.contain('ojs-unique demo on memory: strong uniqueness');
    for (const n of [1, 2, 3, 4, 5, 6, 7, 8, 9]) expect(out).to.match(new RegExp(`^${n}\\. `, 'm'));
    expect(out).to.contain('pre-image: {"args":{"user_id":42},"type":"email.welcome"}');
    expect(out).to.match(/reject {3}created 1, deduplicated 0, replaced 0, rejected 99; live jobs now: 1/);
    expect(out).to.match(/ignore {3}created 1, deduplicated 99, replaced 0, rejected 0; live jobs now: 1/);
    expect(out).to.match(/replace {2}created 1, deduplicated 0, replaced 99, rejected 0; live jobs now: 1/);
    const kept = /scheduled_at kept: (\S+) -> (\S+)/.exec(out);
    expect(kept?.[1]).to.equal(kept?.[2]);
  });

  it('refuses an unknown backend', function () {
    const result = spawnSync(process.execPath, ['--import', 'tsx', 'examples/demo.ts', '--backend', 'kafka'], { encoding: 'utf8' });
    expect(result.status).to.equal(2);
    expect(result.stderr).to.contain('unknown backend "kafka"');
  });
});
