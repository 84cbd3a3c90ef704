/**
 * The OJS gateway's unique enqueue throughput over HTTP, as a ratio against the same backend's
 * direct unique enqueue measured in the same run (not a test: read the ratios, not the figures).
 *
 *   npm run bench:gateway                  # REDIS_URL, DATABASE_URL (default postgres://127.0.0.1:5432/test)
 *   BENCH_CALLS=1000 BENCH_ROUNDS=1 BENCH_BACKENDS=bullmq npm run bench:gateway
 *   BENCH_CLIENT=thread npm run bench:gateway   # the in-process client instead of autocannon
 *   BENCH_SECONDS=5 npm run bench:gateway       # autocannon's measured run (default 3 s)
 *
 * Per backend: the gateway runs in this process on a loopback port. The HTTP client is
 * autocannon in a child process (as producers are other processes; it writes requests straight
 * onto 50 keep-alive sockets, no pipelining), each request a POST /ojs/v1/jobs with a policy and
 * a new key; `BENCH_CLIENT=thread` uses node:http from a worker thread of this process instead.
 * The direct variant is the backend's own `enqueue` (the adapter the gateway is built on), 50
 * calls in flight, same jobs. The two alternate for BENCH_ROUNDS rounds; medians.
 *
 * Then where a request's time goes (µs per request at saturation, 1 / throughput, each measured
 * alone): the HTTP ceiling (an empty Fastify route, both clients), the gateway server with a
 * store that answers at once (routing, parse, hooks, validation, wire view, serialisation), the
 * request validation alone (ojs-request.ts, one thread), the store's enqueue without HTTP, and
 * the backend's enqueue. The parts overlap on two cores (the server, the client and Redis or
 * PostgreSQL run at once), so they do not add up to the HTTP figure: they name the floor.
 * Uses its own prefix (`ojs-bench:gateway`) and schemas (`ojs_bench_gw_*`), emptied before each
 * variant.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { createBullMQBackend } from '../adapters/bullmq/index.js';
import { createGraphileWorkerBackend } from '../adapters/graphile-worker/index.js';
import { createMemoryBackend } from '../adapters/memory/index.js';
import type { UniqueJobsBackend } from '../src/index.js';
import { createGatewayStore, createOjsServer, type GatewayBackendName } from '../server/index.js';
import type { GatewayJob, GatewayStore } from '../server/gateway-store.js';
import { parsePush } from '../server/ojs-request.js';

const CALLS = Number(process.env.BENCH_CALLS ?? 3000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** The autocannon client runs for a time, not a count (see AUTOCANNON_CLIENT). */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const IN_FLIGHT = 50;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://127.0.0.1:5432/test';
const CLIENT = (process.env.BENCH_CLIENT ?? 'process') as Client;
type Client = 'thread' | 'process';
const BACKENDS = (process.env.BENCH_BACKENDS ?? 'memory,bullmq,graphile-worker').split(',') as GatewayBackendName[];
const PREFIX = 'ojs-bench:gateway';
const GRAPHILE_SCHEMA = 'ojs_bench_gw_graphile_worker';
const UNIQUE_SCHEMA = 'ojs_bench_gw_unique';
const unique = { keys: ['type', 'args'], args_keys: ['n'] } as const;

let run = 0;

