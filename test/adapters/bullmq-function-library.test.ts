/**
 * The composed scripts as one Redis function library (adapters/bullmq/bullmq-script-command.ts):
 * FCALL on Redis >= 7, the library loaded on "Function not found" (on a client and from a
 * pipeline, one load for concurrent misses), the scripts themselves when the server refuses it
 * (an ACL user without FUNCTION or FCALL, on a redis-server of the test's own), and the split of
 * each script into what runs once, at load, and what runs on every call.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { OjsScript, OjsScriptLibrary, SCRIPT_HEAD, scriptModeOf, setScriptMode } from '../../adapters/bullmq/bullmq-script-command.js';
import { composedScripts, mainStart } from '../../adapters/bullmq/bullmq-script-set.js';
import { queueClient, type IoredisTarget } from '../../adapters/bullmq/bullmq-host.js';
import { withUniqueness } from '../../adapters/bullmq/index.js';
import { startOwnRedis, type OwnRedis } from './bullmq-own-redis.js';
import { REDIS_URL, useRedisPrefix } from './bullmq-test-redis.js';

/** A library no server has seen: its code carries a random string, hence its name. */
function freshLibrary(): { script: OjsScript; library: OjsScriptLibrary } {
  const lua = `local TAG = '${randomUUID()}'\nlocal function echo(k, a) return { k, a, TAG } end\nreturn echo(KEYS[1], ARGV[1])`;
  const script = new OjsScript('test', 1, lua, mainStart(lua));
  return { script, library: new OjsScriptLibrary([script]) };
}

async function commandCalls(redis: Redis, name: string): Promise<number> {
  const match = new RegExp(`^cmdstat_${name.replace('|', '\\|')}:calls=(\\d+)`, 'm').exec(await redis.info('commandstats'));
  return Number(match?.[1] ?? 0);
}

