/**
 * Redis outages on BullMQ: every call of the backend settles with a typed `BackendError` while
 * Redis is down or hung (the client the backend creates has bounded retries and a command
 * timeout), says `written: false` only when nothing can have been written (a read), prints
 * nothing, and works again once Redis is back. A redis-server of the test's own, stopped and started by the test.
 */
import { once } from 'node:events';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { expect } from 'chai';
import { createBullMQBackend, withUniqueness } from '../../adapters/bullmq/index.js';
import { BackendError, isBackendError } from '../../src/index.js';
import { rejection } from '../conformance/suite-context.js';
import { RUN_SALT } from '../run-salt.js';
import { startOwnRedis, type OwnRedis } from './bullmq-own-redis.js';

describe('bullmq adapter: Redis outages', function () {
  this.timeout(60_000);
  let redis: OwnRedis;
  let printed: unknown[][];
  const consoleError = console.error;

  beforeEach(async function () {
    redis = await startOwnRedis();
    printed = [];
    console.error = (...args: unknown[]) => {
      printed.push(args);
    };
  });

  afterEach(async function () {
    console.error = consoleError;
    await redis.stop();
  });

  async function backendError(call: Promise<unknown>): Promise<BackendError> {
    const error = await rejection(call);
    expect(isBackendError(error), String(error)).to.equal(true);
    return error as unknown as BackendError;
  }

  it('§8.1 createBullMQBackend(url): enqueue, getJob and cancel settle with BackendError during the outage, print nothing, and work after it', async function () {
    // A short command timeout keeps the test short; the defaults are checked below.
    const backend = createBullMQBackend({ connection: redis.url, prefix: `ojs-test:${RUN_SALT}:outage`, commandTimeout: 1000 });
    try {
      const before = await backend.enqueue({ type: 'report', queue: 'mail', args: {}, unique: {} });
      expect(before.outcome).to.equal('created');

      await redis.stop();
      // A queue the backend has used: the add itself may have been sent, so `written` is not false.
      const add = await backendError(backend.enqueue({ type: 'other', queue: 'mail', args: {}, unique: {} }));
      expect(add.written).to.not.equal(false);
      // The first add to a new queue (its registration in the queue set), with and without a policy.
      await backendError(backend.enqueue({ type: 'report', queue: 'fresh', args: {}, unique: {} }));
      await backendError(backend.enqueue({ type: 'plain', queue: 'fresh', args: {} }));
      expect((await backendError(backend.getJob(before.job.id))).written).to.equal(false);
      await backendError(backend.cancel(before.job.id));
      expect(printed).to.deep.equal([]);

      await redis.start();
      // The client reconnects on its own (ioredis' retry strategy never gives up).
      if ((backend.client as Redis).status !== 'ready') await once(backend.client, 'ready');
      // An empty Redis (no persistence): the same job is new again.
      expect((await backend.enqueue({ type: 'report', queue: 'fresh', args: {}, unique: {} })).outcome).to.equal('created');
      expect((await backend.enqueue({ type: 'other', queue: 'mail', args: {}, unique: {} })).outcome).to.equal('created');
      expect(await backend.getJob(before.job.id)).to.equal(null);
    } finally {
      await backend.close();
    }
    expect(printed).to.deep.equal([]);
  });

  it('§8.1 createBullMQBackend(url): a Redis that hangs (SIGSTOP) is bounded by the command timeout, then works again', async function () {
    const backend = createBullMQBackend({ connection: redis.url, prefix: `ojs-test:${RUN_SALT}:outage-hang`, commandTimeout: 500 });
    try {
      const before = await backend.enqueue({ type: 'report', queue: 'mail', args: {}, unique: {} });
      redis.pause();
      // The connection stays up, so only the timeout ends these; the add may still run later.
      expect((await backendError(backend.enqueue({ type: 'other', queue: 'mail', args: {}, unique: {} }))).message).to.contain('timed out');
      await backendError(backend.enqueue({ type: 'report', queue: 'fresh', args: {}, unique: {} }));
      expect((await backendError(backend.getJob(before.job.id))).written).to.equal(false);
      await backendError(backend.cancel(before.job.id));
      redis.resume();
      expect((await backend.getJob(before.job.id))?.state).to.equal('available');
    } finally {
      redis.resume();
      await backend.close();
    }
    expect(printed).to.deep.equal([]);
  });

  it("§8.1 createBullMQBackend: the client it creates has bounded retries and a command timeout; a caller's client is left as configured", async function () {
    const owned = createBullMQBackend({ connection: redis.url, prefix: `ojs-test:${RUN_SALT}:outage-opts` });
    const tuned = createBullMQBackend({
      connection: redis.url,
      prefix: `ojs-test:${RUN_SALT}:outage-opts`,
      maxRetriesPerRequest: 0,
      commandTimeout: 750,
    });
    const client = new Redis(redis.url, { maxRetriesPerRequest: null });
    const shared = createBullMQBackend({ connection: client, prefix: `ojs-test:${RUN_SALT}:outage-opts` });
    try {
      expect((owned.client as Redis).options).to.include({ maxRetriesPerRequest: 2, commandTimeout: 5000 });
      expect((tuned.client as Redis).options).to.include({ maxRetriesPerRequest: 0, commandTimeout: 750 });
      expect(shared.client).to.equal(client);
      expect(client.options).to.include({ maxRetriesPerRequest: null });
      expect(client.options.commandTimeout).to.equal(undefined);
    } finally {
      await Promise.all([owned.close(), tuned.close(), shared.close()]);
      await client.quit();
    }
  });

  it('§8.1 withUniqueness: the first unique add (registration) during an outage is a BackendError, not a raw ioredis error; queues it opened print nothing', async function () {
    const connection = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    connection.on('error', () => {});
    const prefix = `ojs-test:${RUN_SALT}:outage-wrap`;
    const raw = new Queue('mail', { connection, prefix });
    const a = new Queue('a', { connection, prefix });
    const b = new Queue('b', { connection, prefix });
    for (const own of [raw, a, b]) own.on('error', () => {});
    const queue = withUniqueness(raw);
    const [wrappedA, wrappedB] = [withUniqueness(a), withUniqueness(b)];
    try {
      // A job found across queues is bound to a queue the wrapper opens itself (here: 'a', from b).
      const first = await wrappedA.add('sync', {}, { unique: { on_conflict: 'ignore' } });
      expect((await wrappedB.add('sync', {}, { unique: { on_conflict: 'ignore' } })).id).to.equal(first.id);
      await redis.stop();
      const error = await backendError(queue.add('report', {}, { unique: {} }));
      expect((error as { cause?: unknown }).cause).to.be.instanceOf(Error);
      await redis.start();
      if (connection.status !== 'ready') await once(connection, 'ready');
      expect((await queue.add('report', {}, { unique: {} })).unique?.outcome).to.equal('created');
    } finally {
      await Promise.all([queue.close(), wrappedA.close(), wrappedB.close()]);
      await connection.quit();
    }
    expect(printed).to.deep.equal([]);
  });
});
