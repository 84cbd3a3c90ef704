/**
 * `withUniqueness(flowProducer)`: a `FlowProducer` whose `add`/`addBulk` accept an OJS `unique`
 * policy on any leaf of a flow tree (a node without children: the root of a one-job flow, or a
 * child). Everything else is the flow producer itself; a tree without `unique` goes to its own
 * `add`/`addBulk`, untouched.
 *
 * A tree with a unique node under a parent is inserted by one script, `unique-flow`: the checks of
 * every node first (a parent that must exist, each unique node's policy), then each node as
 * BullMQ's FlowProducer would insert it (BullMQ's own script; ours for a unique node), then
 * BullMQ's release of parents left with nothing pending. It is all-or-nothing where BullMQ's
 * MULTI is not: a refused node (a `reject` duplicate, a taken id) leaves nothing written.
 *
 * A unique node that meets a duplicate is not inserted, and its parent does not wait for it, as a
 * node BullMQ's own deduplication drops from a flow; the node's `job` is the existing job with
 * the outcome. `unique` on a node with children is refused, naming the node, as BullMQ refuses
 * `deduplication` there: a duplicate parent would leave its children's place in the tree
 * undefined (docs/bullmq.md, "Flows").
 */
import { randomUUID } from 'node:crypto';
import { FlowProducer, Queue, SpanKind, TelemetryAttributes, type FlowJob, type FlowOpts, type Job, type Telemetry } from 'bullmq';
import { BackendError, InvalidJobInputError, isDuplicateJobError, underPath, type ValidationIssue } from '../../src/errors.js';
import { encodeNode, validateJobOptions, type FlowParentKeyOpts } from './bullmq-host.js';
import { queueHandle } from './bullmq-queue-handle.js';
import { UNIQUE_ADD_QUEUE_KEYS } from './bullmq-script-set.js';
import type { ScriptArgument } from './bullmq-script-command.js';
import { OUTCOME_ATTRIBUTE, openSpan, outcomeAttribute, traced, withStoredContext, type OpenSpan } from './bullmq-telemetry.js';
import type { PreparedUniqueAdd } from './bullmq-enqueue.js';
import { policyRegistry, type PolicyRegistry } from '../../src/registered-policies.js';
import {
  flowRefusalIssue,
  requireUniqueFlow,
  runUniqueFlow,
  uniqueFlowArgs,
  uniqueNodeArgs,
  type UniqueFlowReply,
} from './bullmq-unique-flow.js';
import type { AddOutcomeKind, PlainJob, UniqueJob, UniqueJobsOptions, UniqueQueue, WithUniquenessOptions } from './bullmq-types.js';

/**
 * What a flow add (with-unique-flows.ts) needs of a wrapped queue to insert a unique node itself:
 * the add's checks and encoding with the node's parent link, the job it hands back for a reply,
 * and the queue-set registration after a write.
 */
export interface FlowNodeSeam {
  prepare(
    name: string,
    data: unknown,
    opts: UniqueJobsOptions,
    parentKeyOpts: FlowParentKeyOpts,
  ): PreparedUniqueAdd | Promise<PreparedUniqueAdd>;
  jobFor(prepared: PreparedUniqueAdd, reply: unknown): UniqueJob<any, any, string, AddOutcomeKind>;
  register(): Promise<void>;
}

/** A flow node whose options may carry `unique` / `ojsMeta` (a node without children only). */
export type UniqueFlowJob = Omit<FlowJob, 'opts' | 'children'> & {
  opts?: NonNullable<FlowJob['opts']> & Pick<UniqueJobsOptions, 'unique' | 'ojsMeta'>;
  children?: UniqueFlowJob[];
};

/**
 * What `add` resolves to: BullMQ's `JobNode` (it goes wherever one does), each job a `UniqueJob`
 * for a unique node (for a duplicate, the existing job) and BullMQ's own, `unique?: undefined`,
 * for any other, so that `node.job.unique?.outcome` reads without a cast. A refused node throws,
 * so never `rejected`. BullMQ types a flow's data as `any`; so do its nodes.
 */
export interface UniqueJobNode {
  job: PlainJob<any, any, string> | UniqueJob<any, any, string, AddOutcomeKind>;
  children?: UniqueJobNode[];
}

