/**
 * The engine: one unique add (encode the job exactly as BullMQ would, run `unique-add`: check,
 * decide and insert in one script, one round trip; decode the reply into an outcome or a typed
 * error), a batch of them in one pipeline (`sendBulk`), and the duplicate probe. Every entry
 * point sends through here: `withUniqueness`, flows (their nodes' arguments), the backend.
 *
 * Encoding goes through BullMQ's own (bullmq-host.ts, `encodeAdd`): the msgpacked arguments, the
 * short-key option encoding and the data string are byte-for-byte what a plain `queue.add` would
 * send, and stay so when BullMQ changes them.
 */
import { randomBytes } from 'node:crypto';
import type { Job, JobsOptions, Queue } from 'bullmq';
import { InvalidJobInputError, type ValidationIssue } from '../../src/errors.js';
import type { OjsJobState } from '../../src/job-state.js';
import type { PreparedUnique } from '../../src/unique-enqueue.js';
import { compactUniquePolicy, UPDATE_FIELDS, type UniquePolicy, type UpdateField } from '../../src/unique-policy.js';
import { nativePathServes } from './bullmq-native-path.js';
import { periodArgs } from './bullmq-period-args.js';
import { parsePeriod } from '../../src/period.js';
import { errorForReply, type ReplyProblem } from './bullmq-errors.js';
import { encodeAdd, validateJobOptions, type EncodedAdd, type FlowParentKeyOpts } from './bullmq-host.js';
import { queueHandle, type QueueHandle, type QueueLayout } from './bullmq-queue-handle.js';
import { encodedArguments, SCRIPT_HEAD, type EncodedArguments, type ScriptArgument } from './bullmq-script-command.js';
import {
  COMMANDS,
  runScript,
  sendScript,
  UNIQUE_ADD_ARGV,
  UNIQUE_ADD_ARGV_COUNT,
  UNIQUE_ADD_QUEUE_KEYS,
  UNIQUE_NATIVE_ADD_ARGV_COUNT,
  UNIQUE_PROBE_ARGV,
} from './bullmq-script-set.js';
import { countAddReply } from './bullmq-telemetry.js';
import { reportOnlyAdd } from './bullmq-report-only.js';
import type { ReportOnlyAnswer } from '../../src/report-only.js';
import { archiveKey, type IndexKey } from './bullmq-sidecar-keys.js';

export interface UniqueAddRequest {
  queue: Queue;
  name: string;
  data: unknown;
  /** BullMQ options, already merged with the queue's defaults, without `unique`/`ojsMeta`. */
  opts: JobsOptions;
  /** The policy and its key; null for the backend's plain enqueue with a caller-chosen id (only the id claim and BullMQ's add). */
  prepared: PreparedUnique | null;
  meta: Record<string, unknown>;
  /**
   * Retention of the archive of a job this add cancels, ms (0 = for ever), when the job's own
   * policy does not need it longer: the script decides from that policy (includes/ojs-own-policy).
   */
  cancelledRetentionMs: number;
  /**
   * The prefix's queue set (`queueRegistryKey`): a custom id must then be new in every queue of
   * the set, checked in the script that inserts. (Default: only this queue, BullMQ's own rule.)
   */
  idClaimQueues?: string;
  /**
   * Count a duplicate on the job it met (docs/decisions.md, "Duplicate counts"): unique-add's
   * ARGV[23] and unique-probe's ARGV[17]. (Default: false: nothing counted, nothing written.)
   */
  countDuplicates?: boolean;
  /** The field an "id already exists" error names: `id` (OJS) or `opts.jobId` (BullMQ). (Default: `id`.) */
  idPath?: string;
  /**
   * Whether a `reject`/`ignore` add of a fingerprint seen holding a job moments ago is first sent
   * as the small `unique-probe` (see bullmq-probe-hints.ts). (Default: true.)
   */
  probe?: boolean;
  /**
   * Whether the caller has refused, before this call, every option BullMQ's own check of a job
   * would refuse (`bullmqOptionIssues`, and an own `debounce`): a probe is then sent without
   * building BullMQ's Job first. (Default: false: BullMQ's check runs before anything is sent.)
   */
  bullmqOptionsChecked?: boolean;
  /** A flow node's link to its parent, as BullMQ's flow add encodes it (with-unique-flows.ts). (Default: none.) */
  parentKeyOpts?: FlowParentKeyOpts;
}

