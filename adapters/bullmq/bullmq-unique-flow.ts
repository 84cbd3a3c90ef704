/**
 * Calling unique-flow (lua/unique-flow-1.lua): its flat arguments and its reply, for the two
 * callers that insert several jobs in one script, flows (with-unique-flows.ts) and the backend's
 * `enqueueMany` (bullmq-backend.ts). What each reply means for its caller stays with the caller.
 */
import { BackendError, type ValidationIssue } from '../../src/errors.js';
import { typedErrorFor } from './bullmq-errors.js';
import { unsupported } from './bullmq-host.js';
import type { ScriptArgument } from './bullmq-script-command.js';
import { COMMANDS, flowScriptsProblem, runScript } from './bullmq-script-set.js';
import { uniqueAddKeysAndArgv, type PreparedUniqueAdd } from './bullmq-enqueue.js';
import { layoutArgs } from './bullmq-sidecar-keys.js';

/** One node as unique-flow takes it: its kind, its 13 keys, its arguments. */
export interface FlowNodeArgs {
  /** "unique", or the BullMQ script BullMQ's flow add would run for the node. */
  kind: string;
  keys: string[];
  argv: ScriptArgument[];
  /** A unique node's sidecar layout keys (`PreparedUniqueAdd.layout`); none for a plain node. */
  layout?: readonly string[];
}

/** A parent a node names: its key, its dependencies key, its queue key, its id. */
export type FlowParentArgs = readonly [string, string, string, string];

export type UniqueFlowReply =
  | { answer: 'done'; replies: unknown[] }
  /** `node` is 0-based; `detail` is the script's (a refusal reply, a parent key, an id …). */
  | { answer: 'refused' | 'parent_missing' | 'parent_taken' | 'failed'; node: number; detail: unknown };

/** Throws the `BackendError` for an installed BullMQ that lacks what unique-flow splices (for a `tree`, or a lone node). */
export function requireUniqueFlow(tree: boolean, what: string): void {
  const problem = flowScriptsProblem({ tree });
  if (problem) throw unsupported(`${problem}; ${what} needs it`);
}

/** A unique node: a prepared unique add, with the queue's waiting-children key as the 13th key. */
export function uniqueNodeArgs(prepared: PreparedUniqueAdd, waitingChildrenKey: string): FlowNodeArgs {
  const { keys, argv } = uniqueAddKeysAndArgv(prepared);
  const [bullmqArgs, data, bullmqOpts, ...ojs] = argv;
  return {
    kind: 'unique',
    keys: [...keys, waitingChildrenKey],
    // ARGV[4..21] and ARGV[23]: a flow node always takes the general path, so not unique-add's ARGV[22].
    argv: [bullmqArgs!, data!, bullmqOpts!, ...ojs.slice(0, 18).map(String), String(ojs[19])],
    layout: prepared.layout,
  };
}

/**
 * The script's arguments: the key that routes it (a Cluster's slot), then the nodes and the
 * parents, then the layout check of every namespace a unique node touches.
 */
export function uniqueFlowArgs(routingKey: string, nodes: readonly FlowNodeArgs[], parents: readonly FlowParentArgs[]): ScriptArgument[] {
  const args: ScriptArgument[] = [routingKey, nodes.length];
  const layout = new Set<string>();
  for (const node of nodes) {
    args.push(node.kind, ...node.keys, ...node.argv);
    for (const key of node.layout ?? []) layout.add(key);
  }
  args.push(parents.length);
  for (const parent of parents) args.push(...parent);
  args.push(...layoutArgs([...layout]));
  return args;
}

/** Runs unique-flow on `target` (a client, or a pipeline for `readUniqueFlowReply` later). */
export async function runUniqueFlow(target: object, args: ScriptArgument[]): Promise<UniqueFlowReply> {
  let reply: unknown;
  try {
    reply = await runScript(target, COMMANDS.uniqueFlow, args);
  } catch (error) {
    throw typedErrorFor(error);
  }
  return readUniqueFlowReply(reply);
}

export function readUniqueFlowReply(reply: unknown): UniqueFlowReply {
  if (Array.isArray(reply)) {
    const [answer, second, detail] = reply as [unknown, unknown, unknown];
    if (answer === 'done' && Array.isArray(second)) return { answer, replies: second };
    if (
      (answer === 'refused' || answer === 'parent_missing' || answer === 'parent_taken' || answer === 'failed') &&
      typeof second === 'number'
    )
      return { answer, node: second - 1, detail };
  }
  throw new BackendError('bullmq', `unique-flow answered ${String(Array.isArray(reply) ? reply[0] : reply)}`);
}

/**
 * The input issue for unique-flow's own refusals of a node (lua/unique-flow-1.lua, step 1): a node
 * after one of its key whose writes to stored jobs could turn its answer into a refusal, which the
 * check pass cannot decide before writing; a replace that would cancel a parent of the flow. Null
 * for a refusal unique-add answers (a duplicate, a taken id …). `earlier` names the earlier node.
 */
export function flowRefusalIssue(detail: unknown, path: string, earlier: string): ValidationIssue | null {
  if (!Array.isArray(detail)) return null;
  if (detail[0] === 'undecidable') {
    const what = detail[1] === 'replace' ? 'replaces' : detail[1] === 'update' ? 'updates (x_update)' : 'touches (last_duplicate)';
    return {
      path,
      message: `an earlier ${earlier} with the same uniqueness key ${what} the jobs this node would be decided against, which could turn its answer into a refusal; it cannot be decided before anything is written: send it on its own`,
    };
  }
  if (detail[0] === 'replaces_parent') return { path, message: `the replace would cancel job ${String(detail[1])}, a parent in this flow` };
  return null;
}
