/**
 * Property (fast-check, seeded, a fixed number of scenarios): on every backend and entry point,
 * each enqueue either gives the memory backend's outcome (created / deduplicated / replaced /
 * duplicate error naming the same existing job) or throws the typed input error
 * (`InvalidJobInputError`, `invalid_request`) naming the same fields as memory, and an error
 * writes nothing (keys under the target's prefix, rows in its schemas, before and after).
 *
 * The oracle is whatever memory answers, so the test holds whichever inputs the core refuses.
 * Each scenario (1–5 enqueues and cancels) runs on a fresh memory backend and on the target's
 * store, shared by all scenarios of the target; types and ids carry the scenario's tag, so
 * scenarios never meet each other's jobs. A scenario stops at its first divergence.
 *
 * On the hosts' entry points, a job without a policy (or with `unique: null`) is the host's own
 * add, which the library does not validate: such a job is compared only when memory accepts it.
 * Jobs an entry point cannot express (see test/conformance/entry-points/*) are counted, not run.
 *
 * Replay: OJS_PROPERTY_SEED=<seed> (default below); OJS_TEST_SALT keeps the store names.
 */
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import type pg from 'pg';
import type { EnqueueResult, JobInput, UniqueJobsBackend } from '../../src/index.js';
import { scheduledAtMs } from '../../src/internal.js';
import { createMemoryBackend } from '../../adapters/memory/index.js';
import type { BullMQBackend } from '../../adapters/bullmq/index.js';
import createBullMQSubject from '../conformance/subjects/bullmq.js';
import { createGraphileWorkerSubject } from '../conformance/subjects/graphile-worker.js';
import { escapeIdentifier } from '../../adapters/graphile-worker/graphile-worker-sql.js';
import {
  bullmqAddArguments,
  createBullMQEntrySubject,
  Inexpressible,
  type BullMQEntryPoint,
} from '../conformance/entry-points/bullmq-entry-points.js';
import {
  createGraphileEntrySubject,
  graphileAddArguments,
  HELPERS_DRIVER_TASK,
  toResult,
  type GraphileEntryPoint,
} from '../conformance/entry-points/graphile-worker-entry-points.js';
import { schemasFor, type TestSchemas } from '../adapters/graphile-worker-fixture.js';
import { RUN_SALT } from '../run-salt.js';
import { commandsArb, describeJob, tagged, type Command } from './enqueue-cases.js';
import { answerOf, settle, summary } from './property-answers.js';

const FILE = fileURLToPath(import.meta.url);
const SEED = Number(process.env.OJS_PROPERTY_SEED ?? 20_261_123);

interface Divergence {
  target: string;
  /** The target's error message, if it threw. */
  message: string;
  /** The call that diverged. */
  step: string;
  /** Short and stable: what memory answered → what the target answered. Known ones match on it. */
  signature: string;
  detail: string;
}

interface Target {
  name: string;
  scenarios: number;
  /** The host's own add for jobs without a policy (not validated by the library). */
  hostPlainAdds: boolean;
  /** Job ids are per queue (BullMQ's own adds): an id taken in another queue is not a conflict there. */
  idsPerQueue?: boolean;
  /** Same store's OJS backend (for cancel). */
  backend: UniqueJobsBackend;
  enqueue(job: JobInput): Inexpressible | (() => Promise<EnqueueResult>);
  /** What is stored, as comparable lines; equal before and after a call that wrote nothing. */
  snapshot(): Promise<Map<string, string>>;
  close(passed: boolean): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Targets

async function redisSnapshot(client: Redis, prefix: string): Promise<Map<string, string>> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await client.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 5000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  const types = ((await client.pipeline(keys.map((key) => ['type', key])).exec()) ?? []).map(([, type]) => String(type));
  const SIZE: Record<string, string> = { string: 'strlen', hash: 'hlen', set: 'scard', zset: 'zcard', list: 'llen', stream: 'xlen' };
  const sizes = (await client.pipeline(keys.map((key, i) => [SIZE[types[i]!] ?? 'exists', key])).exec()) ?? [];
  return new Map(keys.map((key, i) => [key, `${types[i]} ${String(sizes[i]?.[1])}`]));
}