/** A job that already existed under the fingerprint, as the script saw it. */
export interface ObservedJob {
  id: string;
  queue: string;
  state: OjsJobState;
  /** The job's Redis hash (the archive's for a cancelled job). */
  hash: Record<string, string>;
}

export type UniqueAddReply =
  /** `report`: a report-only add (src/report-only.ts), inserted whatever its policy would have done. */
  | { outcome: 'created'; job: Job; now: number; report?: ReportOnlyAnswer }
  /** `successor`: x_successor kept the add as the active job's pending successor, which will have this id. */
  | { outcome: 'deduplicated'; existing: ObservedJob; now: number; successor?: string }
  /** x_update: `existing` after the update in place; `changed` in UPDATE_FIELDS order. */
  | { outcome: 'updated'; existing: ObservedJob; now: number; changed: UpdateField[] }
  | { outcome: 'replaced'; job: Job; now: number; replaced: ObservedJob[] };

/** An add ready to send: the Job instance (id still unset for counter ids) and its script arguments. */
export interface PreparedUniqueAdd {
  request: UniqueAddRequest;
  job: Job;
  /**
   * The script: unique-add, or unique-native-add for an add that tries the native path first
   * (the same add with the arguments that path reads: lua/unique-native-add-12.lua).
   */
  command: typeof COMMANDS.uniqueAdd | typeof COMMANDS.uniqueNativeAdd;
  /**
   * The command, built once: `SCRIPT_HEAD` slots, the script's KEYS, its ARGV, then the layout
   * check (`layoutArgs`). `sendUniqueAdd` hands it to the script as it is.
   */
  args: ScriptArgument[];
  /** Where the layout check starts in `args`. */
  argvEnd: number;
  /** Runs of `args` already in RESP, in order: the queue's (its keys, names, layout check) and the policy's. */
  segments: readonly EncodedArguments[];
  /** The layout keys of the sidecar namespaces the add touches (`layoutArgs`, sent after ARGV). */
  layout: readonly string[];
}

/** unique-add's KEYS and ARGV (without the layout check) of a prepared add, as copies (a flow node's). */
export function uniqueAddKeysAndArgv(prepared: PreparedUniqueAdd): { keys: string[]; argv: ScriptArgument[] } {
  const keysEnd = SCRIPT_HEAD + UNIQUE_ADD_KEY_COUNT;
  const keys = prepared.args.slice(SCRIPT_HEAD, keysEnd) as string[];
  const argv = prepared.args.slice(keysEnd, prepared.argvEnd);
  if (prepared.command === COMMANDS.uniqueAdd) return { keys, argv };
  // unique-native-add's: unique-add's ARGV as that script fills it in (lua/unique-native-add-12.lua).
  const [a1, a2, a3, a4, queueName, key, onConflict, states, stored, meta, token, flag] = argv;
  // prettier-ignore
  return { keys, argv: [
    a1!, a2!, a3!, a4!, queueName!, key!, onConflict!, states!, '', '', '', stored!, meta!,
    prepared.request.cancelledRetentionMs, '', token!, 0, queueName!, '', '', '', flag!,
  ] };
}

const UNIQUE_ADD_KEY_COUNT = UNIQUE_ADD_QUEUE_KEYS.length + 1;

/** The BullMQ `Job` of an add, its options validated by BullMQ (which throws as `queue.add` would). */
function validatedJob(request: UniqueAddRequest): { job: Job; jobData: ReturnType<Job['asJSON']> } {
  const job = new (queueHandle(request.queue).internals.Job)(request.queue, request.name, request.data, request.opts, request.opts.jobId);
  const jobData = job.asJSON();
  validateJobOptions(job, jobData);
  return { job, jobData };
}

/** An add ready to send; synchronous when BullMQ's encoding is (`encodeAdd`), so the hot path awaits nothing here. */
export function prepareUniqueAdd(
  request: UniqueAddRequest,
  validated = validatedJob(request),
): PreparedUniqueAdd | Promise<PreparedUniqueAdd> {
  const constants = queueHandle(request.queue);
  const encoded = encodeAdd(constants.internals, validated.jobData, validated.job.id, request.parentKeyOpts);
  return encoded instanceof Promise
    ? encoded.then((add) => preparedAdd(request, constants, validated.job, add))
    : preparedAdd(request, constants, validated.job, encoded);
}