export interface UniqueFlowProducerMethods {
  add(flow: UniqueFlowJob, opts?: FlowOpts): Promise<UniqueJobNode>;
  addBulk(flows: UniqueFlowJob[]): Promise<UniqueJobNode[]>;
  /** The flow producer that was wrapped. */
  readonly unwrapped: FlowProducer;
}

export type UniqueFlowProducer<F extends FlowProducer = FlowProducer> = UniqueFlowProducerMethods & F;

type WrapQueue = (queue: Queue, options: WithUniquenessOptions) => UniqueQueue;
type SeamOf = (queue: UniqueQueue) => FlowNodeSeam;

function asksUnique(opts: UniqueFlowJob['opts']): boolean {
  return opts != null && ((opts.unique !== undefined && opts.unique !== null) || opts.ojsMeta !== undefined);
}

/**
 * Whether a node is unique: its own options, or for a node without children, its queue's
 * `queuesOptions[queue].defaultJobOptions` under them (as BullMQ merges them; `unique: null`
 * opts out). A default does not apply to a node with children, where no policy can.
 */
function isUniqueNode(node: UniqueFlowJob, flowOpts: FlowOpts | undefined, registry: PolicyRegistry | null = null): boolean {
  if ((node.children ?? []).length > 0) return false;
  if (registry?.policyOf(node.name) !== undefined) return true;
  const defaults = flowOpts?.queuesOptions?.[node.queueName]?.defaultJobOptions as UniqueFlowJob['opts'] | undefined;
  return asksUnique(defaults === undefined ? node.opts : { ...defaults, ...node.opts });
}

function hasUniqueNode(node: UniqueFlowJob, flowOpts?: FlowOpts, registry: PolicyRegistry | null = null): boolean {
  return isUniqueNode(node, flowOpts, registry) || (node.children ?? []).some((child) => hasUniqueNode(child, flowOpts, registry));
}

/** The nodes that ask for a policy where it cannot be honoured (a node with children), as issues naming each. */
function refusedNodes(node: UniqueFlowJob, path: string, issues: ValidationIssue[], registry: PolicyRegistry | null): void {
  const children = node.children ?? [];
  if (asksUnique(node.opts) && children.length > 0) {
    issues.push({
      path: `${path}opts.unique`,
      message: 'unique is only supported on a flow node without children, as BullMQ deduplication (see docs/bullmq.md, "Flows")',
    });
  } else if (children.length > 0 && registry?.policyOf(node.name) !== undefined) {
    // A registered policy cannot be bypassed, and a node with children cannot hold one.
    issues.push({
      path: `${path}name`,
      message:
        'has a policy registered on this flow producer (policies), which a flow node with children cannot hold (see docs/bullmq.md, "Flows")',
    });
  }
  children.forEach((child, index) => refusedNodes(child, `${path}children[${index}].`, issues, registry));
}

/** One node as unique-flow takes it, with what is needed to answer for it. */
interface PlannedNode {
  path: string;
  kind: string;
  keys: string[];
  argv: ScriptArgument[];
  /** A unique node's sidecar layout keys (uniqueNodeArgs). */
  layout?: readonly string[];
  /** The Job handed back for a plain node; its id is set from the script's reply. */
  job: Job;
  prepared?: PreparedUniqueAdd;
  seam?: FlowNodeSeam;
  children?: PlannedNode[];
  /** BullMQ's `addNode` span, open until the reply names the node's job and outcome. */
  span?: OpenSpan;
}

interface Planned {
  root: PlannedNode;
  nodes: PlannedNode[];
  parents: Map<string, [string, string, string, string]>;
  seams: Set<FlowNodeSeam>;
  spans: OpenSpan[];
}

/** How a unique flow reaches the queues of its nodes. */
export interface FlowQueues {
  /** The wrapped queue of a node (opened on first need by the flow producer's wrapper). */
  queueOf(node: UniqueFlowJob): UniqueQueue;
  seamOf: SeamOf;
  /**
   * A root without `opts.jobId` gets the queue's counter id, as `queue.add` gives it, rather than
   * the UUID BullMQ's FlowProducer gives every node. (Default: false.)
   */
  counterRootId?: boolean;
  /**
   * The flow producer's `telemetry` option: each node gets the `addNode` span BullMQ's
   * FlowProducer makes, and its context is stored on the node's job. (Default: none.)
   */
  telemetry?: Telemetry;
  /** The flow producer's registered policies (`WithUniquenessOptions.policies`). */
  registry?: PolicyRegistry | null;
}