async function pgSnapshot(pool: pg.Pool, schemas: TestSchemas): Promise<Map<string, string>> {
  const { rows: tables } = await pool.query<{ schema: string; name: string }>(
    `select table_schema as schema, table_name as name from information_schema.tables where table_schema in ($1, $2) and table_type = 'BASE TABLE' order by 1, 2`,
    [schemas.graphileSchema, schemas.uniqueSchema],
  );
  const gw = escapeIdentifier(schemas.graphileSchema);
  const counts = tables.map(({ schema, name }) => {
    const table = `${escapeIdentifier(schema)}.${escapeIdentifier(name)}`;
    // The helpers' driver jobs come and go on their own; they are not the entry point's writes.
    const from =
      schema === schemas.graphileSchema && name === '_private_jobs'
        ? `${table} j join ${gw}._private_tasks t on t.id = j.task_id where t.identifier <> '${HELPERS_DRIVER_TASK}'`
        : schema === schemas.graphileSchema && name === '_private_tasks'
          ? `${table} where identifier <> '${HELPERS_DRIVER_TASK}'`
          : table;
    return `select '${schema}.${name}' as t, count(*)::text as n from ${from}`;
  });
  if (counts.length === 0) return new Map();
  const { rows } = await pool.query<{ t: string; n: string }>(counts.join(' union all '));
  return new Map(rows.map((row) => [row.t, row.n]));
}

function redisPrefix(name: string): string {
  return `ojs-test:${RUN_SALT}:${createHash('sha1').update(`entry-points-property.test.ts\0${name}`).digest('hex')}`;
}

async function bullmqBackendTarget(scenarios: number): Promise<Target> {
  const subject = await createBullMQSubject({ prefix: redisPrefix('createBullMQBackend') });
  const backend = subject.backend as BullMQBackend;
  return {
    name: 'createBullMQBackend',
    scenarios,
    hostPlainAdds: false,
    backend,
    enqueue: (job) => () => backend.enqueue(job),
    snapshot: () => redisSnapshot(backend.client as Redis, backend.prefix),
    close: (passed) => subject.close({ passed }),
  };
}

async function bullmqEntryTarget(entry: BullMQEntryPoint, scenarios: number): Promise<Target> {
  const subject = await createBullMQEntrySubject(entry, { prefix: redisPrefix(entry) });
  const { through } = subject;
  return {
    name: entry,
    scenarios,
    hostPlainAdds: true,
    idsPerQueue: true,
    backend: subject.backend,
    enqueue: (job) => {
      const args = bullmqAddArguments(job);
      if (args instanceof Inexpressible) return args;
      try {
        through.queue(args.queue);
      } catch (error) {
        return new Inexpressible(`BullMQ refuses to open such a Queue (${(error as Error).message})`);
      }
      return async () => through.toResult(await through.add(args));
    },
    snapshot: async () => {
      await through.opened();
      return redisSnapshot(through.client, through.prefix);
    },
    close: (passed) => subject.close({ passed }),
  };
}

async function graphileBackendTarget(scenarios: number): Promise<Target> {
  const schemas = schemasFor(FILE, 'createGraphileWorkerBackend');
  const subject = await createGraphileWorkerSubject({ ...schemas, fresh: true });
  return {
    name: 'createGraphileWorkerBackend',
    scenarios,
    hostPlainAdds: false,
    backend: subject.backend,
    enqueue: (job) => () => subject.backend.enqueue(job),
    snapshot: () => pgSnapshot(subject.pool, schemas),
    close: (passed) => subject.close({ passed }),
  };
}