function preparedAdd(
  request: UniqueAddRequest,
  constants: QueueHandle,
  job: Job,
  [packedArgs, data, packedOpts]: EncodedAdd,
): PreparedUniqueAdd {
  const queue = constants.internals;
  const { rootPrefix, queueKeys, queueIndex, prefixIndex } = constants;
  const idClaimQueues = request.idClaimQueues ?? '';
  const [k1, k2, k3, k4, k5, k6, k7, k8, k9, k10, k11] = queueKeys;
  const unique = request.prepared;
  const p = unique === null ? undefined : policyArgsOf(unique);
  // No policy: the script only claims the id and runs BullMQ's add. It never touches the index;
  // the queue's meta key stands in for it (same hash slot).
  const index = p === undefined || p.queueDimension ? queueIndex : prefixIndex;
  const layout = layoutOf(constants, index, idClaimQueues);
  // The layout check's arguments (`layoutArgs`: version, one or two keys, count) in the array
  // literals below, so that each is allocated at its final length.
  const [l1, l2, l3, l4] = layout.args;
  let args: ScriptArgument[];
  let segments: EncodedArguments[];
  if (p !== undefined && nativeFlag(p, request, idClaimQueues, index.home, queue.name) === 'n') {
    // The native path's arguments only (lua/unique-native-add-12.lua); its layout check is the
    // queue index's alone (no id claimed across queues).
    segments = [constants.encodedKeys.queue, constants.encodedNames, p.encodedNative, layout.encodedForNative];
    // prettier-ignore
    args = [
      '', 0, k1!, k2!, k3!, k4!, k5!, k6!, k7!, k8!, k9!, k10!, k11!, index.key,
      packedArgs, data, packedOpts, rootPrefix, queue.name,
      unique!.key, p.onConflict, p.states, p.stored, metaArg(request.meta), requestToken(), 'n',
      request.countDuplicates ? 'c' : '',
      l1!, l2!, l3!,
    ];
    return {
      request,
      job,
      command: COMMANDS.uniqueNativeAdd,
      args,
      argvEnd: UNIQUE_ADD_ARGV + UNIQUE_NATIVE_ADD_ARGV_COUNT,
      segments,
      layout: layout.keys,
    };
  }
  if (p === undefined) {
    segments = [constants.encodedKeys.meta, constants.encodedNames, layout.encoded];
    // prettier-ignore
    args = [
      '', 0, k1!, k2!, k3!, k4!, k5!, k6!, k7!, k8!, k9!, k10!, k11!, queue.keys.meta!,
      packedArgs, data, packedOpts, rootPrefix, queue.name, '', 'reject', '', '', '', '', 'null', '{}',
      request.cancelledRetentionMs, idClaimQueues, requestToken(), 0, '', '', '', '', '', '',
      l1!, l2!, l3!,
    ];
  } else {
    segments = [
      p.queueDimension ? constants.encodedKeys.queue : constants.encodedKeys.prefix,
      constants.encodedNames,
      p.encodedDecision,
      p.encodedExtensions,
      layout.encoded,
    ];
    // prettier-ignore
    args = [
      '', 0, k1!, k2!, k3!, k4!, k5!, k6!, k7!, k8!, k9!, k10!, k11!, index.key,
      packedArgs, data, packedOpts, rootPrefix, queue.name,
      unique!.key, p.onConflict, p.states, p.years, p.months, p.fixedMs,
      p.stored, metaArg(request.meta), request.cancelledRetentionMs, idClaimQueues, requestToken(),
      p.terminalBits, index.home, p.anchor, p.anchoredPeriod, p.update,
      nativeFlag(p, request, idClaimQueues, index.home, queue.name), request.countDuplicates ? 'c' : '',
      l1!, l2!, l3!,
    ];
  }
  if (l4 !== undefined) args.push(l4);
  return {
    request,
    job,
    command: COMMANDS.uniqueAdd,
    args,
    argvEnd: UNIQUE_ADD_ARGV + UNIQUE_ADD_ARGV_COUNT,
    segments,
    layout: layout.keys,
  };
}

