/**
 * The OJS gateway's unique enqueue throughput over HTTP, as a ratio against the same backend's
 * direct unique enqueue measured in the same round of the same run (not a test: read the ratios,
 * not the figures).
 *
 *   npm run bench:gateway                  # REDIS_URL, DATABASE_URL (default postgres://127.0.0.1:5432/test)
 *   BENCH_CALLS=1000 BENCH_ROUNDS=1 BENCH_BACKENDS=bullmq npm run bench:gateway
 *   BENCH_CLIENT=autocannon npm run bench:gateway   # autocannon as the HTTP client (default: raw)
 *   BENCH_CLIENT=thread npm run bench:gateway       # node:http in a worker thread of this process
 *   BENCH_SECONDS=5 npm run bench:gateway           # the HTTP client's measured run (default 3 s)
 *
 * Per backend: the gateway runs in this process on a loopback port. The HTTP client runs in a
 * child process (as producers are other processes; bench/gateway-client.ts): by default a raw
 * node:net client, autocannon with `BENCH_CLIENT=autocannon`, each writing requests onto 50
 * keep-alive connections, one at a time on each (no pipelining), each request a POST
 * /ojs/v1/jobs with a policy and a new key. The client shares the machine's cores with the
 * server and Redis or PostgreSQL, so the cheapest one is the default; the bench prints the CPU
 * each spent per request. The direct variant is the backend's own `enqueue` (the adapter the
 * gateway is built on), 50 calls in flight, same jobs. The two alternate for BENCH_ROUNDS rounds;
 * a round's ratio divides its HTTP rate by its direct rate, and the run reports the median round.
 *
 * Then where a request's time goes, each part measured alone: as µs per request at saturation
 * (1 / throughput) the HTTP ceiling (an empty Fastify route), the gateway server with a store that
 * answers at once (routing, parse, hooks, validation, wire view, serialisation), the request
 * validation alone (ojs-request.ts, one thread), the store's enqueue without HTTP, and the
 * backend's enqueue; and as CPU µs per request of the server process and of the client (what a
 * loaded machine changes least). The parts overlap on two cores (the server, the client and
 * Redis or PostgreSQL run at once), so they do not add up to the HTTP figure: they name the floor.
 * Uses its own prefix (`ojs-bench:gateway`) and schemas (`ojs_bench_gw_*`), emptied before each
 * variant.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { Worker } from 'node:worker_threads';
import { createBullMQBackend } from '../adapters/bullmq/index.js';
import { createGraphileWorkerBackend } from '../adapters/graphile-worker/index.js';
import { createMemoryBackend } from '../adapters/memory/index.js';
import type { UniqueJobsBackend } from '../src/index.js';
import { createGatewayStore, createOjsServer, type GatewayBackendName } from '../server/index.js';
import { parsePush } from '../server/ojs-request.js';
import { IN_FLIGHT, runHttpClient, type HttpClient } from './gateway-client.js';
import { instantStore } from './gateway-instant-store.js';

const CALLS = Number(process.env.BENCH_CALLS ?? 3000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** The HTTP clients run for a time, not a count. */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://127.0.0.1:5432/test';
const CLIENT = (process.env.BENCH_CLIENT ?? 'raw') as Client;
type Client = HttpClient | 'thread';
const BACKENDS = (process.env.BENCH_BACKENDS ?? 'memory,bullmq,graphile-worker').split(',') as GatewayBackendName[];
const PREFIX = 'ojs-bench:gateway';
const GRAPHILE_SCHEMA = 'ojs_bench_gw_graphile_worker';
const UNIQUE_SCHEMA = 'ojs_bench_gw_unique';
const unique = { keys: ['type', 'args'], args_keys: ['n'] } as const;

let run_ = 0;

const WARMUP = Math.max(200, Math.floor(CALLS / 10));
/** This process's CPU µs per call of the last `measure`. */
let lastDirectCpu = NaN;
/**
 * Jobs per second of `CALLS` calls of `call`, `IN_FLIGHT` at a time, after a second of unmeasured
 * ones (at least WARMUP): the HTTP clients warm up for a second too, so that neither variant's
 * first round is measured colder than the other's.
 */
