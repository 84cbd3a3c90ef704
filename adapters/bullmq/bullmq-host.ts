/**
 * Everything the BullMQ adapter relies on beyond BullMQ's and ioredis' documented API, in one
 * place. The other adapter files reach BullMQ's internals only through this module, and a queue's
 * through its handle (bullmq-queue-handle.ts: `internalsOf` is called there and here only). Each
 * reliance has a contract test in test/adapters/bullmq-host-contract.test.ts whose failure
 * names what changed and where it is used; the start-up check (`loadAddScripts`) refuses a BullMQ
 * whose add scripts no longer match what unique-add is composed from.
 *
 *  1. BullMQ's add scripts (addStandardJob, addDelayedJob, addPrioritizedJob) from the deep module
 *     `bullmq/dist/cjs/scripts`, resolved from wherever `bullmq` itself resolves.
 *  2. Their KEYS, as queue key names in BullMQ's order (`BULLMQ_ADD_SCRIPTS`), and their argument
 *     layout: ARGV[1] msgpacked args (key prefix, custom id, name, timestamp, parent key …),
 *     ARGV[2] the data, ARGV[3] msgpacked options with short names (`delay`, `priority`, `de`);
 *     the job id, or a negative code, as the result. Checked against each script's header.
 *  3. Encoding an add exactly as `queue.add` would: the queue's `backend.addJobToTransaction`
 *     with a client that records the command instead of sending it (`encodeAdd`).
 *  4. Queue members outside the public API: `keys`, `jobsOpts`, `Job`, `qualifiedName`,
 *     `metaValues`, `backend.client`, `backend.setQueueMeta`; `Job#validateOptions` (private).
 *  5. Facts the Lua scripts use (`BULLMQ_LUA`): counter ids are INCR of the queue's `id` key, so
 *     the next one is `GET id + 1`; a delayed job's score is its due time in ms × 4096 plus a
 *     sequence; the events stream's bound (`opts.maxLenEvents` in the meta hash, 10,000 when
 *     unset); the names and fields of the `deduplicated` and `removed` events; the keys beside a
 *     job hash (`:lock`, `:logs` …), the attempts-made field `atm`, the `finishedOn` field present
 *     exactly while a job is finished, the state keys of a queue; the deduplication key
 *     `<base>de:<id>` named by a job hash's `deid`, deleted by BullMQ when that job completes,
 *     fails for good or is removed (the native path, lua/includes/ojs-native-add.lua).
 *     `keepLastIfActive`'s next job: BullMQ's finishing script adds the `<base>dn:<deid>` hash
 *     (name, data, opts, jid) of a job's `deid` when that job completes or fails for good (not on
 *     a retry, before removeOnComplete), with its stored opts (unknown members kept), `deid` and
 *     the deduplication key from `opts.de`; its removal of a job its deduplication key names
 *     deletes the hash. `x_successor` writes that hash itself (lua/includes/ojs-successor.lua,
 *     docs/design/successor.md; 6.0.0 and the newest 6.x alike).
 *  6. Job hash field names, read back into a `Job` (`jobFromHash`) and an OJS view.
 *  7. ioredis: the scripts run through ioredis only (a node-redis, Bun or Valkey GLIDE client,
 *     which BullMQ 6 also accepts, is refused: `checkConnection`), as the adapter's own `Command`
 *     subclass (bullmq-script-command.ts: `sendCommand`, `toWritable`, public in ioredis' types).
 *
 * BullMQ behaviour relied on where it is used, and tested there: a job's own `removeOnComplete` /
 * `removeOnFail` wins over a Worker's (bullmq-retention.ts; bullmq-with-uniqueness.test.ts);
 * `removeOrphanedJobs` takes a one-segment key under a queue's base for a job (bullmq-sidecar-keys.ts;
 * the sidecar tests); BullMQ's job-option and job-id rules, mirrored so a unique add refuses what
 * `queue.add` would (bullmq-job-options.ts; bullmq-wrapper-seams.test.ts), which is also what lets
 * a duplicate probe go out before BullMQ's `Job` is built (bullmq-enqueue.ts;
 * bullmq-host-contract.test.ts).
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { existsSync, readFileSync } from 'node:fs';
import { Job, type JobsOptions, type Queue } from 'bullmq';
import { Cluster, Redis } from 'ioredis';
import { BackendError } from '../../src/errors.js';

/** BullMQ versions this adapter supports: the oldest and the newest are run in CI. */
export const SUPPORTED_BULLMQ_RANGE = '>=6.0.0 <7.0.0';