/**
 * unique-add's ARGV[22] and unique-probe's ARGV[15]: "n" when the add may take the native path (a
 * policy it serves, a lone add); not to a queue whose name is not in NFC: it shares its index with
 * its NFC twin, under whose base BullMQ's deduplication keys are not.
 */
function nativeFlag(p: PolicyArgs, request: UniqueAddRequest, idClaimQueues: string, home: string, queueName: string): 'n' | '' {
  return p.native && request.parentKeyOpts === undefined && idClaimQueues === '' && home === queueName ? 'n' : '';
}

/**
 * What a policy alone gives unique-add and unique-probe, worked out once per remembered policy
 * (keyed by `PreparedUnique#policyToken`; the caller's policy object is only read).
 */
interface PolicyArgs {
  /** Whether the policy has the `queue` dimension (the queue's index, else the prefix's). */
  queueDimension: boolean;
  onConflict: string;
  states: string;
  years: number | '';
  months: number | '';
  fixedMs: number | '';
  /**
   * Without its defaults: the full form is longer than Redis' listpack value limit (64 bytes)
   * and would turn every unique job's hash into a hashtable, several times the memory and slower
   * to write.
   */
  stored: string;
  terminalBits: number;
  anchor: string;
  anchoredPeriod: string;
  update: string;
  /** Whether BullMQ's own deduplication key answers the policy (bullmq-native-path.ts). */
  native: boolean;
  /** unique-add's ARGV[7..12] (on_conflict … stored) and ARGV[19..21] (anchor … update), in RESP. */
  encodedDecision: EncodedArguments;
  encodedExtensions: EncodedArguments;
  /** unique-native-add's ARGV[7..9] (on_conflict, states, stored), in RESP. */
  encodedNative: EncodedArguments;
  /** unique-probe's ARGV[7..12] (on_conflict … terminal bits), in RESP. */
  encodedProbeDecision: EncodedArguments;
}

const perPolicy = new WeakMap<object, PolicyArgs>();

function policyArgsOf(prepared: PreparedUnique): PolicyArgs {
  const token = prepared.policyToken;
  let args = token === undefined ? undefined : perPolicy.get(token);
  if (args === undefined) {
    const policy = prepared.policy;
    const period = periodArgs(policy);
    const decision: Omit<PolicyArgs, 'encodedDecision' | 'encodedExtensions' | 'encodedNative' | 'encodedProbeDecision'> = {
      queueDimension: policy.keys.includes('queue'),
      onConflict: policy.on_conflict,
      states: policy.states.join(','),
      years: period ? period.years : '',
      months: period ? period.months : '',
      fixedMs: period ? period.fixedMs : '',
      stored: JSON.stringify(compactUniquePolicy(policy)),
      terminalBits: terminalBits(policy),
      anchor: policy.x_period_anchor ?? '',
      anchoredPeriod: anchoredPeriodArg(policy),
      update: updateArg(policy),
      native: nativePathServes(policy, true),
    };
    const computed: PolicyArgs = {
      ...decision,
      encodedDecision: encodedArguments(UNIQUE_ADD_ARGV + 6, [
        decision.onConflict,
        decision.states,
        decision.years,
        decision.months,
        decision.fixedMs,
        decision.stored,
      ]),
      encodedExtensions: encodedArguments(UNIQUE_ADD_ARGV + 18, [decision.anchor, decision.anchoredPeriod, decision.update]),
      encodedNative: encodedArguments(UNIQUE_ADD_ARGV + 6, [decision.onConflict, decision.states, decision.stored]),
      encodedProbeDecision: encodedArguments(UNIQUE_PROBE_ARGV + 6, [
        decision.onConflict,
        decision.states,
        decision.years,
        decision.months,
        decision.fixedMs,
        decision.terminalBits,
      ]),
    };
    if (token !== undefined) perPolicy.set(token, computed);
    args = computed;
  }
  return args;
}

/**
 * The namespaces whose layout an add checks (lua/includes/ojs-layout.lua): its index's, and the
 * prefix's too when its id claim spans the backend's queues (`<prefix>ojs:global:queues`).
 */
