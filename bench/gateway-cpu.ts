/**
 * CPU per request of the OJS gateway server, for finding where its time goes (not the benchmark:
 * bench/gateway.ts is). For each subject given (default: empty instant), a server in this process
 * on a loopback port and the bench's load from a child process (bench/gateway-client.ts); prints
 * requests/s and the CPU µs per request of the server (this process) and of the client. CPU per
 * request holds up on a loaded machine where throughput does not.
 *
 *   npx tsx bench/gateway-cpu.ts empty instant memory bullmq graphile-worker
 *   BENCH_COMPARE=/work/main npx tsx bench/gateway-cpu.ts instant bullmq   # against another checkout's server/, alternating
 *   BENCH_PROFILE=/tmp/prof npx tsx bench/gateway-cpu.ts instant          # a .cpuprofile of each measured part
 *   BENCH_CLIENT=autocannon BENCH_SECONDS=5 BENCH_ROUNDS=3 npx tsx bench/gateway-cpu.ts instant
 *
 * Subjects: `empty` (a Fastify route that parses the body and answers 201), `instant` (the gateway
 * over a store that answers at once), `instant-later` (the same store answering a turn of the event
 * loop later), `memory`, `bullmq`, `graphile-worker` (the gateway over that
 * store; REDIS_URL, DATABASE_URL, the bench's prefix and schemas).
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { resolve } from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import * as here from '../server/index.js';
import { runHttpClient, type HttpClient } from './gateway-client.js';
import { instantStore } from './gateway-instant-store.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
const CLIENT = (process.env.BENCH_CLIENT ?? 'raw') as HttpClient;
const PROFILE = process.env.BENCH_PROFILE;
const COMPARE = process.env.BENCH_COMPARE;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://127.0.0.1:5432/test';
const unique = { keys: ['type', 'args'], args_keys: ['n'] } as const;
const subjects = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['empty', 'instant'];

type ServerModule = Pick<typeof here, 'createGatewayStore' | 'createOjsServer'>;
const checkouts: { name: string; server: ServerModule }[] = [{ name: 'this', server: here }];
if (COMPARE) {
  const server = (await import(resolve(COMPARE, 'server/index.ts'))) as ServerModule;
  checkouts.push({ name: COMPARE, server });
}

/** The instant store answering a turn of the event loop later, as a store waiting on I/O does. */
function laterStore(): ReturnType<typeof instantStore> {
  const store = instantStore();
  const enqueue = store.enqueue.bind(store);
  store.enqueue = (input) => new Promise((resolve) => setImmediate(() => resolve(enqueue(input))));
  return store;
}

async function start(subject: string, server: ServerModule): Promise<{ app: FastifyInstance; close: () => Promise<void> }> {
  if (subject === 'empty') {
    const app = Fastify();
    app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, JSON.parse(String(body))));
    app.post('/ojs/v1/jobs', async (_request, reply) => reply.status(201).send({ job: {} }));
    return { app, close: () => app.close() };
  }
  const store =
    subject === 'instant'
      ? instantStore()
      : subject === 'instant-later'
        ? laterStore()
        : await server.createGatewayStore({
            backend: subject as here.GatewayBackendName,
            redisUrl: REDIS_URL,
            databaseUrl: DATABASE_URL,
            prefix: subject === 'bullmq' ? 'ojs-bench:gateway' : 'ojs_bench_gw_graphile_worker',
            uniqueSchema: 'ojs_bench_gw_unique',
          });
  await store.reset();
  const app = await server.createOjsServer({ store });
  return {
    app,
    close: async () => {
      await store.reset();
      await app.close(); // closes the store
    },
  };
}

let gcMs = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) gcMs += entry.duration;
}).observe({ entryTypes: ['gc'] });

console.log(`gateway CPU per request: ${SECONDS} s measured, ${ROUNDS} round(s), client: ${CLIENT}`);
console.log(
  '| subject | checkout | requests/s | server µs CPU / request | of which system | GC pauses µs / request | client µs CPU / request | server cores | client cores |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
let base = (Date.now() % 1_000_000) * 1000;
for (let round = 0; round < ROUNDS; round++) {
  for (const subject of subjects) {
    for (const { name, server } of checkouts) {
      const { app, close } = await start(subject, server);
      const address = await app.listen({ host: '127.0.0.1', port: 0 });
      const session = new Session();
      try {
        if (PROFILE) {
          session.connect();
          await session.post('Profiler.enable');
        }
        const run = await runHttpClient(CLIENT, `${address}/ojs/v1/jobs`, {
          seconds: SECONDS,
          base: (base += 10_000_000),
          unique,
          onMeasuring: () => {
            gcMs = 0;
            if (PROFILE) void session.post('Profiler.start');
          },
        });
        if (PROFILE) {
          const { profile } = await session.post('Profiler.stop');
          writeFileSync(
            `${PROFILE}-${subject}-${checkouts.indexOf(checkouts.find((c) => c.name === name)!)}-${round}.cpuprofile`,
            JSON.stringify(profile),
          );
        }
        const us = (cores: number) => ((cores * 1e6) / run.perSecond).toFixed(1);
        const gcUs = ((gcMs * 1e3) / run.requests).toFixed(1);
        console.log(
          `| ${subject} | ${name} | ${Math.round(run.perSecond)} | ${us(run.serverCores)} | ${us(run.serverSystemCores)} | ${gcUs} | ${us(run.clientCores)} | ${run.serverCores.toFixed(2)} | ${run.clientCores.toFixed(2)} |`,
        );
      } finally {
        if (PROFILE) session.disconnect();
        await close();
      }
    }
  }
}