/** The tree as BullMQ's FlowProducer builds it (ids, options, parent links), encoded node by node. */
async function plan(
  flow: UniqueFlowJob,
  flowOpts: FlowOpts | undefined,
  pathPrefix: string,
  { queueOf, seamOf, counterRootId, telemetry, registry }: FlowQueues,
): Promise<Planned> {
  const planned: Planned = { root: undefined as never, nodes: [], parents: new Map(), seams: new Set(), spans: [] };
  const ids = new Map<string, string>();
  const visit = async (node: UniqueFlowJob, path: string, parent: { id: string; queue: string } | undefined): Promise<PlannedNode> => {
    const internals = queueHandle(queueOf(node).unwrapped).internals;
    const children = node.children ?? [];
    // A queue.add's counter id for a lone node when asked (the script's INCR names it); BullMQ's
    // FlowProducer gives every node a UUID.
    const counter = counterRootId === true && parent === undefined && children.length === 0;
    const jobId = node.opts?.jobId || (counter ? undefined : randomUUID());
    const seen = ids.get(`${internals.keys['']!}${jobId}`);
    const unique = isUniqueNode(node, flowOpts, registry);
    if (seen !== undefined && (unique || node.opts?.jobId !== undefined)) {
      throw new InvalidJobInputError([
        { path: `${path}opts.jobId`, message: `${seen}opts.jobId names the same job; a flow names each job once` },
      ]);
    }
    ids.set(`${internals.keys['']!}${jobId}`, path);
    // BullMQ's FlowProducer opens a node's span once its id is chosen; the id is set again from the reply.
    const span = telemetry && openSpan(telemetry, SpanKind.PRODUCER, node.queueName, 'addNode', node.queueName);
    if (span) {
      planned.spans.push(span);
      span.span.setAttributes({
        [TelemetryAttributes.JobName]: node.name,
        ...(jobId === undefined ? {} : { [TelemetryAttributes.JobId]: jobId }),
      });
    }
    try {
      return await place(node, path, parent, jobId, unique, span);
    } catch (error) {
      span?.span.recordException(error as Error);
      throw error;
    }
  };
  const place = async (
    node: UniqueFlowJob,
    path: string,
    parent: { id: string; queue: string } | undefined,
    jobId: string | undefined,
    unique: boolean,
    span: OpenSpan | undefined,
  ): Promise<PlannedNode> => {
    const queue = queueOf(node);
    const internals = queueHandle(queue.unwrapped).internals;
    const defaults = flowOpts?.queuesOptions?.[node.queueName]?.defaultJobOptions ?? {};
    const children = node.children ?? [];
    const parentOpts = parent ?? node.opts?.parent;
    const parentKey = parentOpts ? `${parentOpts.queue}:${parentOpts.id}` : undefined;
    const link: FlowParentKeyOpts = {
      parentKey,
      parentDependenciesKey: parentKey ? `${parentKey}:dependencies` : '',
      addToWaitingChildren: children.length > 0,
      deferParentRelease: true,
    };
    if (parentKey) planned.parents.set(parentKey, [parentKey, `${parentKey}:dependencies`, parentOpts!.queue, parentOpts!.id]);
    const opts = { ...defaults, ...node.opts, jobId, parent: parentOpts } as UniqueJobsOptions;
    // As BullMQ's FlowProducer: the context goes on a node that has options of its own.
    if (span) opts.telemetry = node.opts ? withStoredContext(node.opts.telemetry, span.metadata) : undefined;
    const data: unknown = node.data === undefined ? {} : node.data;
    const queueKeys = UNIQUE_ADD_QUEUE_KEYS.map((name) => internals.keys[name]!);
    let entry: PlannedNode;
    if (unique) {
      const seam = seamOf(queue);
      let prepared: PreparedUniqueAdd;
      try {
        prepared = await seam.prepare(node.name, data, opts, link);
      } catch (error) {
        throw underPath(error, path);
      }
      entry = { path, ...uniqueNodeArgs(prepared, internals.keys['waiting-children']!), job: prepared.job, prepared, seam };
      planned.seams.add(seam);
    } else {
      const { unique: _none, ojsMeta: _meta, jobId: _id, ...plain } = opts;
      // As BullMQ's FlowProducer: the id is the Job's, in its options only when the caller gave it.
      const job = new internals.Job(queue.unwrapped, node.name, data, node.opts?.jobId ? { ...plain, jobId } : plain, jobId);
      const jobData = job.asJSON();
      try {
        validateJobOptions(job, jobData);
      } catch (error) {
        throw new InvalidJobInputError([{ path: `${path}opts`, message: error instanceof Error ? error.message : String(error) }], {
          cause: error,
        });
      }
      const encoded = await encodeNode(internals, jobData, jobId, link);
      entry = {
        path,
        kind: encoded.script,
        keys: [...queueKeys, internals.keys.meta!, internals.keys['waiting-children']!],
        argv: encoded.argv,
        job,
      };
    }
    entry.span = span;
    planned.nodes.push(entry);
    // A node with children always has an id: a counter id is only for a lone node.
    if (children.length > 0) {
      const self = { id: jobId!, queue: internals.qualifiedName };
      entry.children = [];
      for (const [index, child] of children.entries()) {
        const visitChild = () => visit(child, `${path}children[${index}].`, self);
        entry.children.push(await (span ? span.within(visitChild) : visitChild()));
      }
    }
    return entry;
  };
  try {
    planned.root = await visit(flow, pathPrefix, undefined);
  } catch (error) {
    for (const span of planned.spans) span.end();
    throw error;
  }
  return planned;
}

