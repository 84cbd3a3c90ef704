/**
 * Contract tests of the BullMQ internals the adapter relies on (adapters/bullmq/bullmq-host.ts).
 * Each failure says what changed in BullMQ and where the adapter uses it. CI runs this file
 * against the oldest and the newest BullMQ 6.x (docs/development.md, "The BullMQ matrix").
 */
import { createHash, randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { FlowProducer, Job, Queue, Worker, type FlowJob } from 'bullmq';
import { expect } from 'chai';
import { Command, Redis } from 'ioredis';
import {
  BULLMQ_ADD_ARGUMENTS,
  BULLMQ_ADD_SCRIPTS,
  BULLMQ_FLOW_SCRIPTS,
  BULLMQ_MAX_PRIORITY,
  BULLMQ_MOVE_SCRIPTS,
  moveScriptProblem,
  checkConnection,
  encodeAdd,
  encodeNode,
  flowScriptProblem,
  installedBullMQ,
  internalsOf,
  jobFromHash,
  loadAddScripts,
  loadFlowScripts,
  parseScriptHeader,
  queueClient,
  scriptHeaderText,
  storeJobHookProblem,
  SUPPORTED_BULLMQ_RANGE,
  validateJobOptions,
  writeQueueMeta,
  type BullMQAddScript,
  type BullMQFlowScript,
  type IoredisTarget,
  type ShippedScript,
} from '../../adapters/bullmq/bullmq-host.js';
import { encodedArguments, encodeCommand, OjsScript, setScriptMode } from '../../adapters/bullmq/bullmq-script-command.js';
import { composedScripts, composeScripts, flowScriptsProblem, UNIQUE_ADD_QUEUE_KEYS } from '../../adapters/bullmq/bullmq-script-set.js';
import { createBullMQBackend, withUniqueness } from '../../adapters/bullmq/index.js';
import { BackendError, InvalidJobInputError } from '../../src/index.js';
import { useRedisPrefix } from './bullmq-test-redis.js';

const HOST = 'adapters/bullmq/bullmq-host.ts';
const SNAPSHOT = fileURLToPath(new URL('../fixtures/bullmq-script-headers.txt', import.meta.url));
const bullmq = installedBullMQ();
const ADD_SCRIPTS = Object.keys(BULLMQ_ADD_SCRIPTS) as BullMQAddScript[];
/** x_update's moves (BULLMQ_MOVE_SCRIPTS): pinned and checked like the add scripts. */
const MOVE_SCRIPTS = Object.keys(BULLMQ_MOVE_SCRIPTS) as (keyof typeof BULLMQ_MOVE_SCRIPTS)[];
/** unique-flow's (BULLMQ_FLOW_SCRIPTS): pinned where the installed BullMQ has them (6.0.0 has no release step). */
const FLOW_SCRIPTS = Object.keys(BULLMQ_FLOW_SCRIPTS) as BullMQFlowScript[];

/** The pinned headers: `=== <script> (bullmq <version>)` then the header, one section per distinct header. */
function pinnedHeaders(): { script: string; version: string; header: string }[] {
  const sections: { script: string; version: string; header: string }[] = [];
  for (const chunk of readFileSync(SNAPSHOT, 'utf8').split(/^(?==== )/m)) {
    const match = /^=== (\w+) \(bullmq ([^)]+)\)\n([\s\S]*)$/.exec(chunk);
    if (match) sections.push({ script: match[1]!, version: match[2]!, header: match[3]!.trimEnd() });
  }
  return sections;
}

function refusal(run: () => unknown): BackendError {
  try {
    run();
  } catch (error) {
    expect(error).to.be.instanceOf(BackendError);
    expect((error as BackendError).written).to.equal(false);
    expect((error as Error).message).to.contain(SUPPORTED_BULLMQ_RANGE);
    return error as BackendError;
  }
  throw new Error('expected a BackendError');
}