describe('bullmq adapter: the scripts as a function library', function () {
  this.timeout(30_000);

  it("a script of another's definitions (unique-native-add, unique-add's) is a function of that script's block, its definitions loaded once", function () {
    const code = composedScripts()[0]!.library!.code;
    expect(code).to.match(/^do -- ojsUniqueAdd, ojsUniqueNativeAdd$/m);
    expect(code.split('\nlocal function ojsNativeAdd(').length - 1).to.equal(1);
    expect(code.split("redis.register_function('").length - 1).to.equal(composedScripts().length);
    // Two scripts whose definitions differ in code keep a block each.
    const one = new OjsScript('one', 0, 'local A = 1\nreturn A', 'local A = 1\n'.length);
    const other = new OjsScript('other', 0, '-- same code\nlocal A = 1\nreturn A + 1', '-- same code\nlocal A = 1\n'.length);
    const third = new OjsScript('third', 0, 'local A = 2\nreturn A', 'local A = 2\n'.length);
    const library = new OjsScriptLibrary([one, other, third]);
    expect(library.code)
      .to.match(/^do -- one, other$/m)
      .and.match(/^do -- third$/m);
  });

  describe('on the shared Redis', function () {
    const loaded: string[] = [];
    // Before useRedisPrefix's own afterEach, which closes ctx.redis (a delete on a closed client
    // would fail unseen and leave the library on the shared Redis).
    afterEach(async function () {
      const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
      try {
        for (const name of loaded.splice(0)) {
          await redis.call('FUNCTION', 'DELETE', name).catch((error: Error) => {
            if (!/Library not found/i.test(error.message)) throw error;
          });
        }
      } finally {
        await redis.quit();
      }
    });
    const ctx = useRedisPrefix(import.meta.url);

    it('a client is detected once (INFO) and then calls functions; a library not on the server is loaded on "Function not found" and the call answered', async function () {
      const { script, library } = freshLibrary();
      loaded.push(library.name);
      const client = ctx.connect();
      expect(library.name).to.match(/^ojs_unique_[0-9a-f]{24}$/);
      expect(script.functionName).to.equal(`ojs_${library.name.slice('ojs_unique_'.length)}_test`);
      // Until the version is known, the script itself runs (EVAL on a new connection).
      expect(((await script.run(client, ['k', 'a'])) as string[]).slice(0, 2)).to.deep.equal(['k', 'a']);
      for (let i = 0; i < 50 && scriptModeOf(client) !== 'functions'; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(scriptModeOf(client), 'Redis >= 7: functions').to.equal('functions');
      // Three calls meet "Function not found" together: one load, each call answered.
      const replies = await Promise.all(['a', 'b', 'c'].map((arg) => script.run(client, ['k', arg])));
      expect(replies.map((reply) => (reply as string[])[1])).to.deep.equal(['a', 'b', 'c']);
      const listed = (await ctx.redis.call('FUNCTION', 'LIST', 'LIBRARYNAME', library.name)) as unknown[][];
      expect(listed.map((entry) => entry[1])).to.deep.equal([library.name]);
      // From a pipeline: deleted again, the miss is resent on the pipeline's client; exec has the reply.
      await ctx.redis.call('FUNCTION', 'DELETE', library.name);
      const pipeline = client.pipeline();
      void script.run(pipeline as unknown as IoredisTarget, ['k2', 'b']);
      const [error, reply] = (await pipeline.exec())![0]!;
      expect(error).to.equal(null);
      expect((reply as string[]).slice(0, 2)).to.deep.equal(['k2', 'b']);
    });

    it('send fills the head slots of the array it is given and sends it as it is', async function () {
      const { script, library } = freshLibrary();
      loaded.push(library.name);
      const client = ctx.connect();
      setScriptMode(client, 'functions');
      const args = ['', 0, 'k', 'a'];
      expect(SCRIPT_HEAD).to.equal(2);
      expect(((await script.send(client, args)) as string[]).slice(0, 2)).to.deep.equal(['k', 'a']);
      expect(args.slice(0, 2)).to.deep.equal([script.functionName, 1]);
    });

    it('every script of the composed set is a function of one library, named by a digest of its code, whose definitions load once', async function () {
      const scripts = composedScripts();
      const library = scripts[0]!.library!;
      expect(scripts.every((script) => script.library === library)).to.equal(true);
      expect(new Set(scripts.map((script) => script.functionName)).size).to.equal(scripts.length);
      for (const script of scripts) {
        const main = script.lua.slice(script.mainAt);
        // What each call runs starts at the layout check: every include and splice is a definition.
        expect(main.trimStart().split('\n')[0], script.command).to.match(/^local layoutRefusal\b/);
        expect(library.code).to.contain(`redis.register_function('${script.functionName}'`);
      }
      // Loadable as it is (no globals, no redis.call at load); the test suite calls every function.
      const loadedBefore = (await ctx.redis.call('FUNCTION', 'LIST', 'LIBRARYNAME', library.name)) as unknown[];
      if (loadedBefore.length === 0) loaded.push(library.name);
      await ctx.redis.call('FUNCTION', 'LOAD', library.code).catch((error: Error) => {
        if (!/already exists/.test(error.message)) throw error;
      });
    });

    it("mainStart: comments, local functions, redis bindings and capitalised literal constants are definitions; the first other statement starts each call's code", function () {
      const head = [
        '--[[',
        '  contract',
        ']]',
        'local rcall = redis.call',
        'local A, B = 1, "x"',
        'local BITS = { completed = 1, failed = 2 }',
        '--- @bullmq "addStandardJob"',
        'local function f(x)',
        '  return x',
        'end',
        'local function g(x) return x end',
        '',
      ].join('\n');
      expect(mainStart(`${head}local now = rcall("TIME")\nreturn now`)).to.equal(head.length);
      // State a call could change, or a value read from the call, is never hoisted.
      expect(mainStart(`${head}local seen = {}\nlocal function h() end`)).to.equal(head.length);
      expect(mainStart(`${head}local N = tonumber(ARGV[1])`)).to.equal(head.length);
      expect(mainStart(head)).to.equal(head.length);
    });
  });

  describe("on a redis-server of the test's own", function () {
    let own: OwnRedis;
    before(async function () {
      own = await startOwnRedis();
    });
    after(async function () {
      await own?.stop();
    });

    for (const [title, rules] of [
      ['an ACL user without FUNCTION', ['+@all', '-function']],
      ['an ACL user without FCALL', ['+@all', '-fcall']],
    ] as const) {
      it(`${title}: unique adds run the scripts themselves (EVALSHA), and answer as with functions`, async function () {
        const admin = new Redis(own.url, { maxRetriesPerRequest: null });
        const user = `u${randomUUID().slice(0, 8)}`;
        await admin.call('ACL', 'SETUSER', user, 'on', '>pw', '~*', '&*', ...rules);
        await admin.call('FUNCTION', 'FLUSH');
        const connection = new Redis(own.url, { username: user, password: 'pw', maxRetriesPerRequest: null });
        const queue = withUniqueness(new (await import('bullmq')).Queue('q', { connection, prefix: `acl${user}` }));
        try {
          const client = await queueClient(queue.unwrapped);
          const unique = { keys: ['type', 'args'] as ('type' | 'args')[], on_conflict: 'ignore' as const };
          const first = await queue.add('job', { n: 1 }, { unique });
          // Past the version check: each add is a function call that the server refuses.
          for (let i = 0; i < 50 && scriptModeOf(client) === 'detecting'; i++) await new Promise((resolve) => setTimeout(resolve, 10));
          for (let i = 0; i < 3; i++) expect((await queue.add('job', { n: 1 }, { unique })).id).to.equal(first.id);
          const second = await queue.add('job', { n: 2 }, { unique });
          expect(second.id).to.not.equal(first.id);
          expect(scriptModeOf(client)).to.equal('scripts');
          expect(await commandCalls(admin, 'evalsha')).to.be.greaterThan(0);
          expect((await admin.call('FUNCTION', 'LIST')) as unknown[]).to.deep.equal([]);
        } finally {
          await queue.close();
          connection.disconnect();
          await admin.call('ACL', 'DELUSER', user);
          admin.disconnect();
        }
      });
    }

    it('FUNCTION FLUSH while adding: the next add reloads the library and answers', async function () {
      const connection = new Redis(own.url, { maxRetriesPerRequest: null });
      const admin = new Redis(own.url, { maxRetriesPerRequest: null });
      const queue = withUniqueness(new (await import('bullmq')).Queue('q', { connection, prefix: 'flush' }));
      try {
        const client = await queueClient(queue.unwrapped);
        const unique = { keys: ['type', 'args'] as ('type' | 'args')[], on_conflict: 'ignore' as const };
        const first = await queue.add('job', { n: 1 }, { unique });
        for (let i = 0; i < 50 && scriptModeOf(client) !== 'functions'; i++) await new Promise((resolve) => setTimeout(resolve, 10));
        expect(scriptModeOf(client)).to.equal('functions');
        expect((await queue.add('job', { n: 1 }, { unique })).id).to.equal(first.id);
        const loads = await commandCalls(admin, 'function|load');
        await admin.call('FUNCTION', 'FLUSH');
        expect((await queue.add('job', { n: 1 }, { unique })).id).to.equal(first.id);
        expect((await queue.add('job', { n: 3 }, { unique })).id).to.not.equal(first.id);
        expect(await commandCalls(admin, 'function|load')).to.equal(loads + 1);
        expect(((await admin.call('FUNCTION', 'LIST')) as unknown[]).length).to.equal(1);
      } finally {
        await queue.close();
        connection.disconnect();
        admin.disconnect();
      }
    });
  });
});