/** A unique flow ready to send: unique-flow's arguments, and what its reply means. */
export interface PreparedUniqueFlow {
  args: ScriptArgument[];
  /** The root's Job (never stored when the flow is refused) and, for a unique root, its key. */
  root: { job: Job; uniquenessKey: string };
  /** The tree for unique-flow's reply (`readUniqueFlowReply`); throws the typed error of a refusal. */
  answer(reply: UniqueFlowReply): UniqueJobNode;
  /** Records the queues of the unique nodes in their prefix's queue set, after a write. */
  register(): Promise<void>;
  /** Ends the nodes' spans (with `FlowQueues.telemetry`), after `answer` has named each node's job. */
  endSpans(): void;
}

/**
 * Plans a flow tree that has a unique node under a parent (or a unique root with `opts.parent`)
 * for unique-flow. Also `queue.add` / `addBulk` of a unique job with `opts.parent` (with-uniqueness.ts).
 */
export async function prepareUniqueFlow(
  flow: UniqueFlowJob,
  flowOpts: FlowOpts | undefined,
  pathPrefix: string,
  queues: FlowQueues,
): Promise<PreparedUniqueFlow> {
  const tree = (flow.children ?? []).length > 0;
  requireUniqueFlow(tree, tree ? 'a flow tree with unique nodes' : 'a unique job with a parent');
  const planned = await plan(flow, flowOpts, pathPrefix, queues);
  return {
    // Routed by the root's meta key (a Cluster's slot: every key of a flow shares one).
    args: uniqueFlowArgs(planned.root.keys[2]!, planned.nodes, [...planned.parents.values()]),
    root: { job: planned.root.job, uniquenessKey: planned.root.prepared?.request.prepared?.key ?? '' },
    answer: (reply) => answerFlow(planned, reply),
    register: async () => {
      await Promise.all([...planned.seams].map((seam) => seam.register()));
    },
    endSpans: () => {
      for (const span of planned.spans) span.end();
    },
  };
}

/** Inserts a planned unique flow (`prepareUniqueFlow`) with unique-flow. */
export async function addUniqueFlow(
  flow: UniqueFlowJob,
  flowOpts: FlowOpts | undefined,
  pathPrefix: string,
  queues: FlowQueues,
): Promise<UniqueJobNode> {
  const prepared = await prepareUniqueFlow(flow, flowOpts, pathPrefix, queues);
  try {
    const tree = prepared.answer(await runUniqueFlow(await queueHandle(queues.queueOf(flow).unwrapped).client(), prepared.args));
    await prepared.register();
    return tree;
  } finally {
    prepared.endSpans();
  }
}