async function graphileEntryTarget(entry: GraphileEntryPoint, scenarios: number): Promise<Target> {
  const schemas = schemasFor(FILE, entry);
  const subject = await createGraphileEntrySubject(entry, schemas);
  return {
    name: entry,
    scenarios,
    hostPlainAdds: true,
    backend: subject.backend,
    enqueue: (job) => {
      if (job.scheduled_at !== undefined && !(job.scheduled_at instanceof Date) && typeof job.scheduled_at !== 'string') {
        return new Inexpressible('runAt is a Date: a scheduled_at that is neither a string nor a Date has no runAt');
      }
      // The closest runAt to a string that is not an OJS timestamp: a Date that is not a time.
      const input =
        typeof job.scheduled_at === 'string' && scheduledAtMs(job.scheduled_at) === null
          ? { ...job, scheduled_at: new Date(Number.NaN) }
          : job;
      const args = graphileAddArguments(input);
      if (args instanceof Inexpressible) return args;
      return async () => toResult(await subject.through.add(args));
    },
    snapshot: () => pgSnapshot(subject.base.pool, schemas),
    close: (passed) => subject.close({ passed }),
  };
}

/** Fewer scenarios where a call costs more (a Graphile transaction; a job run by a task). */
const TARGETS: { name: string; scenarios: number; make(): Promise<Target> }[] = [
  { name: 'createBullMQBackend', scenarios: 200, make: () => bullmqBackendTarget(200) },
  { name: 'withUniqueness.add', scenarios: 200, make: () => bullmqEntryTarget('withUniqueness.add', 200) },
  { name: 'withUniqueness.addBulk', scenarios: 200, make: () => bullmqEntryTarget('withUniqueness.addBulk', 200) },
  { name: 'createGraphileWorkerBackend', scenarios: 150, make: () => graphileBackendTarget(150) },
  { name: 'makeUniqueWorkerUtils.addJob', scenarios: 150, make: () => graphileEntryTarget('makeUniqueWorkerUtils.addJob', 150) },
  { name: 'makeUniqueWorkerUtils.addJobs', scenarios: 150, make: () => graphileEntryTarget('makeUniqueWorkerUtils.addJobs', 150) },
  { name: 'addJobWithClient', scenarios: 150, make: () => graphileEntryTarget('addJobWithClient', 150) },
  { name: 'withUniqueHelpers.addJob', scenarios: 80, make: () => graphileEntryTarget('withUniqueHelpers.addJob', 80) },
];

// ---------------------------------------------------------------------------------------------
// Comparing

/** A target's issue path in memory's vocabulary (the entry points name their own arguments). */
export function memoryPath(path: string): string {
  const rules: [RegExp, string][] = [
    [/^\[\d+\]\.?/, ''],
    [/^opts\.jobId/, 'id'],
    [/^opts\.priority/, 'priority'],
    [/^opts\.attempts/, 'max_attempts'],
    [/^opts\.delay/, 'scheduled_at'],
    [/^opts\.ojsMeta/, 'meta'],
    [/^opts\.unique/, 'unique'],
    [/^(spec\.)?runAt/, 'scheduled_at'],
    [/^(spec\.)?maxAttempts/, 'max_attempts'],
    [/^spec\.priority/, 'priority'],
    [/^spec\.(id|meta|queue|unique)/, '$1'],
    [/^(name|identifier)$/, 'type'],
    [/^(data|payload)/, 'args'],
  ];
  let mapped = path;
  for (const [pattern, replacement] of rules) mapped = mapped.replace(pattern, replacement);
  return mapped;
}

interface Tally {
  scenarios: number;
  calls: number;
  compared: number;
  inexpressible: Map<string, number>;
  hostPlain: number;
  outcomes: Map<string, number>;
}

