/**
 * `withUniqueness(flowProducer)`: a `FlowProducer` whose `add`/`addBulk` accept an OJS `unique`
 * policy on a flow's root when the root is the whole flow (no children). Everything else is the
 * flow producer itself; a tree without `unique` goes to its own `add`/`addBulk`, untouched.
 *
 * Why not on every node: BullMQ adds a flow in one MULTI, the parent in `waiting-children` with
 * its children's dependency keys; `unique-add` splices BullMQ's three plain add scripts, not its
 * parent/child bookkeeping, so a unique node with children or under a parent cannot be decided
 * and inserted atomically with the rest of its tree. Such a node is refused before anything is
 * written, with an `InvalidJobInputError` naming the node (`children[0].opts.unique`), rather
 * than half-honoured (docs/bullmq.md, "Flows").
 */
import { FlowProducer, Queue, type FlowJob, type FlowOpts, type JobNode } from 'bullmq';
import { InvalidJobInputError, type ValidationIssue } from '../../src/errors.js';
import type { UniqueJob, UniqueJobsOptions, UniqueQueue, WithUniquenessOptions } from './with-uniqueness.js';

/** A flow node whose options may carry `unique` / `ojsMeta` (only a childless root may use them). */
export type UniqueFlowJob = Omit<FlowJob, 'opts' | 'children'> & {
  opts?: NonNullable<FlowJob['opts']> & Pick<UniqueJobsOptions, 'unique' | 'ojsMeta'>;
  children?: UniqueFlowJob[];
};

/** What `add` resolves to: BullMQ's `JobNode`; for a unique root, its job is a `UniqueJob`. */
export type UniqueJobNode = JobNode | { job: UniqueJob; children?: undefined };

export interface UniqueFlowProducerMethods {
  add(flow: UniqueFlowJob, opts?: FlowOpts): Promise<UniqueJobNode>;
  addBulk(flows: UniqueFlowJob[]): Promise<UniqueJobNode[]>;
  /** The flow producer that was wrapped. */
  readonly unwrapped: FlowProducer;
}

export type UniqueFlowProducer<F extends FlowProducer = FlowProducer> = UniqueFlowProducerMethods & F;

type WrapQueue = (queue: Queue, options: WithUniquenessOptions) => UniqueQueue;

function asksUnique(opts: UniqueFlowJob['opts']): boolean {
  return opts != null && ((opts.unique !== undefined && opts.unique !== null) || opts.ojsMeta !== undefined);
}

/** The nodes that ask for a policy where it cannot be honoured, as issues naming each. */
function refusedNodes(node: UniqueFlowJob, path: string, root: boolean, issues: ValidationIssue[]): void {
  const children = node.children ?? [];
  if (asksUnique(node.opts) && !(root && children.length === 0)) {
    issues.push({
      path: `${path}opts.unique`,
      message: root
        ? 'unique is only supported on a flow root without children (see docs/bullmq.md, "Flows")'
        : 'unique is not supported on a flow child (see docs/bullmq.md, "Flows")',
    });
  }
  children.forEach((child, index) => refusedNodes(child, `${path}children[${index}].`, false, issues));
}

export function wrapFlowProducer<F extends FlowProducer>(
  flowProducer: F,
  options: WithUniquenessOptions,
  wrapQueue: WrapQueue,
): UniqueFlowProducer<F> {
  const queues = new Map<string, UniqueQueue>();
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
    flows.forEach((flow, index) => refusedNodes(flow, batch ? `[${index}].` : '', true, issues));
    if (issues.length > 0) throw new InvalidJobInputError(issues);
  };

  const addUniqueRoot = async (flow: UniqueFlowJob, flowOpts?: FlowOpts): Promise<UniqueJobNode> => {
    // A node without data is stored as `{}` by BullMQ's Job; the same payload here.
    const data: unknown = flow.data === undefined ? {} : flow.data;
    // As BullMQ's flow add does: the queue's defaultJobOptions given in `queuesOptions`, under the node's own.
    const defaults = flowOpts?.queuesOptions?.[flow.queueName]?.defaultJobOptions ?? {};
    const opts = { ...defaults, ...flow.opts } as UniqueJobsOptions & { unique: never };
    const job = (await queueOf(flow).add(flow.name, data as never, opts)) as UniqueJob;
    return { job };
  };

  const add = async (flow: UniqueFlowJob, opts?: FlowOpts): Promise<UniqueJobNode> => {
    check([flow], false);
    if (asksUnique(flow.opts)) return addUniqueRoot(flow, opts);
    return flowProducer.add(flow as FlowJob, opts);
  };

  // One call per kind, in order: the unique roots each atomically (as withUniqueness' addBulk),
  // the others in BullMQ's one MULTI. Like BullMQ's addBulk, the batch is not one transaction.
  const addBulk = async (flows: UniqueFlowJob[]): Promise<UniqueJobNode[]> => {
    check(flows, true);
    if (!flows.some((flow) => asksUnique(flow.opts))) return flowProducer.addBulk(flows as FlowJob[]);
    const plain = flows.filter((flow) => !asksUnique(flow.opts));
    const plainNodes = plain.length > 0 ? await flowProducer.addBulk(plain as FlowJob[]) : [];
    const out: UniqueJobNode[] = [];
    let next = 0;
    for (const flow of flows) out.push(asksUnique(flow.opts) ? await addUniqueRoot(flow) : plainNodes[next++]!);
    return out;
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
