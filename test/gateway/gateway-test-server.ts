/**
 * A gateway started in-process on an ephemeral loopback port, and a small JSON client for it.
 * Each backend gets a salted Redis prefix or pair of schemas (test/run-salt.ts).
 */
import type { FastifyInstance } from 'fastify';
import { RUN_SALT } from '../run-salt.js';
import { REDIS_URL } from '../adapters/bullmq-test-redis.js';
import { databaseUrl } from '../conformance/subjects/graphile-worker.js';
import type { GatewayStore } from '../../server/gateway-store.js';
import { createOjsServer, type OjsServerOptions } from '../../server/ojs-server.js';
import { createMemoryGatewayStore } from '../../server/memory-gateway-store.js';
import { createBullmqGatewayStore } from '../../server/bullmq-gateway-store.js';
import { createGraphileWorkerGatewayStore } from '../../server/graphile-worker-gateway-store.js';

export const GATEWAY_BACKENDS = ['memory', 'bullmq', 'graphile-worker'] as const;
export type GatewayBackend = (typeof GATEWAY_BACKENDS)[number];

export interface Reply {
  status: number;
  headers: Headers;
  body: any;
}

/** A gateway as its clients see it: requests, and the test reset. */
export interface HttpGateway {
  request(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Reply>;
  reset(): Promise<void>;
}

export interface TestGateway extends HttpGateway {
  app: FastifyInstance;
  /** The store the server runs on. */
  store: GatewayStore;
  baseUrl: string;
  /** The salted BullMQ prefix or Graphile schemas the store uses. */
  names: { prefix: string; graphileSchema: string; uniqueSchema: string };
  close(): Promise<void>;
}

/** One HTTP request to a gateway at `base`: a JSON body sent as OJS's media type, the answer parsed when it is JSON. */
export async function sendRequest(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] ??= 'application/openjobspec+json';
  }
  const response = await fetch(base + path, init);
  const text = await response.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = text;
  }
  return { status: response.status, headers: response.headers, body: parsed };
}

export function gatewayNames(tag: string) {
  return {
    prefix: `ojs-test:${RUN_SALT}:gateway-${tag}`,
    graphileSchema: `gwt_${RUN_SALT}_gw_${tag}_gw`,
    uniqueSchema: `gwt_${RUN_SALT}_gw_${tag}_ou`,
  };
}

/** `clock`: the memory store's (the other stores read their server's clock). `countDuplicates`: the stores' option. */
export function makeStore(
  backend: GatewayBackend,
  names: ReturnType<typeof gatewayNames>,
  clock?: { now(): number },
  countDuplicates = false,
): GatewayStore {
  switch (backend) {
    case 'memory':
      return createMemoryGatewayStore({ clock, countDuplicates });
    case 'bullmq':
      return createBullmqGatewayStore({ redisUrl: REDIS_URL, prefix: names.prefix, countDuplicates });
    case 'graphile-worker':
      return createGraphileWorkerGatewayStore({
        databaseUrl: databaseUrl(),
        graphileSchema: names.graphileSchema,
        uniqueSchema: names.uniqueSchema,
        maxPoolSize: 4,
        countDuplicates,
      });
  }
}

export async function startGateway(
  backend: GatewayBackend,
  tag: string,
  options: Omit<OjsServerOptions, 'store'> & { clock?: { now(): number }; countDuplicates?: boolean } = {},
): Promise<TestGateway> {
  const names = gatewayNames(tag);
  const { clock, countDuplicates, ...serverOptions } = options;
  const store = makeStore(backend, names, clock, countDuplicates);
  const app = await createOjsServer({ store, testReset: true, ...serverOptions });
  const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  const request = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    sendRequest(baseUrl, method, path, body, headers);
  return {
    app,
    store,
    baseUrl,
    names,
    request,
    async reset() {
      const reply = await request(
        'POST',
        '/ojs/v1/admin/reset',
        undefined,
        options.token ? { authorization: `Bearer ${options.token}` } : {},
      );
      if (reply.status !== 200) throw new Error(`reset failed: ${reply.status} ${JSON.stringify(reply.body)}`);
    },
    close: () => app.close(),
  };
}