function bump(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

let scenarioTag = 0;

/** Runs one scenario on a fresh memory and on the target; the first divergence ends it. */
async function runScenario(target: Target, commands: Command[], tally: Tally): Promise<Divergence | null> {
  const tag = ++scenarioTag;
  const memory = createMemoryBackend();
  // A plain job added by the host's own add is not in the library's ledger: not cancellable through the OJS backend.
  const pairs: { memory: string; target: string; hostPlain: boolean; queue: string }[] = [];
  const steps: string[] = [];
  let message = '';
  const diverge = (signature: string, why: string): Divergence => ({
    target: target.name,
    message,
    step: steps.filter((s) => s.startsWith('enqueue') || s.startsWith('cancel')).at(-1) ?? '',
    signature,
    detail: `${why}\n        scenario (tag r${tag}, seed ${SEED}):\n${steps.map((s) => `          ${s}`).join('\n')}`,
  });
  try {
    for (const command of commands) {
      if (command.kind === 'cancel') {
        const cancellable = pairs.filter((pair) => !pair.hostPlain);
        if (cancellable.length === 0) continue;
        const pair = cancellable[command.pick % cancellable.length]!;
        steps.push(`cancel job #${pairs.indexOf(pair)}`);
        const [m, t] = [await settle(() => memory.cancel(pair.memory)), await settle(() => target.backend.cancel(pair.target))];
        const ms = m.ok ? 'cancelled' : summary(answerOf(m, String));
        const ts = t.ok ? 'cancelled' : summary(answerOf(t, String));
        if (!t.ok) message = String((t.error as Error)?.message ?? t.error);
        if (ms !== ts) return diverge(`cancel: memory ${ms} → target ${ts}`, `cancel answered ${ts}, memory ${ms}`);
        continue;
      }
      const job = tagged(command.job, tag);
      steps.push(`enqueue ${describeJob(job)}`);
      tally.calls += 1;
      const m = answerOf(await settle(() => memory.enqueue(job)), String);
      const takenIn = typeof job.id === 'string' ? pairs.find((pair) => pair.memory === job.id)?.queue : undefined;
      const call =
        target.idsPerQueue && takenIn !== undefined && takenIn !== (job.queue ?? 'default')
          ? new Inexpressible('BullMQ job ids are per queue: an id taken in another queue is free in this one')
          : target.enqueue(job);
      if (call instanceof Inexpressible) {
        bump(tally.inexpressible, call.reason);
        steps.push(`  (not expressible on ${target.name}: ${call.reason}; memory: ${summary(m)})`);
        // Memory's state moved on without the target: the scenario cannot go on.
        if (m.kind === 'created' || m.kind === 'replaced') return null;
        continue;
      }
      const plain = job.unique === undefined || job.unique === null;
      if (target.hostPlainAdds && plain && m.kind !== 'created') {
        tally.hostPlain += 1;
        steps.push(`  (a plain add on ${target.name} is the host's own; memory: ${summary(m)})`);
        return null;
      }
      const checkWrites = m.kind === 'invalid' || m.kind === 'error';
      const before = checkWrites ? await target.snapshot() : null;
      const t = answerOf(await settle(call), (path) => memoryPath(path));
      message = t.kind === 'error' ? t.message : '';
      tally.compared += 1;
      bump(tally.outcomes, m.kind);
      steps.push(`  memory: ${summary(m)}; ${target.name}: ${summary(t)}`);
      const signature = `memory ${summary(m)} → ${summary(t)}`;
      if (m.kind !== t.kind) {
        const messages = [m, t].flatMap((answer) => (answer.kind === 'error' ? [answer.message] : [])).join(' / ');
        return diverge(signature, `different answers${messages ? `: ${messages}` : ''}`);
      }
      // Naming fewer of the same fields is fine (an entry point may stop at its first problem).
      if (m.kind === 'invalid' && t.kind === 'invalid' && (t.paths.length === 0 || t.paths.some((path) => !m.paths.includes(path)))) {
        return diverge(signature, 'different fields named');
      }
      if (m.kind === 'error' && t.kind === 'error' && m.name !== t.name)
        return diverge(signature, `different errors: ${m.message} / ${t.message}`);
      if (before) {
        const after = await target.snapshot();
        const changed = [...new Set([...before.keys(), ...after.keys()])].filter((key) => before.get(key) !== after.get(key));
        if (changed.length > 0) {
          return diverge(
            `memory ${summary(m)} → ${summary(t)} with writes`,
            `the failed call wrote: ${changed.map((key) => `${key.slice(-40)} ${before.get(key) ?? '-'} → ${after.get(key) ?? '-'}`).join('; ')}`,
          );
        }
      }
      const indexOf = (id: string, side: 'memory' | 'target') => pairs.findIndex((pair) => pair[side] === id);
      if (m.kind === 'duplicate' && t.kind === 'duplicate') {
        if (indexOf(m.existingJobId, 'memory') !== indexOf(t.existingJobId, 'target') || m.existingJobState !== t.existingJobState) {
          return diverge(
            `${signature}: another existing job`,
            `existing job #${indexOf(t.existingJobId, 'target')} (${t.existingJobState}), memory #${indexOf(m.existingJobId, 'memory')} (${m.existingJobState})`,
          );
        }
      }
      if ((m.kind === 'created' || m.kind === 'deduplicated' || m.kind === 'replaced') && m.kind === t.kind) {
        const replacedM = m.replaced.map((job) => indexOf(job.id, 'memory')).sort();
        const replacedT = t.replaced.map((job) => indexOf(job.id, 'target')).sort();
        if (replacedM.join() !== replacedT.join())
          return diverge(`${signature}: other jobs replaced`, `replaced #${replacedT.join(',#')}, memory #${replacedM.join(',#')}`);
        if (m.kind === 'deduplicated' && indexOf(m.job.id, 'memory') !== indexOf(t.job.id, 'target')) {
          return diverge(
            `${signature}: another existing job`,
            `deduplicated to #${indexOf(t.job.id, 'target')}, memory #${indexOf(m.job.id, 'memory')}`,
          );
        }
        for (const field of ['uniqueness_key', 'state', 'type', 'queue'] as const) {
          if (m.job[field] !== t.job[field])
            return diverge(`${signature}: another ${field}`, `${field} ${String(t.job[field])}, memory ${String(m.job[field])}`);
        }
        if (m.kind !== 'deduplicated')
          pairs.push({ memory: m.job.id, target: t.job.id, hostPlain: target.hostPlainAdds && plain, queue: m.job.queue });
      }
    }
    return null;
  } finally {
    await memory.close();
  }
}

describe(`property: every backend and entry point answers as the memory backend does (fast-check, seed ${SEED})`, function () {
  this.timeout(120_000);
  const scenarios = fc.sample(commandsArb, { seed: SEED, numRuns: Math.max(...TARGETS.map((t) => t.scenarios)) });

  for (const definition of TARGETS) {
    it(`${definition.name}: each enqueue gives memory's outcome or its invalid_request naming the same fields, and an error writes nothing`, async function () {
      const target = await definition.make();
      const tally: Tally = { scenarios: 0, calls: 0, compared: 0, inexpressible: new Map(), hostPlain: 0, outcomes: new Map() };
      const divergences: Divergence[] = [];
      let passed = false;
      try {
        for (const commands of scenarios.slice(0, target.scenarios)) {
          tally.scenarios += 1;
          const divergence = await runScenario(target, commands, tally);
          if (divergence) divergences.push(divergence);
          if (divergence && process.env.OJS_PROPERTY_DUMP) {
            console.log(`DIVERGENCE\t${divergence.target}\t${divergence.signature}\t${divergence.message}\t${divergence.step}`);
          }
        }
        const outcomes = [...tally.outcomes].map(([kind, n]) => `${kind} ${n}`).join(', ');
        console.log(
          `      ${target.name}: ${tally.scenarios} scenarios, ${tally.calls} enqueues, ${tally.compared} compared (memory: ${outcomes}), ` +
            `${tally.hostPlain} plain adds left to the host, ${[...tally.inexpressible.values()].reduce((a, b) => a + b, 0)} not expressible`,
        );
        for (const [reason, n] of tally.inexpressible) console.log(`        ${n} not expressible: ${reason}`);
        const bySignature = new Map<string, Divergence[]>();
        for (const divergence of divergences)
          bySignature.set(divergence.signature, [...(bySignature.get(divergence.signature) ?? []), divergence]);
        if (bySignature.size > 0) {
          const report = [...bySignature]
            .map(([signature, list]) => `  ${list.length}× ${signature}\n      first: ${list[0]!.detail}`)
            .join('\n');
          throw new Error(`${target.name} diverged from memory (${divergences.length} scenarios):\n${report}`);
        }
        passed = true;
      } finally {
        await target.close(passed);
      }
    });
  }
});
