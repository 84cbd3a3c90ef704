/**
 * The HTTP load generators of the gateway benches (bench/gateway.ts, bench/gateway-cpu.ts), each
 * in a child process (as producers are other processes), each POSTing the bench's unique job with
 * a new key per request over `IN_FLIGHT` keep-alive connections, one request at a time on each (no
 * pipelining), for a second of warm-up and then `seconds` measured:
 *
 * - `raw` (the default): node:net sockets writing each request as one string and reading the
 *   status line and `Content-Length` of each answer. The cheapest client that still speaks
 *   HTTP/1.1 to the server, so that on a 2-vCPU machine the client takes as little as it can of
 *   the cores the server and Redis or PostgreSQL need (docs/design/benchmark-notes.md).
 * - `autocannon`: the same load from autocannon (its parser, its histograms).
 *
 * Each reports requests answered per second in the measured part and the cores it kept busy there.
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';

export type HttpClient = 'raw' | 'autocannon';

export const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 50);

export interface ClientRun {
  perSecond: number;
  /** Cores the client kept busy in the measured part. */
  clientCores: number;
  /** Cores this process (the server) kept busy in the measured part. */
  serverCores: number;
  /** Of serverCores, the kernel's share (system time: the socket calls). */
  serverSystemCores: number;
  /** Requests answered in the measured part. */
  requests: number;
}

/** The body of request `n`, byte for byte what `JSON.stringify` gives for the bench's job. */
const BODY = `
const uniqueJson = JSON.stringify(unique);
const body = (n) => '{"type":"bench.job","args":[{"n":' + n + ',"pad":"x"}],"options":{"queue":"bench","unique":' + uniqueJson + '}}';
`;

const AUTOCANNON_CLIENT = `
const autocannon = require(process.env.AUTOCANNON);
const { url, seconds, inFlight, base, unique, status } = JSON.parse(process.env.BENCH_WORK);
${BODY}
let n = base;
// autocannon stops on its one-second tick: runs are timed in whole seconds, not in requests.
const run = (duration) =>
  autocannon({
    url,
    connections: inFlight,
    duration,
    requests: [{ method: 'POST', headers: { 'content-type': 'application/openjobspec+json' }, setupRequest: (request) => ({ ...request, body: body(n++) }) }],
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
  process.send({ requests: result.requests.total, perSecond: result.requests.total / elapsed, cores: (used.user + used.system) / 1e6 / elapsed });
})().catch((error) => { console.error(error); process.exit(1); });
`;

const RAW_CLIENT = `
const net = require('node:net');
const { url, seconds, inFlight, base, unique, status } = JSON.parse(process.env.BENCH_WORK);
${BODY}
const { hostname, port, pathname } = new URL(url);
const head = 'POST ' + pathname + ' HTTP/1.1\\r\\nHost: ' + hostname + ':' + port + '\\r\\nContent-Type: application/openjobspec+json\\r\\nContent-Length: ';
const expected = 'HTTP/1.1 ' + status + ' ';
let n = base;
let phase = 'warmup';
let answered = 0;
let started = 0n;
let cpu = null;
const fail = (message) => { console.error('raw client: ' + message); process.exit(1); };
function connection() {
  const socket = net.connect({ host: hostname, port: Number(port), noDelay: true });
  let pending = '';
  const send = () => {
    if (phase === 'done') return socket.end();
    const text = body(n++);
    socket.write(head + text.length + '\\r\\n\\r\\n' + text); // ASCII: characters are bytes
  };
  socket.setEncoding('latin1');
  socket.on('connect', send);
  socket.on('error', (error) => { if (phase !== 'done') fail(error.message); });
  socket.on('data', (chunk) => {
    pending += chunk;
    for (;;) {
      const end = pending.indexOf('\\r\\n\\r\\n');
      if (end === -1) return;
      const match = /\\r\\ncontent-length: *(\\d+)/i.exec(pending.slice(0, end));
      if (!match) fail('an answer without Content-Length: ' + pending.slice(0, end));
      const total = end + 4 + Number(match[1]);
      if (pending.length < total) return;
      if (!pending.startsWith(expected)) fail('expected ' + status + ', got ' + pending.slice(0, total));
      pending = pending.slice(total);
      if (phase === 'measuring') answered++;
      send();
    }
  });
}
for (let i = 0; i < inFlight; i++) connection();
setTimeout(() => {
  process.send('measuring');
  phase = 'measuring';
  started = process.hrtime.bigint();
  cpu = process.cpuUsage();
  setTimeout(() => {
    const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
    const used = process.cpuUsage(cpu);
    const requests = answered;
    phase = 'done';
    process.send({ requests, perSecond: requests / elapsed, cores: (used.user + used.system) / 1e6 / elapsed }, () => process.exit(0));
  }, seconds * 1000);
}, 1000);
`;

/**
 * `seconds` of POSTs to `url` from a child process running `client`, after a second of warm-up;
 * every answer must have `status`.
 */
export function runHttpClient(
  client: HttpClient,
  url: string,
  options: { seconds: number; base: number; unique: unknown; status?: number; onMeasuring?: () => void },
): Promise<ClientRun> {
  const work = {
    url,
    seconds: options.seconds,
    inFlight: IN_FLIGHT,
    base: options.base,
    unique: options.unique,
    status: options.status ?? 201,
  };
  const child = spawn(process.execPath, ['-e', client === 'raw' ? RAW_CLIENT : AUTOCANNON_CLIENT], {
    env: { ...process.env, AUTOCANNON: createRequire(import.meta.url).resolve('autocannon'), BENCH_WORK: JSON.stringify(work) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let started = process.hrtime.bigint();
  let cpu = process.cpuUsage();
  let result: ClientRun | null = null;
  child.on('message', (message: 'measuring' | { requests: number; perSecond: number; cores: number }) => {
    if (message === 'measuring') {
      options.onMeasuring?.();
      started = process.hrtime.bigint();
      cpu = process.cpuUsage();
      return;
    }
    const used = process.cpuUsage(cpu);
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    result = {
      perSecond: message.perSecond,
      requests: message.requests,
      clientCores: message.cores,
      serverCores: (used.user + used.system) / 1e3 / ms,
      serverSystemCores: used.system / 1e3 / ms,
    };
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 && result ? resolve(result) : reject(new Error(`${client} client exited with ${code}`))));
  });
}