const WARMUP = Math.max(200, Math.floor(CALLS / 10));
/** Jobs per second of `CALLS` calls of `call` (after WARMUP unmeasured ones), `IN_FLIGHT` at a time. */
async function measure(call: (n: number) => Promise<void>): Promise<number> {
  const base = ++run * 10_000_000;
  let next = 0;
  const lanes = async (until: number) => {
    const lane = async () => {
      while (next < until) await call(base + next++);
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  };
  await lanes(WARMUP);
  const started = process.hrtime.bigint();
  await lanes(WARMUP + CALLS);
  return CALLS / (Number(process.hrtime.bigint() - started) / 1e9);
}

function directBackend(backend: GatewayBackendName): UniqueJobsBackend {
  switch (backend) {
    case 'memory':
      return createMemoryBackend();
    case 'bullmq':
      return createBullMQBackend({ connection: REDIS_URL, prefix: PREFIX });
    case 'graphile-worker':
      return createGraphileWorkerBackend({
        connectionString: DATABASE_URL,
        workerSchema: GRAPHILE_SCHEMA,
        uniqueSchema: UNIQUE_SCHEMA,
        maxPoolSize: 20,
      });
  }
}

/**
 * The HTTP variant, from a worker thread: WARMUP then CALLS POSTs, IN_FLIGHT at a time, each a new
 * key; resolves with the measured calls per second. Plain JavaScript, so the thread needs no loader.
 */
const HTTP_CLIENT = `
const { parentPort, workerData } = require('node:worker_threads');
const { Agent, request } = require('node:http');
const { url, warmup, calls, inFlight, base, unique } = workerData;
const agent = new Agent({ keepAlive: true, maxSockets: inFlight });
function post(n) {
  const body = JSON.stringify({ type: 'bench.job', args: [{ n, pad: 'x' }], options: { queue: 'bench', unique } });
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent, headers: { 'content-type': 'application/openjobspec+json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => (res.statusCode === 201 ? resolve() : reject(new Error('push: ' + res.statusCode + ' ' + text))));
    });
    req.on('error', reject);
    req.end(body);
  });
}
(async () => {
  let next = 0;
  const lanes = (until) => Promise.all(Array.from({ length: inFlight }, async () => { while (next < until) await post(base + next++); }));
  await lanes(warmup);
  const started = process.hrtime.bigint();
  await lanes(warmup + calls);
  parentPort.postMessage(calls / (Number(process.hrtime.bigint() - started) / 1e9));
  agent.destroy();
})().catch((error) => { throw error; });
`;

/**
 * The HTTP variant from a child process: autocannon, one second of warm-up then BENCH_SECONDS
 * over IN_FLIGHT connections, each body with a new key; prints the measured requests per second.
 */
const AUTOCANNON_CLIENT = `
const autocannon = require(process.env.AUTOCANNON);
const { url, seconds, inFlight, base, unique } = JSON.parse(process.env.BENCH_WORK);
let n = base;
const body = () => JSON.stringify({ type: 'bench.job', args: [{ n: n++, pad: 'x' }], options: { queue: 'bench', unique } });
// autocannon stops on its one-second tick: runs are timed in whole seconds, not in requests.
const run = (duration) =>
  autocannon({
    url,
    connections: inFlight,
    duration,
    requests: [{ method: 'POST', headers: { 'content-type': 'application/openjobspec+json' }, setupRequest: (request) => ({ ...request, body: body() }) }],
  });
(async () => {
  await run(1);
  process.send('measuring');
  const started = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  const result = await run(seconds);
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  const used = process.cpuUsage(cpu);
  if (result.non2xx > 0 || result.errors > 0) throw new Error('autocannon: ' + result.non2xx + ' non-2xx, ' + result.errors + ' errors');
  process.send({ perSecond: result.requests.total / elapsed, cores: (used.user + used.system) / 1e6 / elapsed });
})().catch((error) => { console.error(error); process.exit(1); });
`;

/** Cores busy during the last autocannon run (measured part only): the client's, and this process's (the server). */
const lastCores = { client: NaN, server: NaN };

function measureHttp(url: string, client: Client = CLIENT): Promise<number> {
  return client === 'process' ? measureHttpProcess(url) : measureHttpThread(url);
}

function measureHttpProcess(url: string): Promise<number> {
  const work = { url, seconds: SECONDS, inFlight: IN_FLIGHT, base: ++run * 10_000_000, unique };
  const child = spawn(process.execPath, ['-e', AUTOCANNON_CLIENT], {
    env: { ...process.env, AUTOCANNON: createRequire(import.meta.url).resolve('autocannon'), BENCH_WORK: JSON.stringify(work) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let started = process.hrtime.bigint();
  let cpu = process.cpuUsage();
  let result: { perSecond: number; cores: number } | null = null;
  child.on('message', (message: 'measuring' | { perSecond: number; cores: number }) => {
    if (message === 'measuring') {
      started = process.hrtime.bigint();
      cpu = process.cpuUsage();
      return;
    }
    const used = process.cpuUsage(cpu);
    lastCores.server = (used.user + used.system) / 1e3 / (Number(process.hrtime.bigint() - started) / 1e6);
    lastCores.client = message.cores;
    result = message;
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 && result ? resolve(result.perSecond) : reject(new Error(`autocannon client exited with ${code}`)),
    );
  });
}

function measureHttpThread(url: string): Promise<number> {
  const worker = new Worker(HTTP_CLIENT, {
    eval: true,
    workerData: { url, warmup: WARMUP, calls: CALLS, inFlight: IN_FLIGHT, base: ++run * 10_000_000, unique },
  });
  return new Promise((resolve, reject) => {
    worker.once('message', (perSecond: number) => resolve(perSecond));
    worker.once('error', reject);
  });
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function bench(backend: GatewayBackendName): Promise<{ direct: number; http: number }> {
  const store = await createGatewayStore({
    backend,
    redisUrl: REDIS_URL,
    databaseUrl: DATABASE_URL,
    prefix: backend === 'bullmq' ? PREFIX : GRAPHILE_SCHEMA,
    uniqueSchema: UNIQUE_SCHEMA,
  });
  const app: FastifyInstance = await createOjsServer({ store, testReset: true });
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  const direct = directBackend(backend);
  const jobsUrl = new URL(`${address}/ojs/v1/jobs`);
  const reset = async () => {
    const reply = await fetch(`${address}/ojs/v1/admin/reset`, { method: 'POST' });
    if (reply.status !== 200) throw new Error(`reset: ${reply.status} ${await reply.text()}`);
  };
  const results = { direct: [] as number[], http: [] as number[] };
  try {
    await reset();
    for (let round = 0; round < ROUNDS; round++) {
      await reset();
      results.direct.push(
        await measure(async (n) => {
          await direct.enqueue({ type: 'bench.job', args: { n, pad: 'x' }, queue: 'bench', unique });
        }),
      );
      await reset();
      results.http.push(await measureHttp(jobsUrl.href));
    }
    await reset();
  } finally {
    await direct.close();
    await app.close();
  }
  return { direct: median(results.direct), http: median(results.http) };
}

/** Cores the server (this process) and autocannon kept busy on the empty route, medians of the rounds. */
const ceilingCores = { server: [] as number[], client: [] as number[] };

/** What HTTP alone allows here: an empty Fastify route that parses the body and answers 201. */
async function ceiling(client: Client): Promise<number> {
  const app = Fastify();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, JSON.parse(String(body))));
  app.post('/ojs/v1/jobs', async (_request, reply) => reply.status(201).send({ job: {} }));
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  try {
    const rounds: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      rounds.push(await measureHttp(`${address}/ojs/v1/jobs`, client));
      if (client === 'process') {
        ceilingCores.server.push(lastCores.server);
        ceilingCores.client.push(lastCores.client);
      }
    }
    return median(rounds);
  } finally {
    await app.close();
  }
}

/** A store that answers every PUSH at once with a fixed job: the gateway server's own cost. */
function instantStore(): GatewayStore {
  const job: GatewayJob = {
    id: '019abcde-0000-7000-8000-000000000000',
    type: 'bench.job',
    queue: 'bench',
    args: { n: 0, pad: 'x' },
    meta: {},
    state: 'available',
    attempt: 0,
    max_attempts: 3,
    priority: 0,
    created_at: new Date(0).toISOString(),
    scheduled_at: new Date(0).toISOString(),
    unique: null,
    uniqueness_key: null,
    enqueued_at: new Date(0).toISOString(),
    envelope: {},
  };
  const unused = () => Promise.reject(new Error('not in this bench'));
  return {
    backend: 'memory',
    capabilities: { unique_jobs: { strength: 'strong', mechanism: 'none', replace_active: false } },
    enqueue: async () => ({ outcome: 'created', job }),
    enqueueBatch: unused,
    getJob: unused,
    cancel: unused,
    activate: unused,
    fetch: unused,
    ack: unused,
    nack: unused,
    heartbeat: unused,
    release: unused,
    workerState: unused,
    setWorkerState: unused,
    queueStats: unused,
    setPaused: unused,
    isPaused: unused,
    setRateLimit: unused,
    now: unused,
    health: async () => ({ ok: true, type: 'none' }),
    reset: async () => undefined,
    close: async () => undefined,
    idempotency: { claim: unused, finish: unused, abandon: unused },
    deadLetters: { list: unused, retry: unused, remove: unused },
    cron: { register: unused, list: unused, get: unused, remove: unused, start: () => undefined },
    workflows: { create: unused, read: unused, ofJob: unused, write: unused },
  };
}

async function instantGateway(): Promise<number> {
  const app = await createOjsServer({ store: instantStore() });
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  try {
    const rounds: number[] = [];
    for (let round = 0; round < ROUNDS; round++) rounds.push(await measureHttp(`${address}/ojs/v1/jobs`));
    return median(rounds);
  } finally {
    await app.close();
  }
}

/** µs per parsePush of the bench's body (JSON already parsed), one thread. */
function validationMicros(): number {
  const body = (n: number) => ({ type: 'bench.job', args: [{ n, pad: 'x' }], options: { queue: 'bench', unique } });
  for (let n = 0; n < 20_000; n++) parsePush(body(n));
  const count = 200_000;
  const started = process.hrtime.bigint();
  for (let n = 0; n < count; n++) parsePush(body(n));
  return Number(process.hrtime.bigint() - started) / 1e3 / count;
}

/** The store's own enqueue (what a PUSH calls after validation), 50 in flight, no HTTP. */
async function storeRate(backend: GatewayBackendName): Promise<number> {
  const store = await createGatewayStore({
    backend,
    redisUrl: REDIS_URL,
    databaseUrl: DATABASE_URL,
    prefix: backend === 'bullmq' ? PREFIX : GRAPHILE_SCHEMA,
    uniqueSchema: UNIQUE_SCHEMA,
  });
  try {
    const rounds: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      await store.reset();
      rounds.push(
        await measure(async (n) => {
          await store.enqueue(parsePush({ type: 'bench.job', args: [{ n, pad: 'x' }], options: { queue: 'bench', unique } }).input);
        }),
      );
    }
    await store.reset();
    return median(rounds);
  } finally {
    await store.close();
  }
}