/** BullMQ's PRIORITY_LIMIT (classes/job.js): priorities are 0 (none) to 2^21 - 1. */
export const BULLMQ_MAX_PRIORITY = 2 ** 21 - 1;

// ---------------------------------------------------------------------------------------------
// 1-2. BullMQ's add scripts

export interface ShippedScript {
  name: string;
  content: string;
  keys: number;
}

/**
 * The add scripts unique-add composes, each with its KEYS as queue key names (`queue.keys`) in
 * the order BullMQ passes them. The composed script builds each one's KEYS table from these
 * names, so this is the only copy of the order.
 */
export const BULLMQ_ADD_SCRIPTS = {
  addStandardJob: ['wait', 'paused', 'meta', 'id', 'completed', 'delayed', 'active', 'events', 'marker'],
  addDelayedJob: ['marker', 'meta', 'id', 'delayed', 'completed', 'events'],
  addPrioritizedJob: ['marker', 'meta', 'id', 'prioritized', 'delayed', 'completed', 'active', 'events', 'pc'],
} as const satisfies Record<string, readonly string[]>;

export type BullMQAddScript = keyof typeof BULLMQ_ADD_SCRIPTS;

/**
 * Where unique-add hands BullMQ's add its own job-hash fields, so the job is written by one
 * HMSET: `storeJob` (included in every add script) ends its HMSET of the job hash with
 * `unpack(optionalValues))`, which the splice makes `ojsUnpackWith(optionalValues, ojsStoreFields))`
 * (bullmq-script-set.ts: the `ojsFields` of the call's argument table). Saves the native insert a separate HSET. When a script lacks exactly
 * one such HMSET (a BullMQ release changed storeJob), nothing is rewritten and the scripts write
 * their fields with their own HSET, as before (`BULLMQ_STORES_OJS_FIELDS` false).
 */
export const BULLMQ_STORE_JOB_HMSET = /rcall\("HMSET",\s*jobIdKey,[^()]*\bunpack\(optionalValues\)\)/g;

/** Why `BULLMQ_STORE_JOB_HMSET` cannot be hooked in the add script `name` (null when it can). */
export function storeJobHookProblem(name: BullMQAddScript, script: Pick<ShippedScript, 'content'> | undefined): string | null {
  const found = script?.content.match(BULLMQ_STORE_JOB_HMSET)?.length ?? 0;
  return found === 1 ? null : `script ${name} has ${found} storeJob HMSETs ending with unpack(optionalValues), expected 1`;
}

/**
 * The scripts unique-add splices to update a job in place (`x_update`), as BullMQ's own
 * `Job#changePriority`, `Job#changeDelay` and `Job#promote` run them: `queue` is each one's KEYS
 * as queue key names in BullMQ's order, `header` what its header comment says (pinned: the
 * start-up check refuses a BullMQ whose header differs), the ARGV unique-add passes included.
 */
export const BULLMQ_MOVE_SCRIPTS = {
  changePriority: {
    queue: ['wait', 'paused', 'meta', 'prioritized', 'active', 'pc', 'marker'],
    header: {
      keys: ['wait', 'paused', 'meta', 'prioritized', 'active', 'pc', 'marker'],
      argv: ['priority value', 'prefix key', 'job id', 'lifo'],
      output: ['0', '-1'],
    },
  },
  changeDelay: {
    queue: ['delayed', 'meta', 'marker', 'events'],
    header: {
      keys: ['delayed', 'meta', 'marker', 'events'],
      argv: ['delay', 'timestamp', 'the id of the job', 'job key'],
      output: ['0', '-1', '-3'],
    },
  },
  promote: {
    queue: ['delayed', 'wait', 'paused', 'meta', 'prioritized', 'active', 'pc', 'events', 'marker'],
    header: {
      keys: ['delayed', 'wait', 'paused', 'meta', 'prioritized', 'active', 'pc', 'event', 'marker'],
      argv: ["queue.tokey('')", 'jobid'],
      output: ['0', '-3'],
    },
  },
} as const;

export type BullMQMoveScript = keyof typeof BULLMQ_MOVE_SCRIPTS;

