// Checks the package a user installs, not the source tree: packs the tarball (prepack builds it),
// checks what it holds, runs are-the-types-wrong on it, installs it into throwaway ESM and
// CommonJS projects beside the hosts' peer dependencies, runs a program in each that loads the
// root and both adapter entry points, type-checks a file against the installed package under
// each TypeScript module mode a consumer may use, and runs the installed `ojs-unique` bin. The
// gateway's packages (fastify) are optional peers: the consumers first go without them (`serve`
// must say what to install), then install them for `serve`. No published .d.ts imports zod.
//
// Usage: node scripts/check-package.mjs [--keep]   (--keep leaves the temp projects in place)
// Needs no services. Peer versions are the ones installed here, so npm finds them in its cache.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, normalize, posix } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const keep = process.argv.includes('--keep');
const started = Date.now();
const work = mkdtempSync(join(tmpdir(), 'ojs-unique-package-'));
const failures = [];
let checks = 0;

function check(name, ok, detail = '') {
  checks += 1;
  if (!ok) failures.push(`${name}${detail ? `: ${detail}` : ''}`);
}

function run(command, args, cwd) {
  try {
    return execFileSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    const output = `${error.stdout ?? ''}${error.stderr ?? ''}`.trim();
    throw new Error(`${command} ${args.join(' ')} (in ${cwd}) failed:\n${output}`);
  }
}

const execFileAsync = promisify(execFile);
async function runAsync(name, command, args, cwd, expect) {
  checks += 1;
  try {
    const { stdout } = await execFileAsync(command, args, { cwd, encoding: 'utf8' });
    if (expect && !expect.test(stdout)) throw new Error(`unexpected output:\n${stdout}`);
  } catch (error) {
    const output = `${error.stdout ?? ''}${error.stderr ?? ''}`.trim();
    failures.push(`${name}: ${error.message.split('\n')[0]}\n${output}`);
  }
}

