import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cliArgs } from './cli-command.js';

function cli(args: string[], input?: string) {
  const result = spawnSync(process.execPath, cliArgs(...args), { encoding: 'utf8', input });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

function file(name: string, content: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), 'ojs-unique-cli-'));
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

describe('the ojs-unique command', function () {
  // Each test starts the command several times; from source (node + tsx), under `npm test`'s
  // parallel workers on two cores, a start can take seconds.
  this.timeout(90_000);

  it('--help prints the usage and --version the package version, exit 0; no command is a usage error (exit 2)', function () {
    for (const flag of ['--help', '-h', 'help']) {
      const { status, stdout } = cli([flag]);
      expect([status, stdout.split('\n')[0]], flag).to.deep.equal([0, 'usage:']);
      expect(stdout).to.contain('ojs-unique key');
    }
    const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    expect(cli(['--version'])).to.deep.include({ status: 0, stdout: `${version}\n` });
    expect(cli([]).status).to.equal(2);
  });

  it('key prints the §4.3 pre-image and its SHA-256', function () {
    const { status, stdout } = cli(['key', 'examples/jobs/email-send.json']);
    expect(status).to.equal(0);
    expect(stdout).to.equal(
      'key:       71f9344b82e66297a49775bbe27752297922842b675330641ebe3ff4fea46c1f\n' +
        'pre-image: {"args":{"user_id":42},"queue":"notifications","type":"email.send"}\n',
    );
  });

  it('key reads options.unique, a separate --policy, standard input, and prints JSON on request', function () {
    const job = { type: 'report.daily', args: { date: '2026-02-12' }, options: { unique: { keys: ['type', 'args'] } } };
    expect(JSON.parse(cli(['key', file('job.json', job), '--json']).stdout)).to.include({
      canonical: '{"args":{"date":"2026-02-12"},"type":"report.daily"}',
    });
    const policy = file('policy.json', { keys: ['queue'] });
    expect(cli(['key', '-', '--policy', policy], JSON.stringify({ type: 'a.b', args: [] })).stdout).to.contain(
      'pre-image: {"queue":"default","type":"a.b"}',
    );
  });

  it('key --gateway gives the key the OJS gateway enqueues under: array args mapped to the host payload first', function () {
    // Over HTTP, args [{ user_id: 42 }] is the payload { user_id: 42 }: the same key as the host job.
    const push = {
      type: 'email.send',
      args: [{ user_id: 42 }],
      options: { queue: 'notifications', unique: { keys: ['type', 'queue', 'args'] } },
    };
    const host = { type: 'email.send', queue: 'notifications', args: { user_id: 42 }, unique: { keys: ['type', 'queue', 'args'] } };
    const viaGateway = cli(['key', '--gateway', file('push.json', push)]);
    expect(viaGateway.status).to.equal(0);
    const hostKey = cli(['key', file('host.json', host)]).stdout.split('\n')[0];
    expect(viaGateway.stdout).to.equal(
      `${hostKey}\npre-image: {"args":{"user_id":42},"queue":"notifications","type":"email.send"}\npayload:   {"user_id":42}\n`,
    );
    // Any other args are wrapped; the JS SDK's `key` (arg field names) is read as args_keys; --json adds the payload.
    const wrapped = JSON.parse(
      cli(['key', '--gateway', '--json', file('push.json', { type: 'a.b', args: [1, 'x'], unique: { key: ['ojs_args'] } })]).stdout,
    );
    expect(wrapped).to.include({ canonical: '{"args":{"ojs_args":[1,"x"]},"type":"a.b"}' });
    expect(wrapped.payload).to.deep.equal({ ojs_args: [1, 'x'] });
    // --policy stands for the file's policy, as options.unique.
    expect(
      cli(['key', '--gateway', file('push.json', { type: 'a.b', args: [] }), '--policy', file('p.json', { keys: ['queue'] })]).stdout,
    ).to.contain('pre-image: {"queue":"default","type":"a.b"}');
  });

  it('key --gateway of the README example is the key of the same job added by a host producer', function () {
    const host = cli(['key', 'examples/jobs/email-send.json']).stdout;
    expect(cli(['key', '--gateway', 'examples/jobs/email-send-push.json']).stdout).to.equal(
      `${host}payload:   {"user_id":42,"template":"welcome","locale":"en-US"}\n`,
    );
  });

  it('key without --gateway hashes array args as written and says the gateway key differs; --gateway refuses what the gateway refuses', function () {
    const push = { type: 'email.send', args: [{ user_id: 42 }], unique: { keys: ['type', 'args'] } };
    const plain = cli(['key', file('push.json', push)]);
    expect(plain.stdout).to.contain('pre-image: {"args":[{"user_id":42}],"type":"email.send"}');
    expect(plain.stderr).to.contain('ojs-unique key --gateway');
    expect(cli(['key', '--json', file('push.json', push)]).stderr).to.equal('');
    const refused = cli(['key', '--gateway', file('bad.json', { type: 'a.b', args: { n: 1 }, unique: { keys: ['args'] } })]);
    expect(refused.status).to.equal(1);
    expect(refused.stderr.trim()).to.equal('args: must be a JSON array');
    expect(cli(['validate', '--gateway', file('push.json', push)]).status).to.equal(2);
  });

  it('validate lists every problem with its field path and exits 1', function () {
    const { status, stderr } = cli(['validate', 'examples/jobs/typo-policy.json']);
    expect(status).to.equal(1);
    expect(stderr.trim().split('\n')).to.deep.equal([
      'unique.keys[1]: "argz" is not one of type, queue, args, meta',
      'unique.period: "1 hour" is not an ISO 8601 duration of the form PnYnMnWnDTnHnMnS (e.g. "PT1H", "P1D", "PT0.5S")',
      'unique.states[1]: "running" is not one of scheduled, available, pending, active, completed, retryable, cancelled, discarded',
      'unique.on_conflict: "skip" is not one of reject, replace, replace_except_schedule, ignore',
    ]);
  });

  it('validate checks a job against its policy (§2.2 args_keys must exist)', function () {
    const job = { type: 'a.b', args: { userId: 1 }, unique: { keys: ['args'], args_keys: ['user_id'] } };
    const { status, stdout } = cli(['validate', file('job.json', job), '--json']);
    expect(status).to.equal(1);
    expect(JSON.parse(stdout).issues[0].path).to.equal('unique.args_keys[0]');
  });

  it('validate reads a report-only policy (x_report_only): valid, saying so; a mark that is not a boolean names it', function () {
    const valid = cli(['validate', file('report-only.json', { on_conflict: 'ignore', x_report_only: true }), '--json']);
    expect(valid.status).to.equal(0);
    expect(JSON.parse(valid.stdout)).to.include({ valid: true, report_only: true });
    const invalid = cli(['validate', file('report-only-bad.json', { x_report_only: 'yes' })]);
    expect(invalid.status).to.equal(1);
    expect(invalid.stderr.trim()).to.equal('unique.x_report_only: must be a boolean');
  });

  it('validate reads x_successor: valid with active in states, its field named without', function () {
    const valid = cli(['validate', file('successor.json', { on_conflict: 'ignore', x_successor: 'latest' }), '--json']);
    expect(valid.status).to.equal(0);
    expect(JSON.parse(valid.stdout).policy).to.include({ x_successor: 'latest' });
    const invalid = cli(['validate', file('successor-bad.json', { states: ['available'], x_successor: 'latest' })]);
    expect(invalid.status).to.equal(1);
    expect(invalid.stderr.trim()).to.match(/^unique\.x_successor: is set but states does not include "active"/);
  });

  it('validate prints the policy with its defaults when valid', function () {
    const { status, stdout } = cli(['validate', file('policy.json', { on_conflict: 'ignore' })]);
    expect(status).to.equal(0);
    expect(stdout).to.contain('valid policy').and.contain('"states": [');
  });

  it('§2.2 a job whose unique is null or absent has no policy: validate says so, key needs --policy', function () {
    for (const job of [
      { type: 'a.b', args: { id: 1 }, unique: null, options: { unique: { keys: ['args'] } } },
      { type: 'a.b', args: { id: 1 } },
    ]) {
      const path = file('job.json', job);
      const validated = cli(['validate', path]);
      expect(validated.status).to.equal(0);
      expect(validated.stdout).to.contain('without a unique policy');
      expect(JSON.parse(cli(['validate', path, '--json']).stdout)).to.deep.equal({ valid: true, policy: null });
      const keyed = cli(['key', path]);
      expect(keyed.status).to.equal(2);
      expect(keyed.stderr).to.contain('no unique policy');
      expect(cli(['key', path, '--policy', file('policy.json', { keys: ['args'] })]).stdout).to.contain(
        'pre-image: {"args":{"id":1},"type":"a.b"}',
      );
    }
  });

  it('§2.2 validate and key apply the rules of an enqueue to the job (portable input rules)', function () {
    const job = { type: 'a.b', args: { id: 1 }, id: '123', queue: 'a:b', unique: { period: 'P273789Y' } };
    for (const command of ['validate', 'key']) {
      const { status, stdout } = cli([command, file('job.json', job), '--json']);
      expect(status).to.equal(1);
      expect(JSON.parse(stdout).issues.map((i: { path: string }) => i.path)).to.deep.equal(['queue', 'id', 'unique.period']);
    }
  });

  it('refuses unreadable input and bad usage with exit code 2', function () {
    expect(cli(['key', file('bad.json', '{"type":')]).status).to.equal(2);
    expect(cli(['key', '/nonexistent.json']).status).to.equal(2);
    expect(cli(['frobnicate']).status).to.equal(2);
    expect(cli(['key', file('policy.json', { keys: ['type'] })]).stderr).to.contain('not a job');
  });
  it('flags are flags: --json before the file, an unknown option or two files is a usage error (exit 2)', function () {
    const path = file('job.json', { type: 'a.b', args: { id: 1 }, unique: { keys: ['args'] } });
    const flagFirst = cli(['key', '--json', path]);
    expect(flagFirst.status).to.equal(0);
    expect(JSON.parse(flagFirst.stdout)).to.have.property('canonical', '{"args":{"id":1},"type":"a.b"}');
    const unknown = cli(['key', path, '--jsn']);
    expect(unknown.status).to.equal(2);
    expect(unknown.stderr).to.contain('unknown option --jsn');
    const two = cli(['validate', path, path]);
    expect(two.status).to.equal(2);
    expect(two.stderr).to.contain('one file at a time');
  });

  it('a directory or a missing file is a clear error (exit 2), not a stack trace', function () {
    const dir = mkdtempSync(join(tmpdir(), 'ojs-unique-cli-dir-'));
    const isDir = cli(['validate', dir]);
    expect(isDir.status).to.equal(2);
    expect(isDir.stderr).to.contain(`${dir} is a directory, not a JSON file`);
    const missing = cli(['key', join(dir, 'nope.json')]);
    expect(missing.status).to.equal(2);
    expect(missing.stderr).to.contain('nope.json: no such file');
  });

  it('migrate refuses an unknown option or a missing database URL (exit 2) with its usage, before connecting', function () {
    const unknown = cli(['migrate', '--schema', 'x']);
    expect(unknown.status).to.equal(2);
    expect(unknown.stderr).to.contain("Unknown option '--schema'");
    expect(unknown.stderr).to.contain('ojs-unique migrate [--database-url <url>]');
    const { DATABASE_URL: _url, ...env } = process.env;
    const noDatabase = spawnSync(process.execPath, cliArgs('migrate'), { encoding: 'utf8', env });
    expect(noDatabase.status).to.equal(2);
    expect(noDatabase.stderr).to.contain('give the database (--database-url or DATABASE_URL)');
  });
});