describe('bullmq host contract: the add scripts unique-add is composed with', function () {
  it(`are the installed BullMQ's (bullmq ${bullmq.version}${process.env.OJS_EXPECT_BULLMQ ? `, as the CI matrix asks: ${process.env.OJS_EXPECT_BULLMQ}` : ''})`, async function () {
    if (process.env.OJS_EXPECT_BULLMQ) {
      expect(bullmq.version, 'the matrix run loaded another BullMQ than it names (scripts/use-bullmq.mjs)').to.equal(
        process.env.OJS_EXPECT_BULLMQ,
      );
      const queue = new Queue('version', { connection: { lazyConnect: true } });
      expect(internalsOf(queue).metaValues.version, 'the Queue class loaded is of another BullMQ (scripts/use-bullmq.mjs)').to.equal(
        `bullmq:${process.env.OJS_EXPECT_BULLMQ}`,
      );
      await queue.close();
    }
    expect(Number(bullmq.version.split('.')[0])).to.equal(6);
  });

  it('have a header (KEYS, ARGV, output) identical to a pinned snapshot (test/fixtures/bullmq-script-headers.txt)', function () {
    const pinned = pinnedHeaders();
    const unknown: string[] = [];
    const flowScripts = FLOW_SCRIPTS.filter((name) => bullmq.scripts[name] !== undefined);
    for (const name of [...ADD_SCRIPTS, ...MOVE_SCRIPTS, ...flowScripts]) {
      const header = scriptHeaderText(bullmq.scripts[name]?.content ?? '');
      expect(header, `bullmq ${bullmq.version}: ${name} has no --[[ ]] header`).to.be.a('string');
      if (!pinned.some((entry) => entry.script === name && entry.header === header))
        unknown.push(`=== ${name} (bullmq ${bullmq.version})\n${header}\n`);
    }
    if (unknown.length > 0 && process.env.OJS_PIN_BULLMQ_HEADERS === '1') {
      writeFileSync(SNAPSHOT, `${readFileSync(SNAPSHOT, 'utf8').trimEnd()}\n${unknown.join('')}`);
      return;
    }
    expect(
      unknown,
      `bullmq ${bullmq.version} ships script headers that are not pinned. unique-add and unique-flow call these scripts with the ` +
        `KEYS of BULLMQ_ADD_SCRIPTS / BULLMQ_MOVE_SCRIPTS / BULLMQ_FLOW_SCRIPTS and read the arguments of BULLMQ_ADD_ARGUMENTS (${HOST}): compare the header with the ` +
        `newest pinned one of the same script; if nothing the adapter relies on changed, pin it with ` +
        `OJS_PIN_BULLMQ_HEADERS=1 npx mocha test/adapters/bullmq-host-contract.test.ts`,
    ).to.deep.equal([]);
  });

  it(`every pinned header says what ${HOST} relies on (KEYS order, ARGV, msgpacked args, output)`, function () {
    for (const { script, version, header } of pinnedHeaders()) {
      const parsed = parseScriptHeader(header)!;
      const where = `${script} of bullmq ${version}`;
      if (script in BULLMQ_MOVE_SCRIPTS) {
        const expected = BULLMQ_MOVE_SCRIPTS[script as keyof typeof BULLMQ_MOVE_SCRIPTS].header;
        expect([parsed.keys, parsed.argv], `${where}: KEYS and ARGV, as BULLMQ_MOVE_SCRIPTS.${script}`).to.deep.equal([
          expected.keys,
          expected.argv,
        ]);
        continue;
      }
      if (script in BULLMQ_FLOW_SCRIPTS) {
        const expected = BULLMQ_FLOW_SCRIPTS[script as BullMQFlowScript].header;
        expect(parsed.keys, `${where}: KEYS, as BULLMQ_FLOW_SCRIPTS.${script}`).to.deep.equal(expected.keys);
        expect(parsed.argv.slice(0, expected.argv.length), `${where}: ARGV, as BULLMQ_FLOW_SCRIPTS.${script}`).to.deep.equal(expected.argv);
        expect(parsed.output.slice(0, expected.output.length), `${where}: output, as BULLMQ_FLOW_SCRIPTS.${script}`).to.deep.equal(
          expected.output,
        );
        // unique-flow reads every node's msgpacked args (key prefix, custom id, parent key), addParentJob's too.
        if (script === 'addParentJob')
          for (const [position, name] of Object.entries(BULLMQ_ADD_ARGUMENTS.packed))
            expect(parsed.packed[Number(position)], `${where}: ARGV[1][${position}]`).to.equal(name);
        continue;
      }
      expect(parsed.keys, `${where}: KEYS, as BULLMQ_ADD_SCRIPTS.${script}`).to.deep.equal(BULLMQ_ADD_SCRIPTS[script as BullMQAddScript]);
      expect(parsed.argv.slice(0, 3), `${where}: ARGV[1..3]`).to.deep.equal(BULLMQ_ADD_ARGUMENTS.argv);
      for (const [position, name] of Object.entries(BULLMQ_ADD_ARGUMENTS.packed))
        expect(parsed.packed[Number(position)], `${where}: ARGV[1][${position}]`).to.equal(name);
    }
  });

  it('pass the start-up check, which refuses another major, a missing script, other KEYS or another argument layout', function () {
    expect(() => loadAddScripts(bullmq)).not.to.throw();
    expect(composedScripts()[0]!.lua).to.not.match(/^--- @bullmq/m);
    expect(refusal(() => loadAddScripts({ ...bullmq, version: '7.0.0' })).message).to.contain('version 7.0.0');
    expect(refusal(() => loadAddScripts({ ...bullmq, version: '5.67.2' })).message).to.contain('version 5.67.2');
    const scripts = bullmq.scripts as Record<BullMQAddScript, ShippedScript>;
    const edit = (name: BullMQAddScript, change: Partial<ShippedScript>) => ({
      ...bullmq,
      scripts: { ...scripts, [name]: { ...scripts[name], ...change } },
    });
    expect(refusal(() => loadAddScripts({ ...bullmq, scripts: { ...scripts, addDelayedJob: undefined } })).message).to.contain(
      'script addDelayedJob is missing',
    );
    expect(refusal(() => loadAddScripts(edit('addStandardJob', { keys: 10 }))).message).to.contain('addStandardJob takes 10 keys');
    const swapped = scripts.addPrioritizedJob.content
      .replace("KEYS[4] 'prioritized'", "KEYS[4] 'delayed'")
      .replace("KEYS[5] 'delayed'", "KEYS[5] 'prioritized'");
    expect(refusal(() => loadAddScripts(edit('addPrioritizedJob', { content: swapped }))).message).to.contain(
      'addPrioritizedJob takes KEYS marker, meta, id, delayed, prioritized',
    );
    const relaid = scripts.addStandardJob.content.replace(/\[4\]\s+timestamp/, '[4]  delay');
    expect(refusal(() => loadAddScripts(edit('addStandardJob', { content: relaid }))).message).to.contain(
      'reads "delay" at position 4 of ARGV[1]',
    );
    expect(refusal(() => loadAddScripts(edit('addDelayedJob', { content: 'return 1' }))).message).to.contain('addDelayedJob has no header');
    const moves = bullmq.scripts as Record<string, ShippedScript>;
    expect(refusal(() => loadAddScripts({ ...bullmq, scripts: { ...moves, promote: undefined } })).message).to.contain(
      'script promote is missing',
    );
    const reordered = moves.changeDelay!.content.replace('KEYS[1] delayed key', 'KEYS[1] meta key');
    expect(moveScriptProblem('changeDelay', { ...moves.changeDelay!, content: reordered })).to.contain('changeDelay takes KEYS meta');
    const reargued = moves.changePriority!.content.replace('ARGV[4] lifo', 'ARGV[4] fifo');
    expect(moveScriptProblem('changePriority', { ...moves.changePriority!, content: reargued })).to.contain('takes ARGV');
  });

  it("unique-add's own KEYS include every queue key x_update's spliced scripts take", function () {
    for (const { queue } of Object.values(BULLMQ_MOVE_SCRIPTS)) for (const key of queue) expect(UNIQUE_ADD_QUEUE_KEYS).to.include(key);
  });

  it('are called by BullMQ with the KEYS of BULLMQ_ADD_SCRIPTS and ARGV = msgpacked args, data, msgpacked options (recorded from addJobToTransaction)', async function () {
    const queue = new Queue(`contract-${randomUUID()}`, { connection: { lazyConnect: true }, prefix: 'contract' });
    try {
      const internals = internalsOf(queue);
      const nameOf = new Map(Object.entries(internals.keys).map(([name, key]) => [key, name]));
      const { unpack } = createRequire(`${bullmq.root}/package.json`)('msgpackr') as { unpack(buffer: Buffer): unknown };
      const cases: [BullMQAddScript, Record<string, unknown>][] = [
        ['addStandardJob', {}],
        ['addDelayedJob', { delay: 5000 }],
        ['addPrioritizedJob', { priority: 7 }],
      ];
      for (const [script, opts] of cases) {
        const job = new Job(queue, 'name', { a: 1 }, { ...opts, jobId: 'custom' }, 'custom');
        let recorded: { name: string; args: unknown[] } | undefined;
        await internals.backend.addJobToTransaction(
          { runCommand: (name: string, args: unknown[]) => ((recorded = { name, args }), Promise.resolve(1)) },
          job.asJSON(),
          'custom',
          {},
        );
        expect(
          recorded!.name.split(':')[0],
          `BullMQ picks ${script} for ${JSON.stringify(opts)}, as unique-add does (lua/unique-add-12.lua)`,
        ).to.equal(script);
        const keys = recorded!.args.slice(0, -3).map((key) => nameOf.get(String(key)));
        expect(keys, `BullMQ passes ${script} these KEYS; unique-add builds them from BULLMQ_ADD_SCRIPTS (${HOST})`).to.deep.equal(
          BULLMQ_ADD_SCRIPTS[script],
        );
        const encoded = encodeAdd(internals, job.asJSON(), 'custom');
        // An add awaits nothing for its encoding (bullmq-host.ts, encodeNode): BullMQ runs the
        // script command before its first await. Were that to change, adds would still work, a
        // promise slower each.
        expect(encoded, `BullMQ encodes ${script} before its first await (${HOST})`).to.not.be.instanceOf(Promise);
        const [packedArgs, data, packedOpts] = await encoded;
        expect(recorded!.args.slice(-3)).to.deep.equal([packedArgs, data, packedOpts]);
        const args = unpack(packedArgs as Buffer) as unknown[];
        expect([args[0], args[1], args[3], args[4] ?? null], `msgpacked args positions 1, 2, 4, 5 (BULLMQ_LUA in ${HOST})`).to.deep.equal([
          `contract:${queue.name}:`,
          'custom',
          job.timestamp,
          null,
        ]);
        expect(data).to.equal('{"a":1}');
        const decoded = unpack(packedOpts as Buffer) as Record<string, unknown>;
        for (const [option, value] of Object.entries(opts))
          expect(decoded[option], `msgpacked option "${option}" (BULLMQ_OPT_* in ${HOST})`).to.equal(value);
      }
      const deduplicated = new Job(queue, 'name', {}, { deduplication: { id: 'd' } });
      const [, , packedOpts] = await encodeAdd(internals, deduplicated.asJSON(), undefined);
      expect(unpack(packedOpts as Buffer), `the deduplication option's short name (BULLMQ_OPT_DEDUPLICATION in ${HOST})`).to.have.property(
        'de',
      );
    } finally {
      await queue.close();
    }
  });

  it("unique-add's own KEYS include every queue key BullMQ's add scripts take", function () {
    for (const keys of Object.values(BULLMQ_ADD_SCRIPTS)) for (const key of keys) expect(UNIQUE_ADD_QUEUE_KEYS).to.include(key);
  });
});

