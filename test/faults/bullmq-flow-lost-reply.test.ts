/**
 * Faults on a BullMQ flow with unique nodes (unique-flow): the server runs the flow's script, its
 * reply is lost with the connection, and ioredis re-sends the command after reconnecting, so the
 * script runs twice. The caller must still get the first run's tree (same ids, same outcomes),
 * with one job per node and each parent waiting for exactly its children (§8.1, idempotent
 * enqueue). Through the loopback proxy (test/faults/tcp-proxy.ts) on the shared Redis.
 */
import { randomBytes } from 'node:crypto';
import { FlowProducer } from 'bullmq';
import { expect } from 'chai';
import { Redis, type RedisOptions } from 'ioredis';
import { withUniqueness, type UniqueJobNode } from '../../adapters/bullmq/index.js';
import { flowScriptsProblem } from '../../adapters/bullmq/bullmq-script-set.js';
import { deleteKeys, REDIS_URL } from '../adapters/bullmq-test-redis.js';
import { RUN_SALT } from '../run-salt.js';
import { contains, startTcpProxy, type TcpProxy } from './tcp-proxy.js';

const target = new URL(REDIS_URL);
const CLIENT: RedisOptions = { maxRetriesPerRequest: null, retryStrategy: () => 20 };

describe('faults: a BullMQ flow with unique nodes whose reply is lost runs twice and still answers once', function () {
  this.timeout(30_000);
  let proxy: TcpProxy;
  let direct: Redis;
  let prefix: string;
  const clients: Redis[] = [];
  const closables: { close(): Promise<unknown> }[] = [];

  beforeEach(async function () {
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 6379) });
    direct = new Redis(REDIS_URL);
    prefix = `ojs-test:${RUN_SALT}:faults:${randomBytes(4).toString('hex')}`;
  });
  afterEach(async function () {
    await Promise.all(closables.splice(0).map((closable) => closable.close()));
    for (const client of clients.splice(0)) client.disconnect();
    await proxy.close();
    if (this.currentTest?.state === 'passed') await deleteKeys(direct, `${prefix}:*`);
    await direct.quit();
  });

  function proxied(): Redis {
    const client = new Redis(proxy.url('redis'), CLIENT);
    client.on('error', () => undefined); // the cuts are the point; ioredis would print each
    clients.push(client);
    return client;
  }

  const outcomes = (node: UniqueJobNode): string[] => [node.job.unique?.outcome ?? 'plain', ...(node.children ?? []).flatMap(outcomes)];

  (flowScriptsProblem() === null ? it : it.skip)(
    "§8.1 the re-sent flow returns the first run's ids and outcomes; one job per node, each parent waits for exactly its children",
    async function () {
      const client = proxied();
      const flow = withUniqueness(new FlowProducer({ connection: client, prefix }));
      closables.push(flow);
      const byArgs = { keys: ['type', 'args'], on_conflict: 'ignore' } as const;
      const existing = await flow.add({ name: 'fetch', queueName: 'c', data: { customer: 0 }, opts: { unique: byArgs } });
      await client.ping();
      const dropped = proxy.armDrop({ request: contains('lost-flow'), reply: contains('done') });
      const tree = await flow.add({
        name: 'report',
        queueName: 'p',
        data: { marker: 'lost-flow' },
        children: [
          { name: 'fetch', queueName: 'c', data: { customer: 1 }, opts: { unique: byArgs } },
          { name: 'fetch', queueName: 'c', data: { customer: 0 }, opts: { unique: byArgs } },
          { name: 'plain', queueName: 'c' },
          {
            name: 'middle',
            queueName: 'm',
            children: [{ name: 'fetch', queueName: 'c', data: { customer: 2 }, opts: { unique: byArgs } }],
          },
        ],
      });
      await dropped;
      expect(proxy.accepted, 'the client reconnected').to.be.at.least(2);
      expect(outcomes(tree)).to.deep.equal(['plain', 'created', 'deduplicated', 'plain', 'plain', 'created']);
      const [created, duplicate, plain, middle] = tree.children!;
      expect(duplicate!.job.id).to.equal(existing.job.id);
      const grandchild = middle!.children![0]!;
      const ids = (queue: string) => direct.lrange(`${prefix}:${queue}:wait`, 0, -1).then((list) => list.sort());
      expect(await ids('c'), 'one job per node').to.deep.equal(
        [existing.job.id, created!.job.id, plain!.job.id, grandchild.job.id].map(String).sort(),
      );
      const pending = (queue: string, id: string | undefined) =>
        direct.smembers(`${prefix}:${queue}:${id!}:dependencies`).then((set) => set.sort());
      expect(await pending('p', tree.job.id)).to.deep.equal(
        [`${prefix}:c:${created!.job.id}`, `${prefix}:c:${plain!.job.id}`, `${prefix}:m:${middle!.job.id}`].sort(),
      );
      expect(await pending('m', middle!.job.id)).to.deep.equal([`${prefix}:c:${grandchild.job.id}`]);
      expect(await direct.zrange(`${prefix}:p:waiting-children`, '0', '-1')).to.deep.equal([tree.job.id]);
      expect(await direct.zrange(`${prefix}:m:waiting-children`, '0', '-1')).to.deep.equal([middle!.job.id]);
    },
  );
});