function layoutOf(constants: QueueHandle, index: IndexKey, idClaimQueues: string): QueueLayout {
  if (index === constants.prefixIndex) return constants.prefixLayout;
  return idClaimQueues === '' ? constants.queueLayout : constants.bothLayouts;
}

/**
 * A fresh token per add, stored on the job the add inserts (`ojsReq`): when ioredis re-sends the
 * script after a lost reply, the second run recognises its own job and answers as the first did
 * (lua/includes/ojs-replay.lua). A random per-process part (48 bits) and a counter: unique within
 * the process by construction, across processes but for a 2^-48 chance per pair, and it only has
 * to differ among the jobs of one fingerprint or one id. About 10 characters; no crypto call per add.
 */
const TOKEN_NONCE = randomBytes(6).toString('base64url');
let tokenCounter = 0;
function requestToken(): string {
  tokenCounter += 1;
  return TOKEN_NONCE + tokenCounter.toString(36);
}

/** OJS meta as stored on the job: nothing for the default `{}` (the job view reads a missing one as `{}`). */
function metaArg(meta: Record<string, unknown>): string {
  for (const _ in meta) return JSON.stringify(meta);
  return '';
}

/** The terminal states a policy counts, as the index stores them (lua/includes/ojs-own-policy.lua). */
export function terminalBits(policy: UniquePolicy): number {
  const states = policy.states;
  return (states.includes('completed') ? 1 : 0) + (states.includes('discarded') ? 2 : 0) + (states.includes('cancelled') ? 4 : 0);
}

/**
 * `x_period_anchor` with a period: the period as the job hash keeps it (`ojsPeriod`,
 * lua/includes/ojs-own-policy.lua), so the index can recompute the window's end from where the
 * anchor is now. '' otherwise.
 */
function anchoredPeriodArg(policy: UniquePolicy): string {
  const period = policy.x_period_anchor ? periodArgs(policy) : null;
  if (!period) return '';
  const kind = policy.x_period_anchor === 'scheduled_at' ? 's' : policy.x_period_anchor === 'finished_at' ? 'f' : 'l';
  return `${kind},${period.years},${period.months},${period.fixedMs}`;
}

/**
 * `x_update` as unique-add reads it (ARGV[21]): per state, the fields in UPDATE_FIELDS order, and
 * `x_max_wait` as "~maxWait": [years, months, fixed ms], `x_successor` as "~successor": its mode
 * (lua/includes/ojs-read-policy); '' for none.
 */
function updateArg(policy: UniquePolicy): string {
  if (!policy.x_update && policy.x_successor === undefined) return '';
  const update: Record<string, UpdateField[] | number[] | string> = {};
  if (policy.x_successor !== undefined) update['~successor'] = policy.x_successor;
  if (!policy.x_update) return JSON.stringify(update);
  for (const [state, fields] of Object.entries(policy.x_update)) update[state] = UPDATE_FIELDS.filter((field) => fields!.includes(field));
  if (policy.x_max_wait !== undefined) {
    const cap = parsePeriod(policy.x_max_wait);
    update['~maxWait'] = [cap.years, cap.months, cap.fixedPartMs];
  }
  return JSON.stringify(update);
}

/** Sends a prepared add on `target` (the queue's client, or a pipeline of it). */
export function sendUniqueAdd(target: object, prepared: PreparedUniqueAdd): Promise<unknown> {
  return sendScript(target, prepared.command, prepared.args, prepared.segments);
}

