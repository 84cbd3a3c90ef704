/**
 * What an adversarial or misconfigured client meets: stalled connections (nothing sent, half the
 * headers, half a body) answered 408 and closed by the request timeout; a cap on connections held
 * at once; job ids up to the core's 128 characters in every route; the bearer scheme in any case;
 * and, on Graphile Worker, no named prepared statements when asked (PgBouncer in transaction mode).
 */
import { expect } from 'chai';
import net from 'node:net';
import pg from 'pg';
import type { FastifyInstance } from 'fastify';
import { createOjsServer } from '../../server/ojs-server.js';
import { createMemoryGatewayStore } from '../../server/memory-gateway-store.js';
import { createGatewayStore } from '../../server/create-gateway-store.js';
import { databaseUrl } from '../conformance/subjects/graphile-worker.js';
import { GATEWAY_BACKENDS, gatewayNames, makeStore } from './gateway-test-server.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function listen(app: FastifyInstance): Promise<number> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  return (app.server.address() as net.AddressInfo).port;
}

/** A raw connection that sends `text` and never more; `closed` settles when the server closes it, with what it answered. */
function stall(port: number, text: string) {
  const socket = net.connect(port, '127.0.0.1', () => {
    if (text) socket.write(text);
  });
  let answer = '';
  socket.on('data', (chunk) => (answer += String(chunk)));
  socket.on('error', () => undefined);
  const closed = new Promise<string>((resolve) => socket.on('close', () => resolve(answer.split('\r\n')[0] ?? '')));
  return { socket, closed };
}