describe('bullmq host contract: flow trees (BULLMQ_FLOW_SCRIPTS, unique-flow)', function () {
  this.timeout(20_000);
  const ctx = useRedisPrefix('bullmq-host-contract.test.ts');
  /** The BullMQ the lockfile installs as `bullmq` (CI's newest run), which must have every flow script. */
  const lockfileBullMQ = (
    JSON.parse(readFileSync(fileURLToPath(new URL('../../package-lock.json', import.meta.url)), 'utf8')) as {
      packages: Record<string, { version: string }>;
    }
  ).packages['node_modules/bullmq']!.version;

  it(`loadFlowScripts: the installed BullMQ's (${bullmq.version}) flow scripts, or the one missing (6.0.0 has no release step)`, function () {
    const { scripts, problem } = loadFlowScripts(bullmq);
    expect(flowScriptsProblem(), 'flowScriptsProblem() is the start-up check of loadFlowScripts').to.equal(problem);
    if (bullmq.version === '6.0.0') {
      expect(problem, 'bullmq 6.0.0 has no releaseParentIfNoPendingDependencies: unique-flow must say so').to.equal(
        'bullmq 6.0.0: script releaseParentIfNoPendingDependencies is missing',
      );
      expect(scripts).to.equal(null);
      return;
    }
    if (bullmq.version === lockfileBullMQ)
      expect(
        problem,
        `bullmq ${bullmq.version} (the lockfile's) no longer has the flow scripts unique-flow splices as BULLMQ_FLOW_SCRIPTS (${HOST}) says`,
      ).to.equal(null);
    // Any other version: whatever it lacks is named, and only what it lacks.
    else if (problem !== null) expect(problem).to.match(/^bullmq [^:]+: script \w+ /);
    if (problem === null)
      for (const name of FLOW_SCRIPTS)
        expect(scripts![name], `loadFlowScripts hands back the installed ${name}`).to.equal(bullmq.scripts[name]);
  });

  /** A BullMQ-style header (`--[[ … ]]`) for a script that takes `keys` and `argv` and answers `output`. */
  function synthetic(name: BullMQFlowScript, change: { keys?: string[]; argv?: string[]; output?: string[]; packed?: string[] } = {}) {
    const { header } = BULLMQ_FLOW_SCRIPTS[name];
    const keys = change.keys ?? header.keys.map((key) => (key === 'parent' ? 'parent key' : `'${key}'`));
    const argv = change.argv ?? [...header.argv];
    const packed = change.packed ?? (name === 'addParentJob' ? ['key prefix,', 'custom id', 'name', 'timestamp', 'parentKey?'] : []);
    const output = change.output ?? [...header.output];
    const lines = ['--[[', `  ${name}, synthetic`, '    Input:'];
    keys.forEach((key, i) => lines.push(`      KEYS[${i + 1}] ${key}`));
    argv.forEach((arg, i) => {
      lines.push(`      ARGV[${i + 1}] ${arg}`);
      if (i === 0) packed.forEach((entry, j) => lines.push(`            [${j + 1}]  ${entry}`));
    });
    if (output.length > 0) lines.push('    Output:', ...output.map((line) => `      ${line} - synthetic`));
    lines.push(']]', 'return 1');
    return { name, keys: keys.length, content: lines.join('\n') };
  }

  it('flowScriptProblem refuses a flow script with another key count, other KEYS, other ARGV, another output, another packed layout, no header', function () {
    for (const name of FLOW_SCRIPTS) expect(flowScriptProblem(name, synthetic(name)), `synthetic ${name}, as pinned`).to.equal(null);
    expect(flowScriptProblem('addParentJob', undefined)).to.equal('script addParentJob is missing');
    expect(
      flowScriptProblem('releaseParentIfNoPendingDependencies', { ...synthetic('releaseParentIfNoPendingDependencies'), keys: 3 }),
    ).to.equal('script releaseParentIfNoPendingDependencies takes 3 keys, expected 2');
    const swapped = synthetic('addParentJob', {
      keys: ["'meta'", "'id'", "'waiting-children'", "'delayed'", "'completed'", 'events stream key'],
    });
    expect(flowScriptProblem('addParentJob', swapped)).to.contain('addParentJob takes KEYS meta, id, waiting-children, delayed');
    const reargued = synthetic('releaseParentIfNoPendingDependencies', { argv: ['parent queue key', 'timestamp', 'parent id'] });
    expect(flowScriptProblem('releaseParentIfNoPendingDependencies', reargued)).to.contain(
      'takes ARGV parent queue key; timestamp; parent id',
    );
    const data = synthetic('addParentJob', { argv: ['msgpacked arguments array', 'msgpacked options', 'json stringified job data'] });
    expect(flowScriptProblem('addParentJob', data)).to.contain('addParentJob takes ARGV');
    expect(flowScriptProblem('addParentJob', synthetic('addParentJob', { output: ['jobId', '-7'] }))).to.contain(
      'addParentJob returns jobid, -7',
    );
    // unique-flow reads each node's key prefix, custom id and parent key from ARGV[1], addParentJob's too.
    const relaid = synthetic('addParentJob', { packed: ['key prefix,', 'custom id', 'name', 'timestamp', 'parent dependencies key'] });
    expect(flowScriptProblem('addParentJob', relaid), `addParentJob's ARGV[1][5] is read as the parent key (unique-flow)`).to.contain(
      'position 5 of ARGV[1]',
    );
    expect(flowScriptProblem('addParentJob', { ...synthetic('addParentJob'), content: 'return 1' })).to.contain('has no header');
    const without = { ...bullmq.scripts, releaseParentIfNoPendingDependencies: undefined };
    expect(loadFlowScripts({ version: '6.99.0', scripts: without }).problem).to.equal(
      'bullmq 6.99.0: script releaseParentIfNoPendingDependencies is missing',
    );
    const complete = { ...bullmq.scripts, releaseParentIfNoPendingDependencies: synthetic('releaseParentIfNoPendingDependencies') };
    expect(loadFlowScripts({ version: '6.99.0', scripts: complete }).problem).to.equal(null);
  });

  it("BullMQ's FlowProducer writes parentKey = <prefix>:<queue>:<id> and parent = {id, queueKey} on a child, and the child's job key in <parentKey>:dependencies", async function () {
    const producer = new FlowProducer({ connection: ctx.redis, prefix: ctx.prefix });
    ctx.closeLater(producer);
    const tree = await producer.add({ name: 'parent', queueName: 'p', children: [{ name: 'child', queueName: 'c', data: { n: 1 } }] });
    const parentKey = `${ctx.prefix}:p:${tree.job.id}`;
    const childKey = `${ctx.prefix}:c:${tree.children![0]!.job.id}`;
    const [storedParentKey, parent] = await ctx.redis.hmget(childKey, 'parentKey', 'parent');
    expect(storedParentKey, `a child's parentKey field (includes/ojs-detach-child.lua, unique-flow's checks; ${HOST})`).to.equal(parentKey);
    expect(
      JSON.parse(parent ?? 'null'),
      `a child's parent field, JSON {id, queueKey} (includes/ojs-detach-child.lua; ${HOST})`,
    ).to.deep.equal({
      id: tree.job.id,
      queueKey: `${ctx.prefix}:p`,
    });
    expect(
      await ctx.redis.smembers(`${parentKey}:dependencies`),
      `<parentKey>:dependencies is the set of pending children's job keys (ojsDetachChild SREMs the child's; ${HOST})`,
    ).to.deep.equal([childKey]);
    expect(
      await ctx.redis.zscore(`${ctx.prefix}:p:waiting-children`, tree.job.id!),
      'a parent with a pending child waits in waiting-children',
    ).to.not.equal(null);
  });

  it("encodeNode encodes each node of a flow as BullMQ's FlowProducer sends it: the script (addParentJob for a parent) and its KEYS and ARGV", async function () {
    const client = ctx.connect();
    // BullMQ's scripts by their SHA (ioredis sends a defined command as EVALSHA of its Lua).
    const scriptOf = new Map(
      Object.values(bullmq.scripts)
        .filter((script): script is ShippedScript => script !== undefined)
        .map((script) => [createHash('sha1').update(script.content).digest('hex'), script.name]),
    );
    const sent: { script: string; keys: string[]; argv: unknown[] }[] = [];
    // The FlowProducer's MULTI on this test's own client, its scripts recorded as they are queued.
    const multi = client.multi.bind(client);
    (client as unknown as { multi: typeof client.multi }).multi = ((...args: Parameters<typeof client.multi>) => {
      const pipeline = multi(...args);
      const queued = pipeline as unknown as { sendCommand(command: Command): unknown };
      const send = queued.sendCommand.bind(pipeline);
      queued.sendCommand = (command: Command) => {
        if (command.name === 'evalsha') {
          const [sha, count, ...rest] = command.args;
          const keys = Number(count);
          sent.push({
            script: scriptOf.get(String(sha)) ?? `unknown ${String(sha)}`,
            keys: rest.slice(0, keys).map(String),
            argv: rest.slice(keys),
          });
        }
        return send(command);
      };
      return pipeline;
    }) as typeof client.multi;
    const producer = new FlowProducer({ connection: client, prefix: ctx.prefix });
    ctx.closeLater(producer);
    const flow: FlowJob = {
      name: 'root',
      queueName: 'p',
      data: { r: 1 },
      opts: { attempts: 3 },
      children: [
        { name: 'standard', queueName: 'c', data: { s: 1 } },
        { name: 'delayed', queueName: 'c', opts: { delay: 60_000 } },
        { name: 'prioritized', queueName: 'c', opts: { priority: 3, jobId: 'custom' } },
        { name: 'middle', queueName: 'm', children: [{ name: 'grandchild', queueName: 'c' }] },
      ],
    };
    const tree = await producer.add(flow);
    const { unpack } = createRequire(`${bullmq.root}/package.json`)('msgpackr') as { unpack(buffer: Buffer): unknown };
    // BullMQ 6.7's flow add ends with its release of each parent, as unique-flow's step 3 calls it.
    const releases = sent.filter((entry) => entry.script === 'releaseParentIfNoPendingDependencies');
    sent.splice(0, sent.length, ...sent.filter((entry) => !releases.includes(entry)));
    const middleId = tree.children![3]!.job.id!;
    expect(
      releases.map((entry) => [...entry.keys, ...entry.argv.slice(0, 2).map(String)]).sort(),
      `releaseParentIfNoPendingDependencies: KEYS parent key, its dependencies key; ARGV parent queue key, parent id (unique-flow's parents; ${HOST})`,
    ).to.deep.equal(
      bullmq.scripts.releaseParentIfNoPendingDependencies
        ? [
            [`${ctx.prefix}:m:${middleId}`, `${ctx.prefix}:m:${middleId}:dependencies`, `${ctx.prefix}:m`, middleId],
            [`${ctx.prefix}:p:${tree.job.id}`, `${ctx.prefix}:p:${tree.job.id}:dependencies`, `${ctx.prefix}:p`, tree.job.id],
          ].sort()
        : [],
    );
    expect(
      sent.map((entry) => entry.script),
      "the scripts BullMQ's FlowProducer runs per node, parent before children (unique-flow's PLAIN kinds)",
    ).to.deep.equal(['addParentJob', 'addStandardJob', 'addDelayedJob', 'addPrioritizedJob', 'addParentJob', 'addStandardJob']);
    const nodes: { node: FlowJob; parent?: { id: string; queue: string } }[] = [];
    const walk = (node: FlowJob, parent?: { id: string; queue: string }, id?: string): void => {
      nodes.push(parent ? { node, parent } : { node });
      const self = { id: id ?? '', queue: `${ctx.prefix}:${node.queueName}` };
      node.children?.forEach((child) => walk(child, self));
    };
    walk(flow);
    const ids = new Map<string, string>();
    for (const entry of sent) {
      const args = unpack(entry.argv[0] as Buffer) as unknown[];
      ids.set(String(args[2]), String(args[1]));
    }
    expect(ids.get('root')).to.equal(tree.job.id);
    for (const [i, entry] of sent.entries()) {
      const { node } = nodes[i]!;
      const args = unpack(entry.argv[0] as Buffer) as unknown[];
      const jobId = String(args[1]);
      const parentName = i === 0 ? undefined : node.name === 'grandchild' ? 'middle' : 'root';
      const parent = parentName ? { id: ids.get(parentName)!, queue: `${ctx.prefix}:${parentName === 'root' ? 'p' : 'm'}` } : undefined;
      const parentKey = parent ? `${parent.queue}:${parent.id}` : undefined;
      expect(
        [args[4] ?? null, args[5] ?? null, args[6] ?? null],
        `${node.name}: ARGV[1] positions 5-7 are the parent key, its dependencies key and {id, queueKey} (${HOST})`,
      ).to.deep.equal(
        parentKey ? [parentKey, `${parentKey}:dependencies`, { id: parent!.id, queueKey: parent!.queue }] : [null, null, null],
      );
      // The node as with-unique-flows.ts plans a plain node: BullMQ's Job, its own link to the parent.
      const queue = ctx.queue(node.queueName);
      const internals = internalsOf(queue);
      const job = new Job(queue, node.name, node.data ?? {}, { ...node.opts, parent }, jobId);
      job.timestamp = Number(args[3]);
      const hasChildren = (node.children ?? []).length > 0;
      const encoded = await encodeNode(internals, job.asJSON(), jobId, {
        parentKey,
        parentDependenciesKey: parentKey ? `${parentKey}:dependencies` : '',
        addToWaitingChildren: hasChildren,
        deferParentRelease: true,
      });
      expect(encoded.script, `${node.name}: the script encodeNode names is the one BullMQ's FlowProducer runs`).to.equal(entry.script);
      expect(encoded.argv, `${node.name}: encodeNode's ARGV are byte for byte what BullMQ's FlowProducer sends (${HOST})`).to.deep.equal(
        entry.argv,
      );
      const nameOf = new Map(Object.entries(internals.keys).map(([name, key]) => [key, name]));
      const expectedKeys =
        entry.script === 'addParentJob' ? BULLMQ_FLOW_SCRIPTS.addParentJob.queue : BULLMQ_ADD_SCRIPTS[entry.script as BullMQAddScript];
      expect(
        entry.keys.map((key) => nameOf.get(key)),
        `${node.name}: BullMQ passes ${entry.script} these KEYS; unique-flow splices them by BULLMQ_FLOW_SCRIPTS / BULLMQ_ADD_SCRIPTS (${HOST})`,
      ).to.deep.equal([...expectedKeys]);
    }
  });
});

