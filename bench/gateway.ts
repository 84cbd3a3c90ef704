/**
 * The OJS gateway's unique enqueue throughput over HTTP, as a ratio against the same backend's
 * direct unique enqueue measured in the same run (not a test: read the ratios, not the figures).
 *
 *   npm run bench:gateway                  # REDIS_URL, DATABASE_URL (default postgres://127.0.0.1:5432/test)
 *   BENCH_CALLS=1000 BENCH_ROUNDS=1 BENCH_BACKENDS=bullmq npm run bench:gateway
 *
 * Per backend: the gateway runs in this process on a loopback port; the HTTP client runs in a
 * worker thread (as producers are other processes: it does not take the gateway's event loop),
 * node:http with a keep-alive agent of 50 sockets, 50 requests in flight, each a POST /ojs/v1/jobs with a policy and a new key. The
 * direct variant is the backend's own `enqueue` (the adapter the gateway is built on), 50 calls in
 * flight, same jobs. The two alternate for BENCH_ROUNDS rounds; the table gives each one's median.
 * First, the harness's own ceiling: the same client against a Fastify route that parses the body
 * and answers 201 without doing anything (client, server and the backend share this machine's cores).
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

const CALLS = Number(process.env.BENCH_CALLS ?? 3000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const IN_FLIGHT = 50;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://127.0.0.1:5432/test';
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

function measureHttp(url: string): Promise<number> {
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
    if (reply.status !== 200) throw new Error(`reset: ${reply.status}`);
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

/** The same client against an empty Fastify handler: what HTTP alone allows here. */
async function ceiling(): Promise<number> {
  const app = Fastify();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, JSON.parse(String(body))));
  app.post('/ojs/v1/jobs', async (_request, reply) => reply.status(201).send({ job: {} }));
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  try {
    const rounds: number[] = [];
    for (let round = 0; round < ROUNDS; round++) rounds.push(await measureHttp(`${address}/ojs/v1/jobs`));
    return median(rounds);
  } finally {
    await app.close();
  }
}

console.log(`gateway bench: ${CALLS} unique enqueues per variant, ${IN_FLIGHT} in flight, ${ROUNDS} round(s), medians`);
console.log(`HTTP ceiling of this harness (empty Fastify handler): ${Math.round(await ceiling())} requests/s`);
console.log('| backend | direct enqueue (jobs/s) | over HTTP (jobs/s) | HTTP ÷ direct |');
console.log('| --- | --- | --- | --- |');
for (const backend of BACKENDS) {
  const { direct, http } = await bench(backend);
  console.log(`| ${backend} | ${Math.round(direct)} | ${Math.round(http)} | ${(http / direct).toFixed(2)} |`);
}
