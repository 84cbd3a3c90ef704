/**
 * The gateway's packages are optional peers (fastify; a backend's host client): without one, the
 * gateway says what to install, with a typed error, and `ojs-unique serve` exits 1 before any
 * store connects. "Not installed" is Node's own resolution failure: a package name that does not
 * exist, or a resolve hook (test/fixtures/hide-packages.mjs) hiding an installed one from a real
 * `ojs-unique serve`.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { GatewayDependencyError } from '../../server/index.js';
import { importGatewayDependency, loadFastify } from '../../server/gateway-dependency.js';
import { cliArgs } from '../cli-command.js';

const ABSENT = 'ojs-unique-test-package-that-is-not-installed';

function serveWithout(hidden: string[], args: string[]) {
  const result = spawnSync(
    process.execPath,
    ['--import', './test/fixtures/hide-packages.mjs', ...cliArgs('serve', '--port', '0', ...args)],
    { encoding: 'utf8', env: { ...process.env, OJS_TEST_HIDE_PACKAGES: hidden.join(',') }, timeout: 60_000 },
  );
  return { status: result.status, stderr: result.stderr };
}

describe("the gateway's optional dependencies", function () {
  this.timeout(90_000);

  it('a package that is not installed is a GatewayDependencyError naming what to install', async () => {
    const name: string = ABSENT;
    const error = await importGatewayDependency(() => import(name), [ABSENT], 'the test').then(
      () => expect.fail('imported a package that does not exist'),
      (caught: unknown) => caught,
    );
    expect(error).to.be.instanceOf(GatewayDependencyError);
    expect(error).to.deep.include({ code: 'missing_dependency', packages: [ABSENT], name: 'GatewayDependencyError' });
    expect((error as Error).message).to.equal(`the test needs ${ABSENT}, and it is not installed: npm install ${ABSENT}`);
    expect((error as Error & { cause: { code: string } }).cause.code).to.equal('ERR_MODULE_NOT_FOUND');
  });

  it('any other failure is rethrown as it is: a missing package it was not told about, a missing file', async () => {
    const name: string = ABSENT;
    const other = await importGatewayDependency(() => import(name), ['fastify'], 'the test').catch((caught: unknown) => caught);
    expect(other).not.to.be.instanceOf(GatewayDependencyError);
    expect(other).to.have.property('code', 'ERR_MODULE_NOT_FOUND');
    const file: string = './no-such-file.js';
    const missingFile = await importGatewayDependency(() => import(file), ['fastify'], 'the test').catch((caught: unknown) => caught);
    expect(missingFile).not.to.be.instanceOf(GatewayDependencyError);
  });

  it('an installed one loads: fastify, as the gateway uses it', async () => {
    const fastify = await loadFastify();
    expect(fastify.default).to.be.a('function');
    expect(fastify.LogController).to.be.a('function');
  });

  it('ojs-unique serve without fastify exits 1 saying "npm install fastify"', () => {
    const { status, stderr } = serveWithout(['fastify'], []);
    expect(status).to.equal(1);
    expect(stderr).to.include('npm install fastify').and.not.include('listening on');
  });

  it('ojs-unique serve --backend bullmq without bullmq exits 1 naming bullmq and ioredis', () => {
    const { status, stderr } = serveWithout(['bullmq'], ['--backend', 'bullmq', '--redis-url', 'redis://127.0.0.1:6379']);
    expect(status).to.equal(1);
    expect(stderr).to.include('npm install bullmq ioredis');
  });
});
