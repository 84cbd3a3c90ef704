/**
 * Two `ojs-unique serve` processes over one backend (one Redis prefix, or one pair of Graphile
 * schemas), behind a round-robin HTTP proxy in the test: each request goes to the next process
 * in turn, so consecutive steps of a scenario meet different processes. The reset route goes to
 * both (each clears its in-process state; the backend is shared). Memory has no pair: it is one
 * process by nature.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { REDIS_URL } from '../adapters/bullmq-test-redis.js';
import { cliArgs } from '../cli-command.js';
import { databaseUrl } from '../conformance/subjects/graphile-worker.js';
import { gatewayNames, sendRequest, type HttpGateway, type Reply } from './gateway-test-server.js';

export interface GatewayPair extends HttpGateway {
  /** The round-robin proxy: every request to it goes to the next process. */
  baseUrl: string;
  /** The processes' own addresses. */
  processes: readonly string[];
  /** A request to process `index` itself, not through the proxy. */
  at(index: number, method: string, path: string, body?: unknown): Promise<Reply>;
  close(): Promise<void>;
}

/** Hop-by-hop and framing headers, not copied across the proxy. */
const NOT_FORWARDED = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive']);

function startServe(args: string[]): { child: ChildProcess; address: Promise<string> } {
  const child = spawn(process.execPath, cliArgs('serve', ...args), { stdio: ['ignore', 'pipe', 'pipe'] });
  // A start-up a hook gave up on is never closed by the test: the server must not outlive this
  // process (it would go on writing under the run's prefix).
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  child.once('exit', () => process.removeListener('exit', killOnExit));
  let output = '';
  const address = new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += String(chunk);
      const match = /listening on (http:\/\/[^\s"]+)/.exec(output);
      if (match) resolve(match[1]!);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`serve exited (${code}) before listening:\n${output}`)));
  });
  return { child, address };
}

export async function startGatewayPair(backend: 'bullmq' | 'graphile-worker', tag: string): Promise<GatewayPair> {
  const names = gatewayNames(tag);
  const args =
    backend === 'bullmq'
      ? ['--backend', 'bullmq', '--redis-url', REDIS_URL, '--prefix', names.prefix]
      : [
          '--backend',
          'graphile-worker',
          '--database-url',
          databaseUrl(),
          '--prefix',
          names.graphileSchema,
          '--unique-schema',
          names.uniqueSchema,
          '--max-pool-size',
          '3',
        ];
  const serves = [startServe(['--port', '0', '--test-reset', ...args]), startServe(['--port', '0', '--test-reset', ...args])];
  const stop = async () => {
    await Promise.all(
      serves.map(async ({ child }) => {
        if (child.exitCode !== null) return;
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }),
    );
  };
  let processes: string[];
  try {
    processes = await Promise.all(serves.map((serve) => serve.address));
  } catch (error) {
    await stop();
    throw error;
  }

  let turn = 0;
  const forward = async (target: string, method: string, path: string, headers: Record<string, string>, body: Buffer | undefined) => {
    const response = await fetch(target + path, { method, headers, ...(body && body.length > 0 ? { body } : {}) });
    return { status: response.status, headers: response.headers, body: Buffer.from(await response.arrayBuffer()) };
  };
  const proxy = http.createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', async () => {
      try {
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries(incoming.headers)) {
          if (!NOT_FORWARDED.has(name) && typeof value === 'string') headers[name] = value;
        }
        const body = Buffer.concat(chunks);
        const path = incoming.url ?? '/';
        const method = incoming.method ?? 'GET';
        let reply;
        if (path === '/ojs/v1/admin/reset') {
          // Both processes: the backend is shared, their in-process state (events, reservations) is not.
          for (const target of processes) reply = await forward(target, method, path, headers, body);
        } else {
          reply = await forward(processes[turn++ % processes.length]!, method, path, headers, body);
        }
        const sent: Record<string, string> = {};
        reply!.headers.forEach((value, name) => {
          if (!NOT_FORWARDED.has(name)) sent[name] = value;
        });
        outgoing.writeHead(reply!.status, sent).end(reply!.body);
      } catch (error) {
        outgoing.writeHead(502).end(String(error));
      }
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;

  const request = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    sendRequest(baseUrl, method, path, body, headers);
  return {
    baseUrl,
    processes,
    request,
    at: (index, method, path, body) => sendRequest(processes[index]!, method, path, body),
    async reset() {
      const reply = await request('POST', '/ojs/v1/admin/reset');
      if (reply.status !== 200) throw new Error(`reset failed: ${reply.status} ${JSON.stringify(reply.body)}`);
    },
    async close() {
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
      await stop();
    },
  };
}