function answerFlow(planned: Planned, reply: UniqueFlowReply): UniqueJobNode {
  if (reply.answer !== 'done') {
    const node = planned.nodes[reply.node]!;
    switch (reply.answer) {
      case 'refused': {
        const issue = flowRefusalIssue(reply.detail, `${node.path}opts.unique`, 'node of the flow');
        if (issue) throw new InvalidJobInputError([issue]);
        // The node's refusal, as a single add of it throws it (DuplicateJobError, a taken id …).
        try {
          node.seam!.jobFor(node.prepared!, reply.detail);
        } catch (error) {
          if (isDuplicateJobError(error))
            node.span?.span.setAttributes({ [TelemetryAttributes.JobId]: error.existingJobId, [OUTCOME_ATTRIBUTE]: 'rejected' });
          node.span?.span.recordException(error as Error);
          throw underPath(error, node.path);
        }
        throw new BackendError('bullmq', `unique-flow refused node ${node.path || 'root'} without a refusal`, { written: false });
      }
      case 'parent_missing':
        throw new InvalidJobInputError([
          { path: `${node.path}opts.parent`, message: `the parent job ${String(reply.detail)} does not exist` },
        ]);
      case 'parent_taken':
        throw new InvalidJobInputError([
          { path: `${node.path}opts.jobId`, message: `job ${String(reply.detail)} is already the child of another parent` },
        ]);
      case 'failed':
        throw new BackendError(
          'bullmq',
          `unique-flow: node ${node.path || 'root'} failed while being written (nodes before it, if any, are written)`,
          { written: 'unknown' },
        );
    }
  }
  // In the order the nodes were planned (depth first, a parent before its children).
  const replies = reply.replies;
  const order = new Map(planned.nodes.map((node, i) => [node, i]));
  const answerFor = (node: PlannedNode): UniqueJobNode => {
    const nodeReply = replies[order.get(node)!];
    let job: UniqueJobNode['job'];
    if (node.prepared) job = node.seam!.jobFor(node.prepared, nodeReply);
    else {
      node.job.id = String(nodeReply);
      job = node.job as PlainJob<any, any, string>;
    }
    // A deduplicated node's span names the existing job.
    node.span?.span.setAttributes({ [TelemetryAttributes.JobId]: job.id!, ...outcomeAttribute(job) });
    return node.children ? { job, children: node.children.map(answerFor) } : { job };
  };
  return answerFor(planned.root);
}

