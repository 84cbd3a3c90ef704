/**
 * The adapter's own RESP encoding of its script commands (adapters/bullmq/bullmq-script-encoding.ts):
 * the same bytes as ioredis' encoding, and ioredis' EVAL / EVALSHA / NOSCRIPT handling kept.
 */
import { expect } from 'chai';
import { Command } from 'ioredis';
import { encodeCommand, useFastEncoding } from '../../adapters/bullmq/bullmq-script-encoding.js';
import { COMMANDS, composedScripts, ensureScripts, type ScriptClient } from '../../adapters/bullmq/bullmq-script-set.js';
import { withUniqueness } from '../../adapters/bullmq/index.js';
import { startOwnRedis, type OwnRedis } from './bullmq-own-redis.js';
import { useRedisPrefix } from './bullmq-test-redis.js';

const ioredisBytes = (name: string, args: unknown[]) => {
  const written = new Command(name, args as never).toWritable({});
  return Buffer.isBuffer(written) ? written : Buffer.from(written);
};

describe('bullmq adapter: script command encoding', function () {
  const ctx = useRedisPrefix(import.meta.url);

  it('writes the bytes ioredis writes: strings only, Buffers anywhere, empty, multi-byte and numeric arguments', function () {
    const cases: unknown[][] = [
      ['sha', 2, 'k1', 'k2', 'a'],
      ['sha', 13, Buffer.from([0x92, 0xc0, 0xff]), '{"user_id":1}', Buffer.from([0xde, 0, 1]), 'é 漢字 🙂', ''],
      [Buffer.from([1, 2, 3]), Buffer.alloc(0), 'x', 604800000, Buffer.from('tail')],
      [],
    ];
    for (const args of cases) {
      const ours = new Command('evalsha', args as never); // ioredis stringifies numbers on construction
      const written = encodeCommand('evalsha', ours.args);
      expect(Buffer.isBuffer(written) ? written : Buffer.from(written)).to.deep.equal(ioredisBytes('evalsha', args));
    }
  });

  it('is installed on the clients the adapter registers its scripts on, and leaves an unknown ioredis shape alone', function () {
    const client = ctx.connect();
    ensureScripts(client as unknown as ScriptClient);
    const script = (client as unknown as { scriptsSet: Record<string, { Command: { name: string } }> }).scriptsSet[COMMANDS.uniqueAdd]!;
    expect(script.Command.name).to.equal('OjsScriptCommand');
    expect(useFastEncoding({}, COMMANDS.uniqueAdd, composedScripts()[0]!.lua)).to.equal(false);
    expect(useFastEncoding(client, COMMANDS.uniqueAdd, 'return 1')).to.equal(false);
  });

  it('holds the same arguments as an ioredis Command (numbers stringified, Buffers kept), nested arrays flattened as ioredis does', function () {
    const client = ctx.connect();
    ensureScripts(client as unknown as ScriptClient);
    const OjsCommand = (client as unknown as { scriptsSet: Record<string, { Command: typeof Command }> }).scriptsSet[COMMANDS.uniqueAdd]!.Command;
    for (const args of [['sha', 2, 'k1', 'k2', Buffer.from([1, 2]), 604800000, ''], ['sha', 1, ['k1', 'a'], 'b'], []] as unknown[][]) {
      expect(new OjsCommand('evalsha', args as never).args).to.deep.equal(new Command('evalsha', args as never).args);
    }
  });
});

// SCRIPT FLUSH empties the script cache of the whole server: never sent to the shared Redis.
describe('bullmq adapter: script command encoding, on a redis-server of the test\'s own', function () {
  let server: OwnRedis | undefined;
  before(async function () {
    server = await startOwnRedis();
  });
  after(async function () {
    await server?.stop();
  });
  const own = useRedisPrefix(import.meta.url, () => server!.url);

  it('loads the script with EVAL on a new connection, then EVALSHA, and recovers after SCRIPT FLUSH (NOSCRIPT)', async function () {
    const client = own.connect();
    const queue = withUniqueness(own.queue('mail', { connection: client }));
    const unique = { keys: ['type', 'args', 'queue'] } as const;
    const first = await queue.add('welcome', { user: 1 }, { unique });
    expect(first.unique?.outcome).to.equal('created');
    expect((await queue.add('welcome', { user: 1 }, { unique: { ...unique, on_conflict: 'ignore' } })).unique?.outcome).to.equal('deduplicated');
    await own.redis.script('FLUSH');
    const after = await queue.add('welcome', { user: 2 }, { unique });
    expect(after.unique?.outcome).to.equal('created');
    expect((await queue.add('welcome', { user: 2 }, { unique: { ...unique, on_conflict: 'ignore' } })).unique?.outcome).to.equal('deduplicated');
  });
});