describe('bullmq host contract: facts the Lua scripts use (BULLMQ_LUA)', function () {
  this.timeout(20_000);
  const ctx = useRedisPrefix('bullmq-host-contract.test.ts');

  it('a job without a custom id gets GET <queue>:id + 1 (the replace path names it before inserting)', async function () {
    const queue = ctx.queue('ids');
    await queue.add('a', {});
    const before = Number(await ctx.redis.get(`${ctx.prefix}:ids:id`));
    const job = await queue.add('b', {});
    expect(job.id, `BullMQ's counter ids are no longer INCR of the id key: bullmqNextCounterId in ${HOST}`).to.equal(String(before + 1));
  });

  it("a delayed job's score is its due time in ms × 4096 plus a sequence", async function () {
    const queue = ctx.queue('delays');
    const job = await queue.add('a', {}, { delay: 60_000 });
    const score = Number(await ctx.redis.zscore(`${ctx.prefix}:delays:delayed`, job.id!));
    expect(Math.floor(score / 4096), `the delayed ZSET's score encoding changed: bullmqDelayedDueMs in ${HOST}`).to.equal(
      job.timestamp + 60_000,
    );
  });

  it('events streams are bounded by opts.maxLenEvents in the meta hash, 10,000 when unset', async function () {
    const bounded = ctx.queue('bounded', { streams: { events: { maxLen: 123 } } });
    await bounded.add('a', {});
    expect(await ctx.redis.hget(`${ctx.prefix}:bounded:meta`, 'opts.maxLenEvents'), `bullmqMaxEvents in ${HOST}`).to.equal('123');
    const unbounded = ctx.queue('unbounded', { skipMetasUpdate: true });
    await unbounded.add('a', {});
    expect(
      await ctx.redis.hget(`${ctx.prefix}:unbounded:meta`, 'opts.maxLenEvents'),
      `BullMQ's default bound: bullmqMaxEvents in ${HOST}`,
    ).to.equal('10000');
  });

  it('BullMQ writes deduplicated and removed events with the fields the adapter writes them with', async function () {
    const queue = ctx.queue('events');
    const first = await queue.add('a', {}, { deduplication: { id: 'd' } });
    await queue.add('a', {}, { deduplication: { id: 'd' }, jobId: 'incoming' });
    await first.remove();
    const entries = (await ctx.redis.xrange(`${ctx.prefix}:events:events`, '-', '+')).map(([, fields]) => fields);
    const event = (name: string) => entries.find((fields) => fields[1] === name);
    const fieldNames = (fields: string[] | undefined) => fields?.filter((_, i) => i % 2 === 0);
    expect(fieldNames(event('deduplicated')), `bullmqEmitDeduplicated in ${HOST}`).to.deep.equal([
      'event',
      'jobId',
      'deduplicationId',
      'deduplicatedJobId',
    ]);
    expect(fieldNames(event('removed'))?.slice(0, 3), `bullmqEmitRemoved in ${HOST}`).to.deep.equal(['event', 'jobId', 'prev']);
  });

  it("an active job's lock is <job key>:lock, its logs <job key>:logs, attempts made the hash field atm", async function () {
    const queue = ctx.queue('work');
    const job = await queue.add('a', {}, { attempts: 2, backoff: { type: 'fixed', delay: 60_000 } });
    const jobKey = `${ctx.prefix}:work:${job.id}`;
    const seen: number[] = [];
    const worker = new Worker(
      'work',
      async (running) => {
        seen.push(await ctx.redis.exists(`${jobKey}:lock`));
        await running.log('line');
        throw new Error('fail once');
      },
      { connection: ctx.connect(), prefix: ctx.prefix },
    );
    ctx.closeLater(worker);
    await new Promise<void>((resolve) => worker.once('failed', () => resolve()));
    expect(seen, `BULLMQ_LOCK_SUFFIX in ${HOST}`).to.deep.equal([1]);
    expect(await ctx.redis.exists(`${jobKey}:logs`), `bullmqDeleteJobSubkeys in ${HOST}`).to.equal(1);
    expect(await ctx.redis.hget(jobKey, 'atm'), `BULLMQ_ATTEMPTS_MADE in ${HOST}`).to.equal('1');
  });

  it('finishedOn is on a job hash exactly while the job is finished: set on completing and failing for good, deleted by a retry', async function () {
    const queue = ctx.queue('finish');
    const done = await queue.add('ok', {});
    const failed = await queue.add('bad', {});
    const worker = new Worker(
      'finish',
      async (job) => {
        if (job.name === 'bad') throw new Error('fails');
        return 'done';
      },
      { connection: ctx.connect(), prefix: ctx.prefix },
    );
    ctx.closeLater(worker);
    while ((await queue.getCompletedCount()) < 1 || (await queue.getFailedCount()) < 1)
      await new Promise((resolve) => setTimeout(resolve, 20));
    await worker.close();
    const finishedOn = (id: string) => ctx.redis.hexists(`${ctx.prefix}:finish:${id}`, 'finishedOn');
    expect(await finishedOn(done.id!), `BULLMQ_FINISHED_ON (completed) in ${HOST}`).to.equal(1);
    expect(await finishedOn(failed.id!), `BULLMQ_FINISHED_ON (failed) in ${HOST}`).to.equal(1);
    await (await queue.getJob(failed.id!))!.retry('failed');
    expect(await finishedOn(failed.id!), `BULLMQ_FINISHED_ON (retried) in ${HOST}`).to.equal(0);
    const waiting = await queue.add('later', {});
    expect(await finishedOn(waiting.id!), `BULLMQ_FINISHED_ON (waiting) in ${HOST}`).to.equal(0);
    await queue.retryJobs({ state: 'completed' });
    expect(await finishedOn(done.id!), `BULLMQ_FINISHED_ON (completed, retried) in ${HOST}`).to.equal(0);
  });

  it('BullMQ deletes <queue>:de:<deid> naming a job when that job completes, fails for good or is removed, and keeps it while the job waits for a retry (the native path)', async function () {
    const queue = ctx.queue('dedup');
    const dedupKey = (id: string) => `${ctx.prefix}:dedup:de:${id}`;
    // Set as the native path sets them (lua/includes/ojs-native-add.lua): the key names the job, `deid` on its hash.
    const adopt = async (job: { id?: string }, id: string) => {
      await ctx.redis.hset(`${ctx.prefix}:dedup:${job.id}`, 'deid', id);
      await ctx.redis.set(dedupKey(id), job.id!);
    };
    const ok = await queue.add('ok', {});
    const bad = await queue.add('bad', {});
    const retried = await queue.add('retry', {}, { attempts: 2, backoff: { type: 'fixed', delay: 60_000 } });
    const removed = await queue.add('removed', {}, { delay: 60_000 });
    await adopt(ok, 'ok');
    await adopt(bad, 'bad');
    await adopt(retried, 'retry');
    await adopt(removed, 'removed');
    const worker = new Worker(
      'dedup',
      async (job) => {
        if (job.name !== 'ok') throw new Error('fails');
      },
      { connection: ctx.connect(), prefix: ctx.prefix },
    );
    ctx.closeLater(worker);
    while ((await queue.getCompletedCount()) < 1 || (await queue.getFailedCount()) < 1 || (await queue.getDelayedCount()) < 2)
      await new Promise((resolve) => setTimeout(resolve, 20));
    await worker.close();
    await removed.remove();
    const where = `the native path (lua/includes/ojs-native-add.lua, ${HOST}) relies on BullMQ's cleanup of its deduplication key`;
    expect(await ctx.redis.exists(dedupKey('ok')), `completed: ${where}`).to.equal(0);
    expect(await ctx.redis.exists(dedupKey('bad')), `failed for good: ${where}`).to.equal(0);
    expect(await ctx.redis.get(dedupKey('retry')), `waiting for a retry: ${where}`).to.equal(retried.id);
    expect(await ctx.redis.exists(dedupKey('removed')), `removed: ${where}`).to.equal(0);
  });

  it("storeJob's HMSET of the job hash ends with unpack(optionalValues) in every add script, where the native path's OJS fields ride (BULLMQ_STORE_JOB_HMSET); without it the fields are HSET after", async function () {
    const where = `the native path writes its fields in BullMQ's HMSET through this hook (bullmq-script-set.ts, ${HOST}); without it, one HSET more per insert`;
    for (const name of ADD_SCRIPTS) expect(storeJobHookProblem(name, bullmq.scripts[name]), where).to.equal(null);
    expect(composedScripts()[0]!.lua).to.contain('local BULLMQ_STORES_OJS_FIELDS = true');
    const scripts = bullmq.scripts as Record<BullMQAddScript, ShippedScript>;
    const changed = scripts.addDelayedJob.content.replace('unpack(optionalValues))', 'unpack(optionalValues, 1))');
    const unhooked = { ...bullmq, scripts: { ...bullmq.scripts, addDelayedJob: { ...scripts.addDelayedJob, content: changed } } };
    expect(storeJobHookProblem('addDelayedJob', unhooked.scripts.addDelayedJob)).to.contain('has 0 storeJob HMSETs');
    const fallback = composeScripts(unhooked)[0]!;
    expect(fallback.lua).to.contain('local BULLMQ_STORES_OJS_FIELDS = false').and.not.contain('ojsUnpackWith(optionalValues');
    // Both write the same job hash: the native path's fields beside BullMQ's.
    const hashes: Record<string, string>[] = [];
    const active = composedScripts();
    const hooked = active[0]!;
    try {
      for (const [name, script] of [
        ['hooked', hooked],
        ['fallback', fallback],
      ] as const) {
        active[0] = script;
        const queue = withUniqueness(ctx.queue(name));
        const job = await queue.add(
          'job',
          { n: 1 },
          { delay: name === 'hooked' ? 0 : 60_000, unique: { keys: ['type', 'queue', 'args'] } },
        );
        hashes.push(await ctx.redis.hgetall(`${ctx.prefix}:${name}:${job.id}`));
      }
    } finally {
      active[0] = hooked;
      // The fallback's function library is this test's own: the run's clean-up knows only the default one.
      if (fallback.library) await ctx.redis.call('FUNCTION', 'DELETE', fallback.library.name).catch(() => undefined);
    }
    for (const hash of hashes) {
      expect(Object.keys(hash)).to.include.members(['name', 'data', 'opts', 'timestamp', 'ojsKey', 'ojsPolicy', 'ojsReq', 'deid']);
      expect(hash.deid).to.equal(hash.ojsKey!.slice(0, 32));
    }
    expect(Object.keys(hashes[0]!).sort()).to.deep.equal(Object.keys(hashes[1]!).sort());
  });

  it("keepLastIfActive (x_successor's planned native path): a duplicate of the active holder is stored in <queue>:dn:<id> under the add's own id, the latest overwriting; BullMQ adds it when the holder completes or fails for good, and stores nothing for a duplicate of a waiting job", async function () {
    const queue = ctx.queue('keeplast');
    const where = `docs/design/successor.md (the native path of x_successor) relies on BullMQ's keepLastIfActive`;
    const dn = (id: string) => `${ctx.prefix}:keeplast:dn:${id}`;
    const dedup = (id: string) => ({ deduplication: { id, keepLastIfActive: true } });
    const gates = new Map<string, () => void>();
    const worker = new Worker(
      'keeplast',
      async (job) => {
        await new Promise<void>((resolve) => gates.set(job.id!, resolve));
        if (job.data.fail) throw new Error('fails for good');
      },
      { connection: ctx.connect(), prefix: ctx.prefix, concurrency: 4 },
    );
    ctx.closeLater(worker);
    const running = async (id: string) => {
      while (!gates.has(id)) await new Promise((resolve) => setTimeout(resolve, 20));
    };
    for (const [name, fail] of [
      ['completes', false],
      ['fails', true],
    ] as const) {
      const holder = await queue.add(name, { v: 1, fail }, dedup(name));
      await running(holder.id!);
      const second = await queue.add(name, { v: 2 }, { ...dedup(name), jobId: `${name}-2` });
      const third = await queue.add(name, { v: 3 }, { ...dedup(name), jobId: `${name}-3` });
      expect([second.id, third.id], `the add answers the active holder: ${where}`).to.deep.equal([holder.id, holder.id]);
      expect(await ctx.redis.hmget(dn(name), 'jid', 'data'), `${name}: the latest duplicate, under its own id: ${where}`).to.deep.equal([
        `${name}-3`,
        JSON.stringify({ v: 3 }),
      ]);
      gates.get(holder.id!)!();
      await running(`${name}-3`);
      expect(await ctx.redis.exists(dn(name)), `${name}: consumed: ${where}`).to.equal(0);
      expect((await queue.getJob(`${name}-3`))?.data, `${name}: added with the latest data: ${where}`).to.deep.equal({ v: 3 });
      expect(await queue.getJob(`${name}-2`), `${name}: an overwritten duplicate never becomes a job: ${where}`).to.equal(undefined);
      expect(await ctx.redis.get(`${ctx.prefix}:keeplast:de:${name}`), `${name}: the successor holds the key: ${where}`).to.equal(
        `${name}-3`,
      );
      gates.get(`${name}-3`)!();
    }
    await worker.close();
    const waiting = await queue.add('waits', {}, dedup('waits'));
    expect((await queue.add('waits', { v: 2 }, dedup('waits'))).id, where).to.equal(waiting.id);
    expect(await ctx.redis.exists(dn('waits')), `a duplicate of a waiting job is dropped: ${where}`).to.equal(0);
  });

  it("x_successor's general path: a `dn:<deid>` hash written by another script, for a holder whose `deid` was set on its hash, is added by BullMQ's finish (completed or failed for good, not a retry) with its `opts` as stored (unknown members kept), `deid` and the deduplication key from opts.de, `timestamp` the finish; dropped by BullMQ's removal of a holder its key names; before removeOnComplete", async function () {
    const queue = ctx.queue('successor');
    const base = `${ctx.prefix}:successor:`;
    const where = `x_successor's general path (lua/includes/ojs-successor.lua, ${HOST}) relies on BullMQ's promotion of a stored next job`;
    const worker = new Worker('successor', null, { connection: ctx.connect(), prefix: ctx.prefix, autorun: false });
    ctx.closeLater(worker);
    /** The holder taken by the worker, with a next job stored for it the way ojsSuccessorKeep stores one. */
    const holding = async (name: string, opts: object = {}) => {
      const holder = await queue.add(name, { v: 1 }, opts);
      const token = randomUUID();
      const taken = await worker.getNextJob(token, { block: false });
      expect(taken?.id).to.equal(holder.id);
      const deid = `ojs:s:${holder.id}`;
      await ctx.redis.hset(`${base}${holder.id}`, 'deid', deid);
      await ctx.redis.set(`${base}de:${deid}`, holder.id!);
      const opts2 = { attempts: 1, priority: 4, de: { id: deid, keepLastIfActive: true }, ojs: { key: 'k', bits: 0 } };
      await ctx.redis.hset(
        `${base}dn:${deid}`,
        'name',
        name,
        'data',
        JSON.stringify({ v: 2 }),
        'opts',
        JSON.stringify(opts2),
        'jid',
        `${name}-next`,
      );
      return { job: taken!, token, deid };
    };
    const completes = await holding('completes');
    await completes.job.moveToCompleted('done', completes.token, false);
    const promoted = await ctx.redis.hgetall(`${base}completes-next`);
    expect(promoted, `completed: ${where}`).to.include({
      name: 'completes',
      data: JSON.stringify({ v: 2 }),
      deid: completes.deid,
      priority: '4',
    });
    expect(JSON.parse(promoted.opts!), `the stored opts, unknown members kept: ${where}`).to.deep.include({ ojs: { key: 'k', bits: 0 } });
    expect(Number(promoted.timestamp), `created at the finish: ${where}`).to.be.at.least(
      Number(await ctx.redis.hget(`${base}${completes.job.id}`, 'finishedOn')),
    );
    expect(await ctx.redis.get(`${base}de:${completes.deid}`), `the key names the promoted job: ${where}`).to.equal('completes-next');
    expect(await ctx.redis.zscore(`${base}prioritized`, 'completes-next'), where).to.not.equal(null);
    await ctx.redis.del(`${base}prioritized`, `${base}completes-next`, `${base}de:${completes.deid}`);

    const retried = await holding('retried', { attempts: 2 });
    await retried.job.moveToFailed(new Error('once'), retried.token, false);
    expect(await ctx.redis.exists(`${base}retried-next`), `not on a retry: ${where}`).to.equal(0);
    expect(await ctx.redis.exists(`${base}dn:${retried.deid}`), `kept for the retry: ${where}`).to.equal(1);
    await ctx.redis.del(
      `${base}${retried.job.id}`,
      `${base}dn:${retried.deid}`,
      `${base}de:${retried.deid}`,
      `${base}delayed`,
      `${base}wait`,
    );

    const fails = await holding('fails');
    await fails.job.moveToFailed(new Error('for good'), fails.token, false);
    expect(await ctx.redis.hget(`${base}fails-next`, 'data'), `failed for good: ${where}`).to.equal(JSON.stringify({ v: 2 }));
    await ctx.redis.del(`${base}prioritized`, `${base}fails-next`, `${base}de:${fails.deid}`);

    const kept = await holding('kept', { removeOnComplete: true });
    await kept.job.moveToCompleted('done', kept.token, false);
    expect(await ctx.redis.exists(`${base}${kept.job.id}`), 'removed by its removeOnComplete').to.equal(0);
    expect(await ctx.redis.exists(`${base}kept-next`), `promoted before removeOnComplete: ${where}`).to.equal(1);
    await ctx.redis.del(`${base}prioritized`, `${base}kept-next`, `${base}de:${kept.deid}`);

    const removed = await holding('removed');
    await ctx.redis.del(`${base}${removed.job.id}:lock`);
    await removed.job.remove();
    expect(await ctx.redis.exists(`${base}dn:${removed.deid}`), `dropped with the holder its key names: ${where}`).to.equal(0);
  });

  it("the queue's keys are <prefix>:<queue>:<name> for every state key the scripts read", function () {
    const queue = ctx.queue('layout');
    const { keys } = internalsOf(queue);
    for (const name of [
      'wait',
      'paused',
      'active',
      'prioritized',
      'delayed',
      'completed',
      'failed',
      'waiting-children',
      'id',
      'meta',
      'events',
      'marker',
      'pc',
    ]) {
      expect(keys[name], `queue.keys.${name}: the Lua state lookups (includes/ojs-job-state.lua) build it as base .. "${name}"`).to.equal(
        `${ctx.prefix}:layout:${name}`,
      );
    }
  });
});