export function wrapFlowProducer<F extends FlowProducer>(
  flowProducer: F,
  options: WithUniquenessOptions,
  wrapQueue: WrapQueue,
  seamOf: SeamOf,
): UniqueFlowProducer<F> {
  const queues = new Map<string, UniqueQueue>();
  const registry = policyRegistry(options.policies);
  // BullMQ's FlowProducer spans, from the flow producer's own option (never set on the queues
  // opened below, whose `add` would make a queue's span instead).
  const telemetry = flowProducer.opts.telemetry;
  const queueOf = (node: UniqueFlowJob): UniqueQueue => {
    const prefix = node.prefix ?? flowProducer.opts.prefix;
    const id = `${prefix ?? ''}\u0000${node.queueName}`;
    let queue = queues.get(id);
    if (!queue) {
      const opened = new Queue(node.queueName, { connection: flowProducer.opts.connection, prefix } as never);
      opened.on('error', () => undefined);
      queue = wrapQueue(opened, options);
      queues.set(id, queue);
    }
    return queue;
  };

  const check = (flows: UniqueFlowJob[], batch: boolean): void => {
    const issues: ValidationIssue[] = [];
    flows.forEach((flow, index) => refusedNodes(flow, batch ? `[${index}].` : '', issues, registry));
    if (issues.length > 0) throw new InvalidJobInputError(issues);
  };

  /** A childless unique root without a parent: the queue's own unique add (one fewer script to compose per add). */
  const isLoneRoot = (flow: UniqueFlowJob, flowOpts?: FlowOpts): boolean =>
    isUniqueNode(flow, flowOpts, registry) && flow.opts?.parent === undefined;

  const addLoneRoot = async (flow: UniqueFlowJob, flowOpts?: FlowOpts): Promise<UniqueJobNode> => {
    // A node without data is stored as `{}` by BullMQ's Job; the same payload here.
    const data: unknown = flow.data === undefined ? {} : flow.data;
    // As BullMQ's flow add does: the queue's defaultJobOptions given in `queuesOptions`, under the node's own.
    const defaults = flowOpts?.queuesOptions?.[flow.queueName]?.defaultJobOptions ?? {};
    const opts = { ...defaults, ...flow.opts } as UniqueJobsOptions & { unique: never };
    const span = telemetry && openSpan(telemetry, SpanKind.PRODUCER, flow.queueName, 'addNode', flow.queueName);
    if (!span) return { job: (await queueOf(flow).add(flow.name, data as never, opts)) as UniqueJob<any, any, string, AddOutcomeKind> };
    span.span.setAttributes({ [TelemetryAttributes.JobName]: flow.name });
    // As BullMQ's FlowProducer: the context goes on a node that has options of its own.
    opts.telemetry = flow.opts ? withStoredContext(flow.opts.telemetry, span.metadata) : undefined;
    try {
      const job = (await queueOf(flow).add(flow.name, data as never, opts)) as UniqueJob<any, any, string, AddOutcomeKind>;
      span.span.setAttributes({ [TelemetryAttributes.JobId]: job.id!, ...outcomeAttribute(job) });
      return { job };
    } catch (error) {
      if (isDuplicateJobError(error))
        span.span.setAttributes({ [TelemetryAttributes.JobId]: error.existingJobId, [OUTCOME_ATTRIBUTE]: 'rejected' });
      span.span.recordException(error as Error);
      throw error;
    } finally {
      span.end();
    }
  };

  const add = async (flow: UniqueFlowJob, opts?: FlowOpts): Promise<UniqueJobNode> => {
    check([flow], false);
    if (!hasUniqueNode(flow, opts, registry)) return flowProducer.add(flow as FlowJob, opts);
    // BullMQ's addFlow span, its nodes' addNode spans under it.
    return traced(telemetry, flow.queueName, 'addFlow', flow.queueName, async (span) => {
      span?.span.setAttributes({ [TelemetryAttributes.FlowName]: flow.name });
      if (isLoneRoot(flow, opts)) return addLoneRoot(flow, opts);
      return addUniqueFlow(flow, opts, '', { queueOf, seamOf, telemetry, registry });
    });
  };

  // Flows without a unique node go in BullMQ's one call, first; then each flow with one, in
  // order, each in its own script. Like BullMQ's addBulk, the batch is not one transaction.
  // BullMQ's addBulkFlows span covers the batch (BullMQ's own call makes its span for the plain
  // flows under it).
  const addBulk = async (flows: UniqueFlowJob[]): Promise<UniqueJobNode[]> => {
    check(flows, true);
    if (!flows.some((flow) => hasUniqueNode(flow, undefined, registry))) return flowProducer.addBulk(flows as FlowJob[]);
    return traced(telemetry, '', 'addBulkFlows', '', async (span) => {
      span?.span.setAttributes({
        [TelemetryAttributes.BulkCount]: flows.length,
        [TelemetryAttributes.BulkNames]: flows.map((flow) => flow.name).join(','),
      });
      const plain = flows.filter((flow) => !hasUniqueNode(flow, undefined, registry));
      const plainNodes = plain.length > 0 ? await flowProducer.addBulk(plain as FlowJob[]) : [];
      const out: UniqueJobNode[] = [];
      let next = 0;
      for (const [index, flow] of flows.entries()) {
        if (!hasUniqueNode(flow, undefined, registry)) out.push(plainNodes[next++]!);
        else if (isLoneRoot(flow)) out.push(await addLoneRoot(flow));
        else out.push(await addUniqueFlow(flow, undefined, `[${index}].`, { queueOf, seamOf, telemetry, registry }));
      }
      return out;
    });
  };

  const close = async (): Promise<void> => {
    await Promise.all([...queues.values()].map((queue) => queue.close()));
    queues.clear();
    await flowProducer.close();
  };

  const own = new Map<PropertyKey, unknown>([
    ['add', add],
    ['addBulk', addBulk],
    ['close', close],
  ]);
  return new Proxy(flowProducer, {
    get(target, property) {
      const mine = own.get(property);
      if (mine !== undefined) return mine;
      if (property === 'unwrapped') return target;
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  }) as unknown as UniqueFlowProducer<F>;
}