describe('gateway hardening', function () {
  this.timeout(20_000);

  it('answers 408 and closes stalled connections (nothing sent, half the headers, half a body) after the request timeout', async () => {
    const app = await createOjsServer({ store: createMemoryGatewayStore(), requestTimeoutMs: 300 });
    const sockets: net.Socket[] = [];
    try {
      const port = await listen(app);
      const stalls = [
        '',
        'POST /ojs/v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Ty',
        'POST /ojs/v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/openjobspec+json\r\nContent-Length: 100\r\n\r\n{"type":',
      ].flatMap((text) => Array.from({ length: 4 }, () => stall(port, text)));
      sockets.push(...stalls.map((s) => s.socket));
      // Bounded wait: far past the 300 ms timeout and Node's 1 s check, well short of its 30 s default.
      const outcome = await Promise.race([Promise.all(stalls.map((s) => s.closed)), sleep(8_000).then(() => null)]);
      expect(outcome, 'every stalled connection closed').to.not.equal(null);
      expect(outcome!.filter((line) => line === 'HTTP/1.1 408 Request Timeout')).to.have.length(12);
      // A request sent whole is served as before.
      expect((await fetch(`http://127.0.0.1:${port}/ojs/v1/health`)).status).to.equal(200);
    } finally {
      // A connection left open would hold the server's close, and the run, when this fails.
      for (const socket of sockets) socket.destroy();
      await app.close();
    }
  });

  it('closes a connection past maxConnections as it opens, and serves again once one closes', async () => {
    const app = await createOjsServer({ store: createMemoryGatewayStore(), maxConnections: 3 });
    const held: net.Socket[] = [];
    try {
      const port = await listen(app);
      const opened = await Promise.all(
        Array.from(
          { length: 3 },
          () =>
            new Promise<net.Socket>((resolve) => {
              const socket = net.connect(port, '127.0.0.1', () => resolve(socket));
              socket.on('error', () => undefined);
            }),
        ),
      );
      held.push(...opened);
      const refused = await fetch(`http://127.0.0.1:${port}/ojs/v1/health`).then(
        () => false,
        () => true,
      );
      expect(refused, 'a fourth connection is closed').to.equal(true);
      for (const socket of held) socket.destroy();
      let served = 0;
      for (let attempt = 0; attempt < 50 && served === 0; attempt++) {
        const ok = await fetch(`http://127.0.0.1:${port}/ojs/v1/health`, { headers: { connection: 'close' } }).then(
          (reply) => reply.status === 200,
          () => false,
        );
        if (ok) served++;
        else await sleep(50);
      }
      expect(served).to.equal(1);
    } finally {
      for (const socket of held) socket.destroy();
      await app.close();
    }
  });

  for (const backend of GATEWAY_BACKENDS) {
    it(`routes job ids up to the core's 128 characters (INFO, CANCEL, ACTIVATE): ${backend}`, async () => {
      const store = makeStore(backend, gatewayNames('long-id'));
      const app = await createOjsServer({ store, testReset: true });
      try {
        const id = `host-job-${'x'.repeat(119)}`;
        expect(id).to.have.length(128);
        // A host producer's id: the gateway's PUSH takes UUIDv7 ids only, the core up to 128 characters.
        await store.enqueue({ type: 'long.id', args: {}, id, extras: {} });
        const info = await app.inject({ method: 'GET', url: `/ojs/v1/jobs/${id}` });
        expect(info.statusCode, info.body).to.equal(200);
        expect(info.json().job.id).to.equal(id);
        const activate = await app.inject({ method: 'POST', url: `/ojs/v1/jobs/${id}/activate` });
        expect(activate.statusCode, activate.body).to.equal(409);
        const cancel = await app.inject({ method: 'DELETE', url: `/ojs/v1/jobs/${id}` });
        expect(cancel.statusCode, cancel.body).to.equal(200);
        expect(cancel.json().job).to.include({ id, state: 'cancelled' });
        const longer = await app.inject({ method: 'GET', url: `/ojs/v1/jobs/${id}y` });
        expect(longer.statusCode).to.equal(404);
        expect(longer.json().error.code).to.equal('not_found');
        await store.reset();
      } finally {
        await app.close();
      }
    });
  }

  it('takes the bearer scheme in any case (RFC 9110), and still refuses a wrong or missing scheme', async () => {
    const app = await createOjsServer({ store: createMemoryGatewayStore(), token: 's3cret' });
    try {
      for (const [authorization, status] of [
        ['Bearer s3cret', 200],
        ['bearer s3cret', 200],
        ['BEARER s3cret', 200],
        ['bearer  s3cret', 200],
        ['Bearers3cret', 401],
        ['Basic s3cret', 401],
        ['bearer s3creT', 401],
      ] as const) {
        const reply = await app.inject({ method: 'GET', url: '/ojs/manifest', headers: { authorization } });
        expect(reply.statusCode, authorization).to.equal(status);
      }
    } finally {
      await app.close();
    }
  });

  describe('preparedStatements on Graphile Worker', () => {
    /** Counts the named (prepared) statements `pg` clients send while `run` runs; every query still reaches PostgreSQL. */
    async function namedStatements(run: () => Promise<void>): Promise<number> {
      const prototype = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
      const original = prototype.query;
      let named = 0;
      prototype.query = function (this: unknown, ...args: unknown[]) {
        const config = args[0] as { name?: unknown } | null;
        if (config && typeof config === 'object' && typeof config.name === 'string') named++;
        return original.apply(this, args);
      };
      try {
        await run();
      } finally {
        prototype.query = original;
      }
      return named;
    }

    for (const preparedStatements of [undefined, false] as const) {
      it(`createGatewayStore({ preparedStatements: ${preparedStatements} }): ${preparedStatements === false ? 'no' : 'named'} prepared statements`, async () => {
        const names = gatewayNames('prepared');
        const store = await createGatewayStore({
          backend: 'graphile-worker',
          databaseUrl: databaseUrl(),
          prefix: names.graphileSchema,
          uniqueSchema: names.uniqueSchema,
          ...(preparedStatements === undefined ? {} : { preparedStatements }),
        });
        const app = await createOjsServer({ store, testReset: true });
        try {
          await app.inject({ method: 'POST', url: '/ojs/v1/admin/reset' });
          const push = (n: number) =>
            app.inject({
              method: 'POST',
              url: '/ojs/v1/jobs',
              headers: { 'content-type': 'application/openjobspec+json' },
              payload: JSON.stringify({ type: 'prepared.job', args: [{ n }], options: { unique: { key: ['n'] } } }),
            });
          const named = await namedStatements(async () => {
            // Distinct keys only: under mocha, createGatewayStore's dynamic import loads a second copy
            // of the error classes, so a duplicate's DuplicateJobError would not be recognised here.
            expect((await push(1)).statusCode).to.equal(201);
            expect((await push(2)).statusCode).to.equal(201);
          });
          if (preparedStatements === false) expect(named).to.equal(0);
          else expect(named).to.be.greaterThan(0);
          await app.inject({ method: 'POST', url: '/ojs/v1/admin/reset' });
        } finally {
          await app.close();
        }
      });
    }
  });
});