/** `npx ojs-unique serve` (memory, no arguments but an ephemeral port) answers the manifest, then stops on SIGTERM. */
async function checkServe(cwd) {
  checks += 1;
  // A process group of its own: npx runs the bin as its child, and SIGTERM to npx alone would leave
  // the server running, holding this script's pipes open (the check would never end).
  const child = spawn('npx', ['--no', 'ojs-unique', 'serve', '--port', '0'], { cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let output = '';
  try {
    const address = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no "listening on" within 30 s')), 30_000);
      const onData = (chunk) => {
        output += String(chunk);
        const match = /listening on (http:\/\/[^\s"]+)/.exec(output);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      child.on('exit', (code) => reject(new Error(`exited with ${code}`)));
    });
    const manifest = await (await fetch(`${address}/ojs/manifest`)).json();
    if (manifest.backend !== 'memory') throw new Error(`unexpected manifest ${JSON.stringify(manifest)}`);
  } catch (error) {
    failures.push(`npx ojs-unique serve: ${error.message}\n${output}`);
  } finally {
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {
      // already gone
    }
    const stopped = await Promise.race([exited.then(() => true), new Promise((resolve) => setTimeout(() => resolve(false), 10_000))]);
    if (!stopped) {
      failures.push(`npx ojs-unique serve: still running 10 s after SIGTERM\n${output}`);
      process.kill(-child.pid, 'SIGKILL');
    }
    child.stdout.destroy();
    child.stderr.destroy();
  }
}

/** `npx ojs-unique serve` without fastify installed: exit 1, naming what to install, before any store connects. */
async function checkServeWithoutFastify(cwd) {
  checks += 1;
  const result = await new Promise((resolve) => {
    execFile('npx', ['--no', 'ojs-unique', 'serve', '--port', '0'], { cwd, encoding: 'utf8', timeout: 60_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? error.code : 0, output: `${stdout}${stderr}` }),
    );
  });
  if (result.code !== 1 || !result.output.includes('npm install fastify')) {
    failures.push(`npx ojs-unique serve without fastify: exit ${result.code}, expected 1 naming "npm install fastify"\n${result.output}`);
  }
}

// Runs the thunks two at a time (the CI machine has two cores).
async function inPairs(tasks) {
  const queue = [...tasks];
  const worker = async () => {
    while (queue.length > 0) await queue.shift()();
  };
  await Promise.all([worker(), worker()]);
}

const timings = [];
let lap = Date.now();
function timed(step) {
  const now = Date.now();
  timings.push(`${step} ${((now - lap) / 1000).toFixed(1)}s`);
  lap = now;
}

const installedVersion = (name) => JSON.parse(readFileSync(join(repo, 'node_modules', name, 'package.json'), 'utf8')).version;

try {
  // 1. Pack as `npm publish` would: the prepack script builds.
  const packed = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', work], repo))[0];
  const tarball = join(work, packed.filename);
  timed('npm pack (prepack builds)');
  const files = new Set(packed.files.map((f) => f.path));
  const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8'));

  // Exactly the Node versions that require() ES modules without a flag (20.19+, 22.12+): 21 and
  // 22.0-22.11 need --experimental-require-module, which a CommonJS user of this package lacks.
  check('engines.node is ^20.19.0 || >=22.12.0', pkg.engines?.node === '^20.19.0 || >=22.12.0');

  // The gateway's own packages (imported by dist/server and by nothing the library entry points
  // load) are optional peers: a library user installs none of them, and no library .d.ts names one.
  const builtFiles = [...files].filter((f) => f.startsWith('dist/'));
  const importsOf = (file) => {
    const text = readFileSync(join(repo, file), 'utf8');
    const names = new Set();
    for (const [, specifier] of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"]([^'"]+)['"]/g)) {
      if (specifier.startsWith('.') || specifier.startsWith('node:')) continue;
      names.add(specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]);
    }
    return names;
  };
  const isServer = (f) => f.startsWith('dist/server/') || f === 'dist/cli/cli-serve.js';
  const libraryImports = new Set(builtFiles.filter((f) => f.endsWith('.js') && !isServer(f)).flatMap((f) => [...importsOf(f)]));
  const serverOnly = [...new Set(builtFiles.filter((f) => f.endsWith('.js') && isServer(f)).flatMap((f) => [...importsOf(f)]))].filter(
    (name) => !libraryImports.has(name),
  );
  check('the gateway imports fastify, and nothing else does', serverOnly.includes('fastify'), `server-only: ${serverOnly.join(', ')}`);
  for (const name of serverOnly) {
    check(`${name} (the gateway's) is not a dependency`, pkg.dependencies?.[name] === undefined);
    check(
      `${name} (the gateway's) is an optional peer`,
      pkg.peerDependencies?.[name] !== undefined && pkg.peerDependenciesMeta?.[name]?.optional === true,
    );
    check(`${name} (the gateway's) is a devDependency, for the tests`, pkg.devDependencies?.[name] !== undefined);
  }
  // zod is the validator inside; its types stay out of the published declarations (94 more files
  // for a consumer's tsc to check, and lib-check errors under node10 without esModuleInterop).
  for (const file of builtFiles.filter((f) => /\.d\.c?ts$/.test(f))) {
    const imported = importsOf(file);
    check(`${file} does not import zod`, !imported.has('zod'));
    if (!file.startsWith('dist/server/')) {
      for (const name of serverOnly) check(`${file} does not import ${name} (the gateway's)`, !imported.has(name));
    }
  }

  // 2. What the tarball holds.
  for (const required of ['LICENSE', 'README.md', 'CHANGELOG.md', 'package.json']) {
    check(`tarball has ${required}`, files.has(required));
  }
  const license = readFileSync(join(repo, 'LICENSE'), 'utf8');
  check('LICENSE is the Apache-2.0 text', license.includes('Apache License') && license.includes('Version 2.0'));
  const targets = [pkg.main, pkg.types, ...Object.values(pkg.bin)];
  for (const entry of Object.values(pkg.exports)) {
    if (typeof entry === 'string') continue;
    for (const condition of Object.values(entry)) targets.push(condition.types, condition.default);
  }
  for (const versions of Object.values(pkg.typesVersions ?? {})) {
    for (const paths of Object.values(versions)) targets.push(...paths);
  }
  for (const target of targets) {
    if (target === './package.json') continue;
    check(`tarball has ${target}`, files.has(posix.normalize(target)));
  }
  // Maps would point at sources the tarball does not ship: the build emits none.
  const maps = [...files].filter((f) => f.endsWith('.map'));
  check('tarball has no source maps', maps.length === 0, maps.slice(0, 3).join(', '));
  // Every relative link in a shipped Markdown file reaches a shipped file.
  for (const doc of [...files].filter((f) => f.endsWith('.md'))) {
    const text = readFileSync(join(repo, doc), 'utf8');
    for (const [, link] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(link) || link.startsWith('#')) continue;
      const target = normalize(join(dirname(doc), link.split('#')[0]));
      check(`${doc} links ${link}`, files.has(target), 'not in the tarball');
    }
  }

  // are-the-types-wrong. Two rules are off on purpose: `require` resolves to the ESM build
  // (Node >= 20.19 loads it; attw predates require(esm)), and its CommonJS-flavoured .d.cts types
  // let node16 CommonJS projects compile (docs/development.md, "The package").
  const attw = () =>
    runAsync(
      'attw',
      process.execPath,
      [
        join(repo, 'node_modules/@arethetypeswrong/cli/dist/index.js'),
        tarball,
        '--format',
        'ascii',
        '--ignore-rules',
        'cjs-resolves-to-esm',
        'false-cjs',
      ],
      repo,
    );

  // 3. Throwaway consumer projects. One install at the top; esm/ and cjs/ below it resolve from it.
  const consumer = join(work, 'consumer');
  mkdirSync(consumer);
  const hosts = ['bullmq', 'ioredis', 'graphile-worker', 'pg'];
  const dependencies = { 'ojs-unique': `file:${tarball}` };
  for (const name of [...hosts, '@types/node']) dependencies[name] = installedVersion(name);
  const manifest = { name: 'consumer', private: true, dependencies };
  writeFileSync(join(consumer, 'package.json'), JSON.stringify(manifest));
  const install = () =>
    run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts', '--no-package-lock'], consumer);
  install();
  timed('npm install');
  const installed = (name) => existsSync(join(consumer, 'node_modules', name, 'package.json'));
  check('installing ojs-unique installs no fastify', !installed('fastify'));

  const job = { type: 'email.send', args: { user_id: 42 }, unique: { keys: ['type', 'args'], on_conflict: 'ignore' } };
  writeFileSync(join(consumer, 'job.json'), JSON.stringify(job));
  const program = (load) => `${load}
const backend = memory.createMemoryBackend();
const job = ${JSON.stringify(job)};
const first = await backend.enqueue(job);
const again = await backend.enqueue(job);
if (first.outcome !== 'created' || again.outcome !== 'deduplicated') throw new Error('ojs-unique/memory: wrong outcomes');
if (typeof root.parseUniquePolicy !== 'function') throw new Error('ojs-unique: no parseUniquePolicy');
if (typeof internal.prepareUnique !== 'function') throw new Error('ojs-unique/internal: no prepareUnique');
if (translate.fromOban({ period: 30 }).period !== 'PT30S') throw new Error('ojs-unique/translate: fromOban');
if (typeof bullmq.withUniqueness !== 'function') throw new Error('ojs-unique/bullmq: no withUniqueness');
if (typeof graphile.makeUniqueWorkerUtils !== 'function') {
  throw new Error('ojs-unique/graphile-worker: no makeUniqueWorkerUtils');
}
console.log('loaded');
`;
  const projects = {
    esm: {
      type: 'module',
      main: program(`import * as root from 'ojs-unique';
import * as memory from 'ojs-unique/memory';
import * as internal from 'ojs-unique/internal';
import * as translate from 'ojs-unique/translate';
import * as bullmq from 'ojs-unique/bullmq';
import * as graphile from 'ojs-unique/graphile-worker';`),
      modes: [
        ['nodenext', 'nodenext'],
        ['node16', 'node16'],
        ['esnext', 'bundler'],
      ],
    },
    cjs: {
      type: 'commonjs',
      main: `(async () => {
${program(`const root = require('ojs-unique');
const memory = require('ojs-unique/memory');
const internal = require('ojs-unique/internal');
const translate = require('ojs-unique/translate');
const bullmq = require('ojs-unique/bullmq');
const graphile = require('ojs-unique/graphile-worker');`)}
})().catch((error) => { console.error(error); process.exitCode = 1; });`,
      modes: [
        ['nodenext', 'nodenext'],
        ['node16', 'node16'],
        ['commonjs', 'node10'],
      ],
    },
  };
  // A typed use of each entry point; the ts-expect-errors fail the compile if an import is `any`.
  const typed = `import { parseUniquePolicy, isDuplicateJobError } from 'ojs-unique';
import { createMemoryBackend } from 'ojs-unique/memory';
import { fromBullMQ } from 'ojs-unique/translate';
import { withUniqueness } from 'ojs-unique/bullmq';
import { makeUniqueWorkerUtils } from 'ojs-unique/graphile-worker';
const policy = parseUniquePolicy({ keys: ['type', 'args'], on_conflict: 'ignore' });
const backend = createMemoryBackend();
export const used = [policy.on_conflict, backend, isDuplicateJobError, withUniqueness, makeUniqueWorkerUtils, fromBullMQ({ jobId: 'a' })];
// @ts-expect-error a misspelt BullMQ option
fromBullMQ({ jobid: 'a' });
// @ts-expect-error a function is not a number
export const wrongBullMQ: number = withUniqueness;
// @ts-expect-error a function is not a number
export const wrongGraphile: number = makeUniqueWorkerUtils;
`;
  const tsc = join(repo, 'node_modules/typescript/bin/tsc');
  const tasks = [attw];
  for (const [name, project] of Object.entries(projects)) {
    const dir = join(consumer, name);
    mkdirSync(dir);
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: project.type }));
    writeFileSync(join(dir, 'main.js'), project.main);
    writeFileSync(join(dir, 'check.ts'), typed);
    tasks.push(() => runAsync(`${name}: node main.js`, process.execPath, ['main.js'], dir, /loaded/));
    for (const [module, resolution] of project.modes) {
      // skipLibCheck as nearly every project sets it; without it, tsc also checks the hosts' and
      // zod's own declarations under each mode, which is not this package's to answer for.
      const args = ['--noEmit', '--strict', '--skipLibCheck', '--module', module, '--moduleResolution', resolution];
      args.push('--target', 'es2022', '--types', 'node', 'check.ts');
      const title = `${name}: tsc --module ${module} --moduleResolution ${resolution}`;
      tasks.push(() => runAsync(title, process.execPath, [tsc, ...args], dir));
    }
  }
  // The bin, as a user runs it from their project.
  const printsKey = /^key:\s+[0-9a-f]{64}$/m;
  const bin = ['--no', 'ojs-unique', 'key', 'job.json'];
  tasks.push(() => runAsync('npx ojs-unique key job.json', 'npx', bin, consumer, printsKey));
  const printsVersion = new RegExp(`^${pkg.version.replaceAll('.', '\\.')}\n$`);
  // `--` first: without it npx takes --version for itself.
  tasks.push(() => runAsync('npx ojs-unique --version', 'npx', ['--no', '--', 'ojs-unique', '--version'], consumer, printsVersion));
  // Without fastify, `serve` says what to install (exit 1); with it, it serves.
  tasks.push(() => checkServeWithoutFastify(consumer));
  await inPairs(tasks);
  timed('attw, programs, tsc, bin');
  manifest.dependencies.fastify = installedVersion('fastify');
  writeFileSync(join(consumer, 'package.json'), JSON.stringify(manifest));
  install();
  timed('npm install fastify');
  await checkServe(consumer);
  timed('serve');

  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  console.log(
    `check-package: ${packed.filename}, ${packed.entryCount} files, ${packed.size} bytes packed, ` +
      `${packed.unpackedSize} unpacked; ${checks} checks in ${seconds}s (${timings.join(', ')})`,
  );
} catch (error) {
  failures.push(error.message);
}

if (failures.length > 0) {
  console.error(`check-package: ${failures.length} problem(s) (temp projects kept in ${work}):`);
  for (const failure of failures) console.error(`- ${failure}`);
  process.exitCode = 1;
} else if (!keep) {
  rmSync(work, { recursive: true, force: true });
} else {
  console.log(`check-package: temp projects kept in ${work}`);
}