export async function uniqueAdd(request: UniqueAddRequest): Promise<UniqueAddReply> {
  if (request.prepared?.reportOnly === true) return reportOnlyAdd(request, request.prepared, uniqueAdd);
  const constants = queueHandle(request.queue);
  const client = constants.readyClient ?? (await constants.client());
  // BullMQ's Job (its option check and encoding) is built only for an add that may insert: a
  // probe needs none of it, once the caller's checks have refused what BullMQ's check would.
  const validated = request.bullmqOptionsChecked === true ? undefined : validatedJob(request);
  const unique = request.prepared;
  // Only reject and ignore can end without a write; a replace always writes, so it is never probed,
  // nor is a policy with x_update or x_successor (its answer may be an update, or keep a successor).
  const probeable =
    unique !== null &&
    request.probe !== false &&
    unique.policy.x_update === undefined &&
    unique.policy.x_successor === undefined &&
    (unique.policy.on_conflict === 'reject' || unique.policy.on_conflict === 'ignore');
  const hints = probeable ? constants.hints : undefined;
  // A hint is per key and index (a policy with and without `queue` can share a key).
  const fingerprint = probeable ? unique.key + (policyArgsOf(unique).queueDimension ? 'q' : 'g') : '';
  // Replies are decoded without throwing, so that a duplicate's error is built and thrown once,
  // here, after its hint is renewed.
  let decoded: UniqueAddReply | ReplyProblem | null = null;
  let probed = false;
  if (hints?.has(fingerprint)) {
    const probe = probeArgs(request, constants);
    const reply = await sendScript(client, COMMANDS.uniqueProbe, probe.args, probe.segments);
    // A miss: the job this hint was about no longer counts. Nothing was written; the full add decides.
    if (Array.isArray(reply) && reply[0] === 'miss') hints.forget(fingerprint);
    else {
      decoded = noInsertOutcome(request, reply);
      probed = true;
    }
  }
  if (decoded === null) {
    const pending = prepareUniqueAdd(request, validated);
    const prepared = pending instanceof Promise ? await pending : pending;
    decoded = uniqueAddOutcome(prepared, await sendUniqueAdd(client, prepared));
  }
  countAddReply(request, decoded);
  if ('code' in decoded) {
    if (decoded.code === 'duplicate' || decoded.code === 'active') hints?.remember(fingerprint);
    throw errorForReply(decoded);
  }
  // Only a duplicate sets a hint, not the add that created the job: most created keys are never
  // added again within a hint's life, and an insert then pays nothing for hints but a lookup.
  if (!probed && decoded.outcome === 'deduplicated') hints?.remember(fingerprint);
  return decoded;
}

/** unique-probe's arguments, and the runs of them in RESP already (the queue's, the policy's). */
function probeArgs(request: UniqueAddRequest, constants: QueueHandle): { args: ScriptArgument[]; segments: EncodedArguments[] } {
  const queue = constants.internals;
  const { key } = request.prepared!;
  const p = policyArgsOf(request.prepared!);
  const index = p.queueDimension ? constants.queueIndex : constants.prefixIndex;
  const idClaimQueues = request.idClaimQueues ?? '';
  const layout = layoutOf(constants, index, idClaimQueues);
  const [l1, l2, l3, l4] = layout.args;
  // prettier-ignore
  const args: ScriptArgument[] = [
    '', 0, index.key, queue.keys.events!, queue.keys.meta!,
    constants.rootPrefix, queue.name, constants.base, request.opts.jobId ?? '', idClaimQueues,
    key, p.onConflict, p.states, p.years, p.months, p.fixedMs, p.terminalBits, index.home, p.anchor,
    nativeFlag(p, request, idClaimQueues, index.home, queue.name), requestToken(), request.countDuplicates ? 'c' : '',
    l1!, l2!, l3!,
  ];
  if (l4 !== undefined) args.push(l4);
  const head = p.queueDimension ? constants.encodedProbeHead.queue : constants.encodedProbeHead.prefix;
  return { args, segments: [head, p.encodedProbeDecision, layout.encodedForProbe] };
}

/** What both scripts decide on, in their argument order: key, on_conflict, states, period (years, months, fixed ms). */
export function decisionArgs(policy: UniquePolicy, key: string): (string | number)[] {
  const period = periodArgs(policy);
  return [
    key,
    policy.on_conflict,
    policy.states.join(','),
    period ? period.years : '',
    period ? period.months : '',
    period ? period.fixedMs : '',
  ];
}

export function decodeUniqueAddReply(prepared: PreparedUniqueAdd, reply: unknown): UniqueAddReply {
  const decoded = uniqueAddOutcome(prepared, reply);
  countAddReply(prepared.request, decoded);
  if ('code' in decoded) throw errorForReply(decoded);
  return decoded;
}

const CREATED_PREFIX = 'created:';