/**
 * The scripts unique-flow adds to the add scripts to insert a flow tree as BullMQ's FlowProducer
 * does: `addParentJob` (a node with children, in `waiting-children`; KEYS by queue key name, as
 * for the add scripts) and `releaseParentIfNoPendingDependencies` (the step that ends BullMQ's
 * flow insert; its KEYS are the parent's own keys). Headers pinned as for the move scripts. A
 * BullMQ without the release step (6.0.0) keeps every other unique add, a unique child of an existing
 * parent included: only a tree with unique nodes is refused (`flowScriptsProblem`), and an
 * archived child keeps its parent waiting.
 */
export const BULLMQ_FLOW_SCRIPTS = {
  addParentJob: {
    queue: ['meta', 'id', 'delayed', 'waiting-children', 'completed', 'events'],
    header: {
      keys: ['meta', 'id', 'delayed', 'waiting-children', 'completed', 'events'],
      argv: ['msgpacked arguments array', 'json stringified job data', 'msgpacked options'],
      output: ['jobid', '-5'],
    },
  },
  releaseParentIfNoPendingDependencies: {
    queue: null,
    header: {
      keys: ['parent', 'parent'],
      argv: ['parent queue key', 'parent id', 'timestamp'],
      output: [],
    },
  },
} as const;

export type BullMQFlowScript = keyof typeof BULLMQ_FLOW_SCRIPTS;

/** Why the installed script `name` cannot be spliced into unique-flow, or null when it can. */
export function flowScriptProblem(name: BullMQFlowScript, script: ShippedScript | undefined): string | null {
  const expected = BULLMQ_FLOW_SCRIPTS[name];
  if (!script || typeof script.content !== 'string') return `script ${name} is missing`;
  if (script.keys !== expected.header.keys.length)
    return `script ${name} takes ${script.keys} keys, expected ${expected.header.keys.length}`;
  const header = parseScriptHeader(script.content);
  if (!header) return `script ${name} has no header comment describing its KEYS and ARGV`;
  if (header.keys.join(',') !== expected.header.keys.join(','))
    return `script ${name} takes KEYS ${header.keys.join(', ')}; unique-flow passes ${expected.header.keys.join(', ')}`;
  if (header.argv.slice(0, expected.header.argv.length).join('|') !== expected.header.argv.join('|'))
    return `script ${name} takes ARGV ${header.argv.join('; ')}; unique-flow passes ${expected.header.argv.join('; ')}`;
  // unique-flow reads every node's msgpacked args (key prefix, custom id, parent key), a parent's too.
  if (name === 'addParentJob')
    for (const [position, wanted] of Object.entries(BULLMQ_ADD_ARGUMENTS.packed)) {
      const found = header.packed[Number(position)];
      if (found !== wanted)
        return `script ${name} reads "${found ?? 'nothing'}" at position ${position} of ARGV[1]; unique-flow relies on "${wanted}"`;
    }
  if (header.output.slice(0, expected.header.output.length).join(',') !== expected.header.output.join(','))
    return `script ${name} returns ${header.output.join(', ')}; unique-flow expects ${expected.header.output.join(', ')}`;
  return null;
}

/**
 * The flow scripts of the installed BullMQ, or why unique-flow cannot use them (the first
 * problem); checked once, never thrown at start-up.
 */
export function loadFlowScripts(
  bullmq: Pick<InstalledBullMQ, 'version' | 'scripts'> = installedBullMQ(),
): { scripts: Record<BullMQFlowScript, ShippedScript>; problem: null } | { scripts: null; problem: string } {
  const scripts = {} as Record<BullMQFlowScript, ShippedScript>;
  for (const name of Object.keys(BULLMQ_FLOW_SCRIPTS) as BullMQFlowScript[]) {
    const problem = flowScriptProblem(name, bullmq.scripts[name]);
    if (problem) return { scripts: null, problem: `bullmq ${bullmq.version}: ${problem}` };
    scripts[name] = bullmq.scripts[name]!;
  }
  return { scripts, problem: null };
}

