/**
 * `ojs-unique serve`: with no arguments it serves the memory gateway on loopback; flags are
 * checked; SIGTERM shuts it down cleanly (exit 0). The Graphile Worker gateway's schemas are the
 * run's salted ones, removed with the run's leftovers.
 */
import { expect } from 'chai';
import { spawn, spawnSync } from 'node:child_process';
import pg from 'pg';
import { cliArgs } from '../cli-command.js';
import { databaseUrl } from '../conformance/subjects/graphile-worker.js';
import { gatewayNames } from './gateway-test-server.js';

function startServe(args: string[], env: NodeJS.ProcessEnv = process.env) {
  const child = spawn(process.execPath, cliArgs('serve', ...args), { stdio: ['ignore', 'pipe', 'pipe'], env });
  let output = '';
  const address = new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += String(chunk);
      const match = /listening on (http:\/\/[^\s"]+)/.exec(output);
      if (match) resolve(match[1]!);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => reject(new Error(`serve exited (${code}) before listening:\n${output}`)));
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, address, exited, output: () => output };
}

describe('ojs-unique serve', function () {
  this.timeout(30_000);

  it('serves the memory gateway on 127.0.0.1 by default, and exits 0 on SIGTERM', async () => {
    const serve = startServe(['--port', '0']);
    const address = await serve.address;
    expect(address).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
    const manifest = (await (await fetch(`${address}/ojs/manifest`)).json()) as { backend: string };
    expect(manifest.backend).to.equal('memory');
    const pushed = await fetch(`${address}/ojs/v1/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/openjobspec+json' },
      body: JSON.stringify({ type: 'a.b', args: [] }),
    });
    expect(pushed.status).to.equal(201);
    expect((await fetch(`${address}/ojs/v1/admin/reset`, { method: 'POST' })).status, 'no reset without --test-reset').to.equal(404);
    serve.child.kill('SIGTERM');
    expect(await serve.exited).to.equal(0);
  });

  it('--count-duplicates: a duplicate PUSH is counted on the job it met; without the flag it is not', async () => {
    const push = (address: string) =>
      fetch(`${address}/ojs/v1/jobs`, {
        method: 'POST',
        headers: { 'content-type': 'application/openjobspec+json' },
        body: JSON.stringify({ type: 'a.dup', args: [], options: { unique: { keys: ['type'], on_conflict: 'ignore' } } }),
      }).then(async (reply) => (await reply.json()) as { job: Record<string, unknown> });
    for (const [flags, counted] of [
      [['--count-duplicates'], 1],
      [[], undefined],
    ] as const) {
      const serve = startServe(['--port', '0', ...flags]);
      const address = await serve.address;
      const first = await push(address);
      const again = await push(address);
      expect(again.job.id).to.equal(first.job.id);
      expect(again.job.duplicate_count, flags.join(' ') || 'no flag').to.equal(counted);
      serve.child.kill('SIGTERM');
      expect(await serve.exited).to.equal(0);
    }
  });

  it('serves Graphile Worker with --no-prepared-statements, --max-connections and --max-pool-size', async () => {
    const names = gatewayNames('cli');
    const appName = `${names.graphileSchema}-serve`;
    const serve = startServe(
      [
        '--port',
        '0',
        '--backend',
        'graphile-worker',
        '--database-url',
        databaseUrl(),
        '--prefix',
        names.graphileSchema,
        '--unique-schema',
        names.uniqueSchema,
        '--no-prepared-statements',
        '--max-connections',
        '8',
        '--max-pool-size',
        '2',
      ],
      { ...process.env, PGAPPNAME: appName },
    );
    try {
      const address = await serve.address;
      const pushes = await Promise.all(
        Array.from({ length: 8 }, (_, n) =>
          fetch(`${address}/ojs/v1/jobs`, {
            method: 'POST',
            headers: { 'content-type': 'application/openjobspec+json' },
            body: JSON.stringify({ type: 'cli.job', args: [{ n }], options: { unique: { key: ['n'] } } }),
          }),
        ),
      );
      expect(pushes.map((pushed) => pushed.status)).to.deep.equal(Array(8).fill(201));
      const pool = new pg.Pool({ connectionString: databaseUrl(), max: 1 });
      try {
        const { rows } = await pool.query<{ n: number }>('select count(*)::int as n from pg_stat_activity where application_name = $1', [
          appName,
        ]);
        expect(rows[0]!.n, 'connections the gateway holds after 8 concurrent pushes').to.be.within(1, 2);
      } finally {
        await pool.end();
      }
    } finally {
      serve.child.kill('SIGTERM');
    }
    expect(await serve.exited).to.equal(0);
  });

  it('serves Graphile Worker from a URL naming no user where $USER and $PGUSER are unset (the OS user, as psql)', async () => {
    const names = gatewayNames('cli-nouser');
    const url = new URL(databaseUrl());
    url.username = '';
    const { USER: _user, PGUSER: _pguser, ...env } = process.env;
    const serve = startServe(
      [
        '--port',
        '0',
        '--backend',
        'graphile-worker',
        '--database-url',
        url.href,
        '--prefix',
        names.graphileSchema,
        '--unique-schema',
        names.uniqueSchema,
      ],
      env,
    );
    const address = await serve.address;
    const pushed = await fetch(`${address}/ojs/v1/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/openjobspec+json' },
      body: JSON.stringify({ type: 'cli.job', args: [{ n: 1 }] }),
    });
    expect(pushed.status, await pushed.text()).to.equal(201);
    serve.child.kill('SIGTERM');
    expect(await serve.exited).to.equal(0);
  });

  it('--help prints the usage (exit 0)', () => {
    const result = spawnSync(process.execPath, cliArgs('serve', '--help'), { encoding: 'utf8' });
    expect(result.status).to.equal(0);
    expect(result.stdout).to.include('ojs-unique serve [--backend memory|bullmq|graphile-worker]');
    expect(result.stdout).to.include('--max-connections').and.include('--no-prepared-statements').and.include('--max-pool-size');
    expect(result.stdout).to.include('--count-duplicates');
  });

  it('refuses bad flags with exit code 2 and the usage', () => {
    for (const args of [
      ['--backend', 'sqs'],
      ['--port', 'x'],
      ['--nope'],
      ['--max-connections', '0'],
      ['--request-timeout', '-1'],
      ['--max-pool-size', '0'],
    ]) {
      const result = spawnSync(process.execPath, cliArgs('serve', ...args), { encoding: 'utf8' });
      expect(result.status, args.join(' ')).to.equal(2);
      expect(result.stderr).to.include('usage:');
    }
  });
});