/** unique-add's reply: the outcome, or the problem to throw (errorForReply). */
function uniqueAddOutcome(prepared: PreparedUniqueAdd, reply: unknown): UniqueAddReply | ReplyProblem {
  const { job } = prepared;
  // unique-native-add's created job, one string: "created:<nowMs>:<deduplication id or ''>:<jobId>".
  if (typeof reply === 'string' && reply.startsWith(CREATED_PREFIX)) {
    const nowEnd = reply.indexOf(':', CREATED_PREFIX.length);
    const idStart = reply.indexOf(':', nowEnd + 1) + 1;
    const now = Number(reply.slice(CREATED_PREFIX.length, nowEnd));
    job.id = reply.slice(idStart);
    job.timestamp = now;
    if (idStart - 1 > nowEnd + 1) job.deduplicationId = reply.slice(nowEnd + 1, idStart - 1);
    return { outcome: 'created', job, now };
  }
  if (!Array.isArray(reply) || typeof reply[0] !== 'string') return { code: 'unknown', reply };
  switch (reply[0]) {
    case 'created':
    case 'replaced': {
      job.id = String(reply[1]);
      // created_at is Redis' TIME, not the producer's clock (§7.2); the Job says so too.
      job.timestamp = Number(reply[2]);
      if (reply[0] === 'created') {
        // The native path's job: BullMQ's deduplication id, as getJob reads it back.
        if (typeof reply[3] === 'string') job.deduplicationId = reply[3];
        return { outcome: 'created', job, now: Number(reply[2]) };
      }
      // Each duplicate the replace superseded: cancelled (its archive), or finished and left as it was.
      const replaced = (reply[3] as unknown[][]).map((entry) => ({
        id: String(entry[0]),
        queue: String(entry[1]),
        state: String(entry[2]) as OjsJobState,
        hash: pairs(entry[3]),
      }));
      return { outcome: 'replaced', job, now: Number(reply[2]), replaced };
    }
    default:
      return noInsertOutcome(prepared.request, reply);
  }
}

/** The replies shared by unique-add and unique-probe: nothing was inserted. */
function noInsertOutcome(request: UniqueAddRequest, reply: unknown): UniqueAddReply | ReplyProblem {
  if (!Array.isArray(reply) || typeof reply[0] !== 'string') return { code: 'unknown', reply };
  switch (reply[0]) {
    case 'ignored':
      return {
        outcome: 'deduplicated',
        existing: { id: String(reply[1]), state: reply[2] as OjsJobState, queue: String(reply[3]), hash: pairs(reply[5]) },
        now: Number(reply[4]),
      };
    case 'successor':
      return {
        outcome: 'deduplicated',
        existing: { id: String(reply[1]), state: reply[2] as OjsJobState, queue: String(reply[3]), hash: pairs(reply[5]) },
        now: Number(reply[4]),
        successor: String(reply[6]),
      };
    case 'updated':
      return {
        outcome: 'updated',
        existing: { id: String(reply[1]), state: reply[2] as OjsJobState, queue: String(reply[3]), hash: pairs(reply[5]) },
        now: Number(reply[4]),
        changed: Array.isArray(reply[6]) ? (reply[6] as UpdateField[]) : [],
      };
    case 'duplicate':
    case 'active':
      return {
        code: reply[0],
        existingJobId: String(reply[1]),
        existingJobState: reply[2] as OjsJobState,
        uniquenessKey: request.prepared?.key ?? '',
      };
    case 'id_exists':
      return { code: 'id_exists', jobId: String(reply[1]), path: request.idPath ?? 'id' };
    case 'refused_option':
      return { code: 'refused_option', path: String(reply[1]) };
    case 'bullmq_error':
      return { code: 'bullmq_error', bullmqCode: Number(reply[1]) };
    case 'counter_id_taken':
      return { code: 'counter_id_taken', jobId: String(reply[1]) };
    case 'successor_queue':
      return { code: 'successor_queue', queue: String(reply[1]) };
    default:
      return { code: 'unknown', reply };
  }
}

/** A flat HGETALL reply as an object. */
export function pairs(flat: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!Array.isArray(flat)) return out;
  for (let i = 0; i + 1 < flat.length; i += 2) out[String(flat[i])] = String(flat[i + 1]);
  return out;
}