/** Why the installed script `name` cannot be spliced to update a job, or null when it can. */
export function moveScriptProblem(name: BullMQMoveScript, script: ShippedScript | undefined): string | null {
  const expected = BULLMQ_MOVE_SCRIPTS[name];
  if (!script || typeof script.content !== 'string') return `script ${name} is missing`;
  if (script.keys !== expected.queue.length) return `script ${name} takes ${script.keys} keys, expected ${expected.queue.length}`;
  const header = parseScriptHeader(script.content);
  if (!header) return `script ${name} has no header comment describing its KEYS and ARGV`;
  if (header.keys.join(',') !== expected.header.keys.join(','))
    return `script ${name} takes KEYS ${header.keys.join(', ')}; unique-add passes ${expected.header.keys.join(', ')}`;
  if (header.argv.join('|') !== expected.header.argv.join('|'))
    return `script ${name} takes ARGV ${header.argv.join('; ')}; unique-add passes ${expected.header.argv.join('; ')}`;
  if (header.output.slice(0, expected.header.output.length).join(',') !== expected.header.output.join(','))
    return `script ${name} returns ${header.output.join(', ')}; unique-add expects ${expected.header.output.join(', ')}`;
  return null;
}

/** What the three scripts' headers say about their arguments, as far as unique-add reads them. */
export const BULLMQ_ADD_ARGUMENTS = {
  /** ARGV[1..3]. */
  argv: ['msgpacked arguments array', 'json stringified job data', 'msgpacked options'],
  /** Entries of the msgpacked ARGV[1] that unique-add reads or writes (1-based, as in Lua). */
  packed: { 1: 'key prefix', 2: 'custom id', 3: 'name', 4: 'timestamp', 5: 'parentkey' },
  /** First words of the output lines: the job id, or -5 for a missing parent. */
  output: ['jobid', '-5'],
} as const;

export interface InstalledBullMQ {
  version: string;
  /** Where the package was loaded from (its directory). */
  root: string;
  scripts: Record<string, ShippedScript | undefined>;
}

let installed: InstalledBullMQ | undefined;

/**
 * The BullMQ this process loads `bullmq` from: its version and its scripts module. Resolved from
 * `bullmq`'s own entry point (so the scripts are those of the BullMQ whose `Queue` runs them,
 * whatever resolves `bullmq`). Throws `BackendError` when it cannot be loaded.
 */
export function installedBullMQ(): InstalledBullMQ {
  if (installed) return installed;
  try {
    const root = packageRoot(resolveBullMQEntry());
    const require = createRequire(join(root, 'package.json'));
    const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
    const scripts = require('./dist/cjs/scripts') as Record<string, ShippedScript | undefined>;
    installed = { version, root, scripts };
  } catch (error) {
    throw unsupported('cannot load bullmq/dist/cjs/scripts', error);
  }
  return installed;
}

function resolveBullMQEntry(): string {
  // import.meta.resolve follows module customization hooks (the CI matrix uses one to load
  // another BullMQ as `bullmq`); require.resolve would not.
  const resolve = (import.meta as { resolve?: (specifier: string) => string }).resolve;
  if (typeof resolve === 'function') return fileURLToPath(resolve('bullmq'));
  return createRequire(import.meta.url).resolve('bullmq');
}