const us = (perSecond: number) => (1e6 / perSecond).toFixed(0);

console.log(`gateway bench: ${CALLS} unique enqueues per variant, ${IN_FLIGHT} in flight, ${ROUNDS} round(s), medians, client: ${CLIENT}`);
const ceilings = { process: await ceiling('process'), thread: await ceiling('thread') };
const instant = await instantGateway();
const validation = validationMicros();
console.log(
  `HTTP ceiling (empty Fastify route): ${Math.round(ceilings.process)} requests/s with autocannon in a child process, ` +
    `${Math.round(ceilings.thread)} with node:http in a worker thread`,
);
console.log(`the gateway server with a store that answers at once: ${Math.round(instant)} requests/s`);
// Measured with autocannon only (the thread client shares this process).
const serverCores = ceilingCores.server.length > 0 ? median(ceilingCores.server) : NaN;
if (ceilingCores.server.length > 0) {
  console.log(
    `on the empty route the server kept ${serverCores.toFixed(2)} of a core busy and autocannon ${median(ceilingCores.client).toFixed(2)}` +
      (serverCores >= 0.9 ? ': the server is the bottleneck, so its HTTP cost per request is 1 / that rate' : ''),
  );
}
console.log('');
console.log('| backend | direct enqueue (jobs/s) | over HTTP (jobs/s) | HTTP ÷ direct | store enqueue, no HTTP (jobs/s) |');
console.log('| --- | --- | --- | --- | --- |');
const rows: { backend: GatewayBackendName; direct: number; http: number; store: number }[] = [];
for (const backend of BACKENDS) {
  const { direct, http } = await bench(backend);
  const store = await storeRate(backend);
  rows.push({ backend, direct, http, store });
  console.log(`| ${backend} | ${Math.round(direct)} | ${Math.round(http)} | ${(http / direct).toFixed(2)} | ${Math.round(store)} |`);
}
const memory = rows.find((row) => row.backend === 'memory');
if (memory) {
  // The memory store runs in the server's one thread: each PUSH costs that thread the HTTP
  // route's time plus the enqueue's, where the direct variant pays the enqueue's alone.
  const http = 1e6 / ceilings[CLIENT];
  const enqueue = 1e6 / memory.direct;
  // Only a saturated server makes 1 / the route's rate its cost per request.
  const bound =
    serverCores >= 0.9 ? '' : ` (does not hold in this run: the server had ${serverCores.toFixed(2)} of a core, the machine is busy)`;
  console.log(
    `memory, the ceiling with a gateway that cost nothing: direct ${enqueue.toFixed(1)} µs ÷ (HTTP route ${http.toFixed(1)} µs + ${enqueue.toFixed(1)} µs) = ` +
      `${(enqueue / (http + enqueue)).toFixed(2)}${bound}; measured ${(memory.http / memory.direct).toFixed(2)}`,
  );
}
console.log('');
console.log('µs per request at saturation (1 / throughput of each part measured alone; they overlap on the cores):');
console.log(
  '| backend | HTTP ceiling | gateway server, instant store | of which validation | store enqueue | backend enqueue | whole PUSH over HTTP |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- |');
for (const row of rows) {
  console.log(
    `| ${row.backend} | ${us(ceilings[CLIENT])} | ${us(instant)} | ${validation.toFixed(1)} | ${us(row.store)} | ${us(row.direct)} | ${us(row.http)} |`,
  );
}