describe('bullmq host contract: Queue and Job members outside the public API', function () {
  const ctx = useRedisPrefix('bullmq-host-contract.test.ts');

  it('queue: keys, jobsOpts, Job, qualifiedName, opts, backend.client (ioredis), metaValues and setQueueMeta', async function () {
    const queue = ctx.queue('members', { defaultJobOptions: { attempts: 4 }, skipMetasUpdate: true });
    const internals = internalsOf(queue);
    expect(internals.jobsOpts, 'queue.jobsOpts (defaultJobOptions merged into unique adds)').to.deep.equal({ attempts: 4 });
    expect(internals.Job, 'queue.Job').to.equal(Job);
    expect(internals.qualifiedName, 'queue.qualifiedName (rootPrefixOf)').to.equal(`${ctx.prefix}:members`);
    expect(internals.opts.connection, 'queue.opts.connection (checkConnection)').to.equal(ctx.redis);
    expect(await queueClient(queue), 'queue.backend.client').to.have.property('sendCommand');
    expect(await ctx.redis.exists(`${ctx.prefix}:members:meta`)).to.equal(0);
    await writeQueueMeta(queue);
    expect(await ctx.redis.hgetall(`${ctx.prefix}:members:meta`), 'queue.metaValues / backend.setQueueMeta').to.include({
      version: `bullmq:${bullmq.version}`,
    });
  });

  it("Job#validateOptions (private) refuses what queue.add refuses; BullMQ's priority limit is BULLMQ_MAX_PRIORITY", function () {
    const queue = ctx.queue('validate');
    const job = (opts: object) => new Job(queue, 'a', {}, opts);
    expect(() => validateJobOptions(job({ priority: BULLMQ_MAX_PRIORITY }))).not.to.throw();
    expect(() => validateJobOptions(job({ priority: BULLMQ_MAX_PRIORITY + 1 })), `BULLMQ_MAX_PRIORITY in ${HOST}`).to.throw(/[Pp]riority/);
    expect(() => validateJobOptions(job({ jobId: '12' }))).to.throw(/integer/);
  });

  it("every option Job#validateOptions refuses is refused by withUniqueness's own checks, so a duplicate probe may skip BullMQ's Job", async function () {
    // bullmq-enqueue.ts (bullmqOptionsChecked): a probe is sent before BullMQ's Job is built.
    const queue = ctx.queue('validate-mirror');
    const unique = withUniqueness(queue);
    const policy = { keys: ['type', 'args'] } as const;
    await unique.add('a', { x: 1 }, { unique: policy });
    const refusedByBullMQ: object[] = [
      { jobId: '12' },
      { jobId: 'a:b' },
      { priority: 1.5 },
      { priority: BULLMQ_MAX_PRIORITY + 1 },
      { sizeLimit: 2 },
      { failParentOnFailure: true, removeDependencyOnFailure: true },
      { deduplication: {} },
      { debounce: undefined },
      { debounce: { id: 'd' } },
      { backoff: { type: 'fixed', delay: 1, jitter: 2 } },
      { backoff: { type: 'fixed', delay: 1, jitter: -1 } },
    ];
    for (const opts of refusedByBullMQ) {
      const label = JSON.stringify(opts) ?? String(opts);
      expect(() => validateJobOptions(new Job(queue, 'a', { x: 1 }, opts, (opts as { jobId?: string }).jobId)), label).to.throw();
      const error = await unique.add('a', { x: 1 }, { ...opts, unique: policy }).then(
        () => null,
        (failure: unknown) => failure,
      );
      expect(error, `${label}: refused before the probe, as BullMQ's check in ${HOST} refuses it`).to.be.instanceOf(InvalidJobInputError);
    }
  });

  it('a job rebuilt from its hash (jobFromHash) is the job Job.fromId reads', async function () {
    const queue = ctx.queue('hash');
    const added = await queue.add('a', { x: [1] }, { attempts: 3, delay: 1000, priority: 2, jobId: 'j1' });
    const hash = await ctx.redis.hgetall(`${ctx.prefix}:hash:j1`);
    const read = (await Job.fromId(queue, 'j1'))!;
    const rebuilt = jobFromHash(queue, 'j1', hash);
    for (const field of ['id', 'name', 'data', 'opts', 'delay', 'priority', 'timestamp', 'attemptsMade', 'attemptsStarted'] as const) {
      expect(rebuilt[field], `Job.${field} from the hash: jobFromHash in ${HOST}`).to.deep.equal(read[field]);
    }
    expect(rebuilt.timestamp).to.equal(added.timestamp);
  });
});