function packageRoot(entry: string): string {
  for (let dir = dirname(entry); ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'bullmq') return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json of bullmq above ${entry}`);
  }
}

/** The header of a BullMQ script (its leading `--[[ … ]]` block), as far as it describes the input and output. */
export interface ScriptHeader {
  /** KEYS[n], each as its first word (the queue key name: `'wait',` and `marker key` give `wait`, `marker`). */
  keys: string[];
  /** ARGV[n], lower-cased. */
  argv: string[];
  /** The entries listed under ARGV[1] (`[n] …`), lower-cased, up to a `(` or `,`, without `?`. */
  packed: Record<number, string>;
  /** The first word of each output line, lower-cased. */
  output: string[];
}

/** The leading `--[[ … ]]` comment of a script, or null. */
export function scriptHeaderText(content: string): string | null {
  const match = /^\s*--\[\[[\s\S]*?\]\]/.exec(content);
  return match ? match[0].trim() : null;
}

export function parseScriptHeader(content: string): ScriptHeader | null {
  const text = scriptHeaderText(content);
  if (text === null) return null;
  const header: ScriptHeader = { keys: [], argv: [], packed: {}, output: [] };
  let section: 'input' | 'packed' | 'output' | undefined;
  for (const line of text.split('\n')) {
    const keys = /^\s*KEYS\[(\d+)\]\s*(.*)$/.exec(line);
    const argv = /^\s*ARGV\[(\d+)\]\s*(.*)$/.exec(line);
    const packed = /^\s*\[(\d+)\]\s*(.*)$/.exec(line);
    if (/^\s*Input:/.test(line)) section = 'input';
    else if (/^\s*Output:/.test(line)) section = 'output';
    else if (keys) header.keys[Number(keys[1]) - 1] = firstWord(keys[2]!);
    else if (argv) {
      header.argv[Number(argv[1]) - 1] = argv[2]!.trim().toLowerCase();
      section = argv[1] === '1' ? 'packed' : 'input';
    } else if (packed && section === 'packed')
      header.packed[Number(packed[1])] = packed[2]!.split(/[(,]/)[0]!.replace(/\?/g, '').trim().toLowerCase();
    else if (section === 'output' && /\S/.test(line) && !/^\s*\]\]/.test(line)) header.output.push(firstWord(line).toLowerCase());
  }
  return header;
}

function firstWord(text: string): string {
  return (text.trim().split(/\s+/)[0] ?? '').replace(/['",]/g, '');
}

/**
 * Why the installed add script `name` cannot be composed, or null when it can: present, with the
 * key count, the KEYS and the arguments unique-add passes (as its header describes them).
 */
export function addScriptProblem(name: BullMQAddScript, script: ShippedScript | undefined): string | null {
  const keys = BULLMQ_ADD_SCRIPTS[name];
  if (!script || typeof script.content !== 'string') return `script ${name} is missing`;
  if (script.keys !== keys.length) return `script ${name} takes ${script.keys} keys, expected ${keys.length}`;
  const header = parseScriptHeader(script.content);
  if (!header) return `script ${name} has no header comment describing its KEYS and ARGV`;
  if (header.keys.join(',') !== keys.join(','))
    return `script ${name} takes KEYS ${header.keys.join(', ')}; unique-add passes ${keys.join(', ')}`;
  const argv = BULLMQ_ADD_ARGUMENTS.argv;
  if (header.argv.slice(0, argv.length).join('|') !== argv.join('|'))
    return `script ${name} takes ARGV ${header.argv.join('; ')}; unique-add passes ${argv.join('; ')}`;
  for (const [position, expected] of Object.entries(BULLMQ_ADD_ARGUMENTS.packed)) {
    const found = header.packed[Number(position)];
    if (found !== expected)
      return `script ${name} reads "${found ?? 'nothing'}" at position ${position} of ARGV[1]; unique-add relies on "${expected}"`;
  }
  if (header.output.slice(0, 2).join(',') !== BULLMQ_ADD_ARGUMENTS.output.join(','))
    return `script ${name} returns ${header.output.join(', ')}; unique-add expects jobId, or -5`;
  return null;
}

/**
 * The installed BullMQ's add scripts, checked: major version 6 and every script as
 * `addScriptProblem` wants it. Throws `BackendError` saying what differs.
 */
export function loadAddScripts(
  bullmq: Pick<InstalledBullMQ, 'version' | 'scripts'> = installedBullMQ(),
): Record<BullMQAddScript | BullMQMoveScript, ShippedScript> {
  if (Number(bullmq.version.split('.')[0]) !== 6) throw unsupported(`version ${bullmq.version}`);
  const scripts = {} as Record<BullMQAddScript | BullMQMoveScript, ShippedScript>;
  for (const name of Object.keys(BULLMQ_ADD_SCRIPTS) as BullMQAddScript[]) {
    const problem = addScriptProblem(name, bullmq.scripts[name]);
    if (problem) throw unsupported(`bullmq ${bullmq.version}: ${problem}`);
    scripts[name] = bullmq.scripts[name]!;
  }
  for (const name of Object.keys(BULLMQ_MOVE_SCRIPTS) as BullMQMoveScript[]) {
    const problem = moveScriptProblem(name, bullmq.scripts[name]);
    if (problem) throw unsupported(`bullmq ${bullmq.version}: ${problem}`);
    scripts[name] = bullmq.scripts[name]!;
  }
  return scripts;
}

export function unsupported(why: string, cause?: unknown): BackendError {
  return new BackendError(
    'bullmq',
    `the installed bullmq is not supported (${why}); ojs-unique/bullmq supports bullmq ${SUPPORTED_BULLMQ_RANGE}`,
    {
      cause,
      written: false,
    },
  );
}

// ---------------------------------------------------------------------------------------------
// 5. What the Lua scripts know about BullMQ

/**
 * Lua spliced into every script of the adapter where `--- @bullmq-host` stands (after
 * `local rcall = redis.call`, before the includes that use it): the BullMQ facts of item 5 above,
 * named, so no other Lua file spells them.
 */
export const BULLMQ_LUA = `-- BullMQ facts (adapters/bullmq/bullmq-host.ts, checked by test/adapters/bullmq-host-contract.test.ts).
-- Positions in the msgpacked args of BullMQ's add scripts (ARGV[1]), and option short names (ARGV[3]).
local BULLMQ_ARG_KEY_PREFIX, BULLMQ_ARG_CUSTOM_ID, BULLMQ_ARG_TIMESTAMP, BULLMQ_ARG_PARENT_KEY = 1, 2, 4, 5
local BULLMQ_OPT_DELAY, BULLMQ_OPT_PRIORITY, BULLMQ_OPT_DEDUPLICATION = "delay", "priority", "de"
local BULLMQ_OPT_ATTEMPTS = "attempts"
-- The id BullMQ's add gives the next job without a custom id: INCR of the queue's id key.
local function bullmqNextCounterId(idKey)
  return tostring((tonumber(rcall("GET", idKey)) or 0) + 1)
end
-- A delayed job's due time in ms from its score in the delayed ZSET (due * 0x1000 + sequence).
local function bullmqDelayedDueMs(score)
  return math.floor(tonumber(score) / 4096)
end
-- The length events streams are trimmed to (the queue's meta hash, BullMQ's default when unset).
local function bullmqMaxEvents(metaKey)
  return rcall("HGET", metaKey, "opts.maxLenEvents") or 10000
end
-- BullMQ's deduplicated event: jobId is the job kept, deduplicatedJobId the incoming one.
local function bullmqEmitDeduplicated(eventsKey, maxEvents, jobId, deduplicationId, deduplicatedJobId)
  rcall("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*", "event", "deduplicated", "jobId", jobId,
    "deduplicationId", deduplicationId, "deduplicatedJobId", deduplicatedJobId)
end
-- BullMQ's removed event (jobId, prev), with the adapter's reason and replacedBy.
local function bullmqEmitRemoved(eventsKey, maxEvents, jobId, prev, reason, replacedBy)
  rcall("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*", "event", "removed", "jobId", jobId,
    "prev", prev, "reason", reason, "replacedBy", replacedBy)
end
-- The keys a job owns beside its hash, deleted with it.
local function bullmqDeleteJobSubkeys(jobKey)
  rcall("DEL", jobKey .. ":lock", jobKey .. ":logs", jobKey .. ":dependencies", jobKey .. ":processed",
    jobKey .. ":failed", jobKey .. ":unsuccessful")
end
-- The lock a worker holds on an active job, and the job hash field counting attempts made.
local BULLMQ_LOCK_SUFFIX, BULLMQ_ATTEMPTS_MADE = ":lock", "atm"
-- The job hash field set when a job finishes (completed, or failed for good), in the script that
-- moves it to completed/failed, and deleted when a finished job is sent back to wait (retry).
local BULLMQ_FINISHED_ON = "finishedOn"`;

// ---------------------------------------------------------------------------------------------
// 3-4, 7. A queue's internals

/** The slice of an ioredis client, pipeline or Cluster the adapter sends commands on. */
export interface IoredisTarget {
  sendCommand(command: unknown): unknown;
  isPipeline?: boolean;
  /** A pipeline's client (ioredis Pipeline#redis). */
  redis?: IoredisTarget;
}

/** An ioredis client or Cluster, or BullMQ's proxy of one (`queue.client`). */
export type IoredisClient = Redis & IoredisTarget;

/** The members of a BullMQ `Queue` this adapter uses beyond its public API. */
export interface QueueInternals {
  name: string;
  qualifiedName: string;
  keys: Record<string, string>;
  jobsOpts: JobsOptions;
  Job: typeof Job;
  opts: Queue['opts'];
  metaValues: Record<string, unknown>;
  backend: {
    client: Promise<IoredisClient>;
    addJobToTransaction(client: unknown, job: unknown, jobId: string | undefined, parentKeyOpts?: object): Promise<unknown>;
    setQueueMeta(values: Record<string, unknown>): Promise<unknown>;
  };
}

const checkedQueues = new WeakSet<object>();

/**
 * The queue's internals; throws `BackendError` for a queue that is not backed by BullMQ's Redis
 * backend or whose connection is not ioredis.
 */
export function internalsOf(queue: Queue): QueueInternals {
  const internals = queue as unknown as QueueInternals;
  if (checkedQueues.has(queue)) return internals;
  if (typeof internals.backend?.addJobToTransaction !== 'function' || !internals.keys?.pc || !internals.keys?.marker) {
    throw new BackendError('bullmq', "the queue is not backed by BullMQ's Redis backend (RedisQueueBackend); unique adds need it", {
      written: false,
    });
  }
  checkConnection(internals.opts?.connection, 'the queue');
  checkedQueues.add(queue);
  return internals;
}

/** The queue's connected client, checked to be ioredis. */
export async function queueClient(queue: Queue): Promise<IoredisClient> {
  const client = await internalsOf(queue).backend.client;
  if (!isIoredis(client)) throw notIoredis('the queue', client);
  return client;
}

/**
 * BullMQ's own option check of a job (`Job#validateOptions`, private), which throws as
 * `queue.add` would.
 */
export function validateJobOptions(job: Job, jobData: ReturnType<Job['asJSON']> = job.asJSON()): void {
  (job as unknown as { validateOptions(data: unknown): void }).validateOptions(jobData);
}

/** BullMQ's encoding of an add: ARGV[1..3] of its add script (msgpacked args, data, msgpacked options). */
export type EncodedAdd = [packedArgs: Buffer | string, data: string, packedOpts: Buffer | string];

/**
 * The arguments `queue.add` would send for `job`, byte for byte: BullMQ's own
 * `addJobToTransaction` with a client that records the script command instead of sending it.
 * Synchronous when BullMQ encodes before its first await, as it does (a contract test says so):
 * an add then pays for no promise here.
 */
export function encodeAdd(
  queue: QueueInternals,
  jobData: ReturnType<Job['asJSON']>,
  jobId: string | undefined,
  parentKeyOpts: FlowParentKeyOpts = NO_PARENT,
): EncodedAdd | Promise<EncodedAdd> {
  const encoded = encodeNode(queue, jobData, jobId, parentKeyOpts);
  return encoded instanceof Promise ? encoded.then((node) => node.argv) : encoded.argv;
}

/**
 * How BullMQ's flow add links a node to its parent (`addJobToTransaction`'s parent options): the
 * parent's key and dependencies key, whether the node itself waits for children (addParentJob),
 * and `deferParentRelease` (BullMQ releases a flow's parents once every node is in).
 */
export interface FlowParentKeyOpts {
  parentKey: string | undefined;
  parentDependenciesKey: string;
  addToWaitingChildren?: boolean;
  deferParentRelease?: boolean;
}

const NO_PARENT: FlowParentKeyOpts = { parentKey: undefined, parentDependenciesKey: '' };

/**
 * The script BullMQ would run for a node of a flow (addParentJob, addStandardJob, addDelayedJob
 * or addPrioritizedJob: its name without the version suffix) and its ARGV, recorded as for
 * `encodeAdd`.
 */
export function encodeNode(
  queue: QueueInternals,
  jobData: ReturnType<Job['asJSON']>,
  jobId: string | undefined,
  parentKeyOpts: FlowParentKeyOpts,
): EncodedNode | Promise<EncodedNode> {
  const recorder = new AddRecorder();
  const pending = queue.backend.addJobToTransaction(recorder, jobData, jobId, parentKeyOpts);
  const recorded = recorder.recorded;
  if (recorded !== undefined) {
    // Settles with the recorder's 1; nothing to wait for.
    pending.catch(ignore);
    return recorded;
  }
  // Not encoded before BullMQ's first await (another BullMQ, or a throw, whose error this keeps).
  return pending.then(() => {
    if (recorder.recorded === undefined)
      throw new BackendError('bullmq', 'BullMQ did not encode the job through runCommand', { written: false });
    return recorder.recorded;
  });
}

/** The client `encodeNode` hands BullMQ: it records the add's script command instead of sending it. */
class AddRecorder {
  recorded: EncodedNode | undefined;
  runCommand(name: string, args: unknown[]): Promise<number> {
    if (args.length >= 3) this.recorded = { script: name.slice(0, name.indexOf(':') >>> 0), argv: args.slice(-3) as EncodedAdd };
    return RECORDED;
  }
}

/** A node's add as BullMQ would send it: its script's name without the version suffix, and ARGV[1..3]. */
export interface EncodedNode {
  script: string;
  argv: EncodedAdd;
}

const RECORDED = Promise.resolve(1);
const ignore = (): void => {};

/** Writes BullMQ's meta hash of the queue (what `new Queue` writes unless `skipMetasUpdate`). */
export function writeQueueMeta(queue: Queue): Promise<unknown> {
  const internals = internalsOf(queue);
  return internals.backend.setQueueMeta(internals.metaValues);
}

// ---------------------------------------------------------------------------------------------
// 6. Job hashes

/** A job's options from its hash (`opts`, short names), as BullMQ decodes them. */
export function jobOptsFromHash(hash: Record<string, string>): JobsOptions {
  return Job.optsFromJSON(hash.opts);
}

/** A BullMQ `Job` rebuilt from a job hash a script returned, as `Job.fromId` would build it. */
export function jobFromHash(queue: Queue, id: string, hash: Record<string, string>): Job {
  return Job.fromJSON(
    queue,
    {
      id,
      name: hash.name ?? '',
      data: hash.data ?? '{}',
      opts: Job.optsFromJSON(hash.opts),
      progress: JSON.parse(hash.progress ?? '0'),
      delay: parseInt(hash.delay ?? '0', 10),
      priority: parseInt(hash.priority ?? '0', 10),
      timestamp: parseInt(hash.timestamp ?? '0', 10),
      attemptsStarted: parseInt(hash.ats ?? '0', 10),
      attemptsMade: parseInt(hash.atm ?? '0', 10),
      stalledCounter: parseInt(hash.stc ?? '0', 10),
      finishedOn: hash.finishedOn ? parseInt(hash.finishedOn, 10) : undefined,
      processedOn: hash.processedOn ? parseInt(hash.processedOn, 10) : undefined,
      failedReason: hash.failedReason,
      stacktrace: hash.stacktrace,
      returnvalue: hash.returnvalue,
      processedBy: hash.pb,
    } as unknown as Parameters<typeof Job.fromJSON>[1],
    id,
  );
}

// ---------------------------------------------------------------------------------------------
// 7. ioredis only

/** An ioredis `Redis` or `Cluster` (of this or another copy of ioredis), or BullMQ's proxy of one. */
export function isIoredis(value: unknown): value is IoredisClient {
  if (value instanceof Redis || value instanceof Cluster) return true;
  // Another copy of ioredis, or BullMQ's proxy of a client: ioredis' shape. `defineCommand` is
  // also the mark BullMQ itself tells ioredis by (node-redis and Bun's client have none).
  const client = value as Record<string, unknown> | null;
  return (
    typeof client === 'object' &&
    client !== null &&
    typeof client.defineCommand === 'function' &&
    typeof client.sendCommand === 'function' &&
    typeof client.pipeline === 'function'
  );
}

/** A client object rather than connection options (BullMQ's own test: `connect`, `disconnect`, `duplicate`). */
function isClientInstance(value: unknown): boolean {
  const client = value as Record<string, unknown> | null;
  return (
    typeof client === 'object' &&
    client !== null &&
    ['connect', 'disconnect', 'duplicate'].every((name) => typeof client[name] === 'function')
  );
}

/**
 * Refuses a connection that is a client but not ioredis (node-redis, Bun, Valkey GLIDE…):
 * BullMQ 6 accepts them, the adapter's scripts run through ioredis only. Connection options
 * (BullMQ or the backend builds an ioredis client from them) pass.
 */
export function checkConnection(connection: unknown, what: string): void {
  if (isClientInstance(connection) && !isIoredis(connection)) throw notIoredis(what, connection);
}

export function notIoredis(what: string, client: unknown): BackendError {
  const kind = (client as { constructor?: { name?: string } } | null)?.constructor?.name ?? typeof client;
  return new BackendError(
    'bullmq',
    `${what}'s connection is not an ioredis client (got ${kind}): ojs-unique/bullmq runs its scripts through ioredis only; ` +
      'pass an ioredis Redis or Cluster (or connection options) instead of a node-redis, Bun or Valkey GLIDE client',
    { written: false },
  );
}