async function measure(call: (n: number) => Promise<void>): Promise<number> {
  const base = ++run_ * 10_000_000;
  let next = 0;
  const warmUntil = Date.now() + 1000;
  const lanes = async (until: () => boolean) => {
    const lane = async () => {
      while (!until()) await call(base + next++);
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  };
  await lanes(() => next >= WARMUP && Date.now() >= warmUntil);
  const started = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  const first = next;
  await lanes(() => next >= first + CALLS);
  const used = process.cpuUsage(cpu);
  lastDirectCpu = (used.user + used.system) / CALLS;
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
 * The HTTP variant from a worker thread of this process (`BENCH_CLIENT=thread`, the bench's first
 * client; it shares this process with the server, which caps both): WARMUP then CALLS POSTs,
 * IN_FLIGHT at a time, each a new key; resolves with the measured calls per second. Plain
 * JavaScript, so the thread needs no loader.
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

/** CPU µs per request of the last HTTP measure: the server's (this process) and the client's; NaN for the thread client. */
let lastCpu = { server: NaN, client: NaN, serverCores: NaN };

async function measureHttp(url: string, client: Client = CLIENT): Promise<number> {
  if (client === 'thread') {
    lastCpu = { server: NaN, client: NaN, serverCores: NaN };
    return measureHttpThread(url);
  }
  const run = await runHttpClient(client, url, { seconds: SECONDS, base: ++run_ * 10_000_000, unique });
  lastCpu = {
    server: (run.serverCores * 1e6) / run.perSecond,
    client: (run.clientCores * 1e6) / run.perSecond,
    serverCores: run.serverCores,
  };
  return run.perSecond;
}

function measureHttpThread(url: string): Promise<number> {
  const worker = new Worker(HTTP_CLIENT, {
    eval: true,
    workerData: { url, warmup: WARMUP, calls: CALLS, inFlight: IN_FLIGHT, base: ++run_ * 10_000_000, unique },
  });
  return new Promise((resolve, reject) => {
    worker.once('message', (perSecond: number) => resolve(perSecond));
    worker.once('error', reject);
  });
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

interface BackendRow {
  backend: GatewayBackendName;
  /** Medians of the rounds. */
  direct: number;
  http: number;
  /** The median round's HTTP ÷ direct, and every round's. */
  ratio: number;
  ratios: number[];
  store: number;
  cpu: { direct: number; server: number; client: number };
}

async function bench(backend: GatewayBackendName): Promise<Omit<BackendRow, 'store'>> {
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
  const rounds = { direct: [] as number[], http: [] as number[], ratios: [] as number[] };
  const cpu = { direct: [] as number[], server: [] as number[], client: [] as number[] };
  try {
    await reset();
    for (let round = 0; round < ROUNDS; round++) {
      await reset();
      const directRate = await measure(async (n) => {
        await direct.enqueue({ type: 'bench.job', args: { n, pad: 'x' }, queue: 'bench', unique });
      });
      cpu.direct.push(lastDirectCpu);
      await reset();
      const httpRate = await measureHttp(jobsUrl.href);
      cpu.server.push(lastCpu.server);
      cpu.client.push(lastCpu.client);
      rounds.direct.push(directRate);
      rounds.http.push(httpRate);
      rounds.ratios.push(httpRate / directRate);
    }
    await reset();
  } finally {
    await direct.close();
    await app.close();
  }
  return {
    backend,
    direct: median(rounds.direct),
    http: median(rounds.http),
    ratio: median(rounds.ratios),
    ratios: rounds.ratios,
    cpu: { direct: median(cpu.direct), server: median(cpu.server), client: median(cpu.client) },
  };
}

/** The empty route's rate, and the server's and the client's CPU µs per request and cores there, medians of the rounds. */
interface Ceiling {
  perSecond: number;
  server: number;
  client: number;
  serverCores: number;
}

/** What HTTP alone allows here: an empty Fastify route that parses the body and answers 201. */
async function ceiling(client: Client): Promise<Ceiling> {
  const app = Fastify();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, JSON.parse(String(body))));
  app.post('/ojs/v1/jobs', async (_request, reply) => reply.status(201).send({ job: {} }));
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  try {
    return await rounds(`${address}/ojs/v1/jobs`, client);
  } finally {
    await app.close();
  }
}

async function rounds(url: string, client: Client): Promise<Ceiling> {
  const measured = { perSecond: [] as number[], server: [] as number[], client: [] as number[], serverCores: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    measured.perSecond.push(await measureHttp(url, client));
    measured.server.push(lastCpu.server);
    measured.client.push(lastCpu.client);
    measured.serverCores.push(lastCpu.serverCores);
  }
  return {
    perSecond: median(measured.perSecond),
    server: median(measured.server),
    client: median(measured.client),
    serverCores: median(measured.serverCores),
  };
}

async function instantGateway(): Promise<Ceiling> {
  const app = await createOjsServer({ store: instantStore() });
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  try {
    return await rounds(`${address}/ojs/v1/jobs`, CLIENT);
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
const cpuUs = (micros: number) => (Number.isNaN(micros) ? 'n/a' : micros.toFixed(0));

console.log(
  `gateway bench: ${CALLS} direct unique enqueues, ${SECONDS} s of HTTP per variant, ${IN_FLIGHT} in flight, ${ROUNDS} round(s), client: ${CLIENT}`,
);
const empty = await ceiling(CLIENT);
const instant = await instantGateway();
const validation = validationMicros();
console.log(`HTTP ceiling (empty Fastify route): ${Math.round(empty.perSecond)} requests/s`);
console.log(`the gateway server with a store that answers at once: ${Math.round(instant.perSecond)} requests/s`);
if (CLIENT !== 'thread') {
  console.log(
    `CPU µs per request, server / client: empty route ${cpuUs(empty.server)} / ${cpuUs(empty.client)}, ` +
      `gateway with the instant store ${cpuUs(instant.server)} / ${cpuUs(instant.client)}: the gateway's own ${cpuUs(instant.server - empty.server)}`,
  );
  console.log(
    `on the empty route the server kept ${empty.serverCores.toFixed(2)} of a core busy` +
      (empty.serverCores >= 0.9 ? ': the server is the bottleneck, so its HTTP cost per request is 1 / that rate' : ''),
  );
}
console.log('');
console.log(
  '| backend | direct enqueue (jobs/s) | over HTTP (jobs/s) | HTTP ÷ direct (median round; rounds) | store enqueue, no HTTP (jobs/s) |',
);
console.log('| --- | --- | --- | --- | --- |');
const rows: BackendRow[] = [];
for (const backend of BACKENDS) {
  const measured = await bench(backend);
  const store = await storeRate(backend);
  const row = { ...measured, store };
  rows.push(row);
  console.log(
    `| ${backend} | ${Math.round(row.direct)} | ${Math.round(row.http)} | ${row.ratio.toFixed(2)} (${row.ratios.map((r) => r.toFixed(2)).join(', ')}) | ${Math.round(store)} |`,
  );
}
const memory = rows.find((row) => row.backend === 'memory');
if (memory) {
  // The memory store runs in the server's one thread: each PUSH costs that thread the HTTP
  // route's time plus the enqueue's, where the direct variant pays the enqueue's alone.
  const http = 1e6 / empty.perSecond;
  const enqueue = 1e6 / memory.direct;
  // Only a saturated server makes 1 / the route's rate its cost per request.
  const bound =
    empty.serverCores >= 0.9
      ? ''
      : ` (does not hold in this run: the server had ${empty.serverCores.toFixed(2)} of a core, the machine is busy)`;
  console.log(
    `memory, the ceiling with a gateway that cost nothing: direct ${enqueue.toFixed(1)} µs ÷ (HTTP route ${http.toFixed(1)} µs + ${enqueue.toFixed(1)} µs) = ` +
      `${(enqueue / (http + enqueue)).toFixed(2)}${bound}; measured ${memory.ratio.toFixed(2)}`,
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
    `| ${row.backend} | ${us(empty.perSecond)} | ${us(instant.perSecond)} | ${validation.toFixed(1)} | ${us(row.store)} | ${us(row.direct)} | ${us(row.http)} |`,
  );
}
console.log('');
console.log('CPU µs per request (process CPU time ÷ requests, medians of the rounds):');
console.log('| backend | direct enqueue, the calling process | PUSH over HTTP, the server | PUSH over HTTP, the client |');
console.log('| --- | --- | --- | --- |');
for (const row of rows) console.log(`| ${row.backend} | ${cpuUs(row.cpu.direct)} | ${cpuUs(row.cpu.server)} | ${cpuUs(row.cpu.client)} |`);
