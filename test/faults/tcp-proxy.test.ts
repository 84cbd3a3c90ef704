import { expect } from 'chai';
import { Redis } from 'ioredis';
import { contains, startTcpProxy, type TcpProxy } from './tcp-proxy.js';
import { RUN_SALT } from '../run-salt.js';

const REDIS_URL = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');

describe('fault proxy (test infrastructure)', () => {
  let proxy: TcpProxy;
  const key = `ojs-test:${RUN_SALT}:proxy:${process.pid}:${Date.now()}`;
  beforeEach(async () => {
    proxy = await startTcpProxy({ host: REDIS_URL.hostname, port: Number(REDIS_URL.port || 6379) });
  });
  afterEach(() => proxy.close());

  it('lets the server execute a command, drops its reply and cuts the connection', async () => {
    const client = new Redis(proxy.url('redis'), { maxRetriesPerRequest: 0, retryStrategy: () => null });
    const direct = new Redis(REDIS_URL.href);
    try {
      await client.ping();
      const dropped = proxy.armDrop({ request: contains('INCR') });
      const reply = client.incr(key).then(
        () => 'answered',
        (error: Error) => error.message,
      );
      await dropped;
      expect(await reply).to.not.equal('answered');
      expect(await direct.get(key), 'the command ran on the server').to.equal('1');
    } finally {
      client.disconnect();
      await direct.del(key);
      await direct.quit();
    }
  });

  it('holds the commands of a connection accepted while held, and sends them once released', async () => {
    const direct = new Redis(REDIS_URL.href);
    const release = proxy.holdNewConnections();
    const client = new Redis(proxy.url('redis'), { maxRetriesPerRequest: 0, retryStrategy: () => null });
    try {
      const reply = client.incr(`${key}:held`);
      await direct.set(`${key}:held`, '10');
      release();
      expect(await reply, 'the held INCR ran after the direct SET').to.equal(11);
    } finally {
      client.disconnect();
      await direct.del(`${key}:held`);
      await direct.quit();
    }
  });
});