/** An entry of a batch, ready to send: a unique add, a child of an existing parent (a one-node unique-flow), or a plain add. */
export type BulkEntry =
  | { kind: 'unique'; prepared: PreparedUniqueAdd }
  | { kind: 'child'; flow: { args: ScriptArgument[] }; jobId: string | undefined }
  | { kind: 'plain'; job: Job };

/**
 * A batch in one pipeline, in order, as BullMQ's own addBulk sends it: each add atomic on its own
 * (plain ones BullMQ's script, unique ones unique-add), the batch not a transaction, exactly as
 * BullMQ's addBulk is not. Redis runs a pipeline's commands in order, so a duplicate within the
 * batch meets the earlier job as if the jobs had been added one by one. Refused before anything
 * is sent when a unique entry's `jobId` is taken (`refuseTakenIds`). Each entry's error or reply.
 */
export async function sendBulk(handle: QueueHandle, entries: readonly BulkEntry[]): Promise<[Error | null, unknown][]> {
  const internals = handle.internals;
  const client = await handle.client();
  await refuseTakenIds(
    client as unknown as IdLookupClient,
    handle.base,
    entries.map((entry) =>
      entry.kind === 'unique'
        ? { unique: true, jobId: entry.prepared.request.opts.jobId }
        : entry.kind === 'child'
          ? { unique: true, jobId: entry.jobId }
          : { unique: false, jobId: entry.job.opts.jobId },
    ),
  );
  const pipeline = client.pipeline();
  const plainIds: Promise<unknown>[] = [];
  for (const entry of entries) {
    if (entry.kind === 'unique') void sendUniqueAdd(pipeline, entry.prepared);
    // Its reply is read from exec's, as a unique add's.
    else if (entry.kind === 'child') void runScript(pipeline, COMMANDS.uniqueFlow, entry.flow.args).catch(ignoreError);
    else
      plainIds.push(
        internals.backend.addJobToTransaction(pipeline, entry.job.asJSON(), entry.job.id, {
          parentKey: undefined,
          parentDependenciesKey: '',
        }),
      );
  }
  const results = (await pipeline.exec()) ?? [];
  // Each command's own promise settles with its reply or error; the replies are read from exec's.
  await Promise.allSettled(plainIds);
  return entries.map((_, index) => results[index] ?? [new Error('missing pipeline reply'), null]);
}

function ignoreError(): void {}

interface IdLookupClient {
  pipeline(): { exists(...keys: string[]): unknown; exec(): Promise<[Error | null, unknown][] | null> };
}

/**
 * Refuses the batch, before anything is written, when a unique job's `jobId` is taken: by an
 * earlier job of the same batch, or by a job or cancelled archive already in the queue (the
 * script would refuse it anyway, but only after the jobs before it were written). A concurrent
 * add can still take an id between this look-up and the pipeline: that entry is then reported
 * `rejected`, not thrown.
 */
async function refuseTakenIds(client: IdLookupClient, base: string, ids: { unique: boolean; jobId: string | undefined }[]): Promise<void> {
  const issues: ValidationIssue[] = [];
  const seen = new Set<string>();
  const lookups: { index: number; id: string }[] = [];
  ids.forEach(({ unique, jobId }, index) => {
    if (jobId === undefined) return;
    if (unique && seen.has(jobId))
      issues.push({ path: `[${index}].opts.jobId`, message: `an earlier job of the batch has the id ${jobId}` });
    else if (unique) lookups.push({ index, id: jobId });
    seen.add(jobId);
  });
  if (lookups.length > 0) {
    const pipeline = client.pipeline();
    for (const { id } of lookups) pipeline.exists(`${base}${id}`, archiveKey(base, id));
    const replies = (await pipeline.exec()) ?? [];
    lookups.forEach(({ index, id }, i) => {
      const [error, count] = replies[i] ?? [new Error('missing pipeline reply'), 0];
      if (error) throw error;
      if (Number(count) > 0) issues.push({ path: `[${index}].opts.jobId`, message: `a job with id ${id} already exists` });
    });
  }
  if (issues.length > 0) throw new InvalidJobInputError(issues.sort((a, b) => a.path.localeCompare(b.path)));
}