describe('bullmq host contract: ioredis only', function () {
  const ctx = useRedisPrefix('bullmq-host-contract.test.ts');
  // What BullMQ takes for a node-redis client (sendCommand, isOpen, no defineCommand).
  const nodeRedisLike: Record<string, unknown> = {
    connect: async () => {},
    disconnect: async () => {},
    quit: async () => {},
    duplicate: () => nodeRedisLike,
    sendCommand: async () => null,
    isOpen: false,
    isReady: false,
    options: {},
  };
  for (const name of ['on', 'off', 'once', 'removeListener']) nodeRedisLike[name] = () => nodeRedisLike;

  it('a client that is not ioredis (node-redis, Bun, Valkey GLIDE) is refused with a BackendError that says so; options pass', function () {
    const queue = new Queue('node-redis', { connection: nodeRedisLike as never });
    queue.on('error', () => {});
    for (const run of [
      () => checkConnection(nodeRedisLike, 'the queue'),
      () => withUniqueness(queue),
      () => createBullMQBackend({ connection: nodeRedisLike as never }),
    ]) {
      try {
        run();
        expect.fail('expected a refusal');
      } catch (error) {
        expect(error).to.be.instanceOf(BackendError);
        expect((error as BackendError).written).to.equal(false);
        expect((error as Error).message).to.match(/not an ioredis client/);
      }
    }
    expect(() => checkConnection({ host: '127.0.0.1', port: 6379 }, 'the queue')).not.to.throw();
    expect(() => checkConnection(ctx.redis, 'the queue')).not.to.throw();
  });

  it("unique adds leave the caller's ioredis client as it was: no command defined, nothing replaced", async function () {
    const client = ctx.connect();
    const queue = withUniqueness(new Queue('untouched', { connection: client, prefix: ctx.prefix }));
    ctx.closeLater(queue);
    const backend = createBullMQBackend({ connection: client, prefix: ctx.prefix });
    ctx.closeLater(backend);
    // BullMQ's own first use of the client (it defines its commands on it): before the snapshot.
    await queue.add('plain', {});
    await backend.enqueue({ type: 'plain', args: [] });
    const state = () => ({
      own: Object.getOwnPropertyNames(client)
        .sort()
        .map((name) => [name, (client as unknown as Record<string, unknown>)[name]]),
      scripts: Object.keys((client as unknown as { scriptsSet: object }).scriptsSet).sort(),
      prototype: Object.getOwnPropertyNames(Redis.prototype).map((name) => [
        name,
        Object.getOwnPropertyDescriptor(Redis.prototype, name)?.value,
      ]),
    });
    const before = state();
    await queue.add('a', { n: 1 }, { unique: {} });
    await queue.addBulk([{ name: 'a', data: { n: 2 }, opts: { unique: {} } }]);
    await backend.enqueue({ type: 'b', args: [1], unique: {} });
    await backend.getJob('none');
    const after = state();
    expect(after.scripts, 'commands defined on the client').to.deep.equal(before.scripts);
    expect(
      after.own.map(([name]) => name),
      'own properties of the client',
    ).to.deep.equal(before.own.map(([name]) => name));
    for (const [i, [name, value]] of after.own.entries())
      if (typeof value === 'function') expect(value, `client.${name as string}`).to.equal(before.own[i]![1]);
    expect(after.prototype, 'Redis.prototype').to.deep.equal(before.prototype);
  });

  it("the adapter's encoding writes the bytes ioredis writes", function () {
    const cases: unknown[][] = [
      ['sha', 2, 'k1', 'k2', 'a'],
      ['sha', 13, Buffer.from([0x92, 0xc0, 0xff]), '{"user_id":1}', Buffer.from([0xde, 0, 1]), 'é 漢字 🙂', ''],
      [Buffer.from([1, 2, 3]), Buffer.alloc(0), 'x', 604800000, Buffer.from('tail')],
      ['sha', 3, 'ascii', 'ünïcödé', 'a\ud800b', '🙂🙂', 'z'],
      ['sha', 1, Buffer.from([1]), 'ascii', 'ß', Buffer.from([2]), 'only ascii', 7],
      [Buffer.from('x'), 'é'],
      [],
    ];
    for (const args of cases) {
      const command = new Command('evalsha', args as never);
      const expected = command.toWritable({});
      const written = encodeCommand('evalsha', command.args);
      expect(Buffer.isBuffer(written) ? written : Buffer.from(written)).to.deep.equal(
        Buffer.isBuffer(expected) ? expected : Buffer.from(expected),
      );
      // With runs of string arguments encoded beforehand (a queue's keys, a policy's arguments):
      // the same bytes, for every run and every pair of runs apart from each other.
      const runs: [number, number][] = [];
      for (let from = 0; from < args.length; from++)
        for (
          let to = from + 1;
          to <= args.length && !args.slice(from, to).some((arg) => typeof arg !== 'string' && typeof arg !== 'number');
          to++
        )
          runs.push([from, to]);
      const choices = [...runs.map((run) => [run]), ...runs.flatMap((a) => runs.filter((b) => b[0] >= a[1]).map((b) => [a, b]))];
      for (const choice of choices) {
        const segments = choice.map(([from, to]) => encodedArguments(from, args.slice(from, to) as (string | number)[]));
        const withEncoded = encodeCommand('evalsha', command.args, segments);
        expect(Buffer.isBuffer(withEncoded) ? withEncoded : Buffer.from(withEncoded), JSON.stringify(choice)).to.deep.equal(
          Buffer.isBuffer(expected) ? expected : Buffer.from(expected),
        );
      }
    }
  });

  it('run as scripts (Redis < 7, functions refused), a script runs as EVAL on a connection that has not loaded it, EVALSHA after, and once more as EVAL after NOSCRIPT', async function () {
    // A script no server has seen (never SCRIPT FLUSH on the shared Redis): marking the connection
    // as loaded makes the first command an EVALSHA that meets NOSCRIPT.
    const script = new OjsScript('test', 1, `return { KEYS[1], ARGV[1], '${randomUUID()}' }`);
    const client = ctx.connect();
    setScriptMode(client, 'scripts');
    await client.ping();
    const socket = (client as unknown as { stream: object }).stream;
    script.markLoaded(socket);
    expect(((await script.run(client, ['k', 'a'])) as string[]).slice(0, 2)).to.deep.equal(['k', 'a']);
    expect(script.loadedOn(socket)).to.equal(true);
    const pipeline = client.pipeline();
    void script.run(pipeline as unknown as IoredisTarget, ['k2', 'b']);
    const [error, reply] = (await pipeline.exec())![0]!;
    expect(error).to.equal(null);
    expect((reply as string[]).slice(0, 2)).to.deep.equal(['k2', 'b']);
    // NOSCRIPT met in a pipeline: resent (as EVAL) on the pipeline's client; exec has its reply.
    const unseen = new OjsScript('test', 1, `return { KEYS[1], ARGV[1], '${randomUUID()}' }`);
    unseen.markLoaded(socket);
    const second = client.pipeline();
    void unseen.run(second as unknown as IoredisTarget, ['k3', 'c']);
    const [secondError, secondReply] = (await second.exec())![0]!;
    expect(secondError).to.equal(null);
    expect((secondReply as string[]).slice(0, 2)).to.deep.equal(['k3', 'c']);
    expect(unseen.loadedOn(socket)).to.equal(true);
  });
});
