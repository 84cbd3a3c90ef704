/**
 * Reads a workflow creation body (ojs-workflows §3–6, §11.1, as the official SDKs send it:
 * `{ type: "chain", name?, steps: [job …] }`, `{ type: "group", name?, jobs: [job …] }`,
 * `{ type: "batch", name?, jobs: [job …], callbacks: { on_complete?, on_success?, on_failure? } }`),
 * each job read as a PUSH body is (ojs-request.ts), every problem collected with its path
 * (`steps[1].type`, `callbacks.on_failure.options.queue`).
 *
 * Refused, each naming its field: a nested workflow (the gateway's nesting depth is 1, §10.2);
 * a unique policy on a workflow job (a duplicate would leave the workflow waiting on a job that is
 * not its own); `options.pending`; the HTTP binding's dependency-graph form (`depends_on`), a DAG
 * the workflows spec defers.
 */
import { InvalidJobInputError, type ValidationIssue } from '../src/errors.js';
import { isPlainObject } from '../src/json-rules.js';
import { CALLBACK_NAMES, type CallbackName, type WorkflowType } from './workflow-record.js';
import { parsePush, type ParsedPush } from './ojs-request.js';

/** Jobs one workflow may hold (steps or jobs), as a batch PUSH. */
export const MAX_WORKFLOW_JOBS = 1000;
const MAX_NAME = 256;
const TYPES: readonly WorkflowType[] = ['chain', 'group', 'batch'];

export interface ParsedWorkflow {
  type: WorkflowType;
  name: string | null;
  /** A chain's steps in order, or a group's or batch's jobs. */
  jobs: ParsedPush[];
  callbacks: Partial<Record<CallbackName, ParsedPush>>;
}

/** @throws InvalidJobInputError naming every bad field. */
export function parseWorkflow(body: Record<string, unknown>): ParsedWorkflow {
  const issues: ValidationIssue[] = [];
  const type = body.type as WorkflowType;
  if (!TYPES.includes(type)) {
    const dag = Array.isArray(body.steps) && body.steps.some((step) => isPlainObject(step) && step.depends_on !== undefined);
    issues.push({
      path: 'type',
      message: dag
        ? 'is required: chain, group or batch (the dependency-graph form, steps with depends_on, is not supported)'
        : 'must be chain, group or batch',
    });
    throw new InvalidJobInputError(issues);
  }
  if (body.name !== undefined && (typeof body.name !== 'string' || body.name.length > MAX_NAME)) {
    issues.push({ path: 'name', message: `must be a string of at most ${MAX_NAME} characters` });
  }
  const field = type === 'chain' ? 'steps' : 'jobs';
  const list = body[field];
  const jobs: ParsedPush[] = [];
  if (!Array.isArray(list) || list.length === 0) {
    issues.push({ path: field, message: `must be a non-empty array of jobs` });
  } else if (list.length > MAX_WORKFLOW_JOBS) {
    issues.push({ path: field, message: `at most ${MAX_WORKFLOW_JOBS} jobs per workflow` });
  } else {
    list.forEach((job, index) => {
      const parsed = readJob(job, `${field}[${index}]`, issues);
      if (parsed) jobs.push(parsed);
    });
  }
  const callbacks: ParsedWorkflow['callbacks'] = {};
  if (type === 'batch') {
    const given = body.callbacks;
    if (!isPlainObject(given) || !CALLBACK_NAMES.some((name) => given[name] !== undefined && given[name] !== null)) {
      issues.push({ path: 'callbacks', message: 'must name at least one of on_complete, on_success, on_failure' });
    } else {
      for (const name of Object.keys(given)) {
        if (!CALLBACK_NAMES.includes(name as CallbackName)) issues.push({ path: `callbacks.${name}`, message: 'is not a batch callback' });
      }
      for (const name of CALLBACK_NAMES) {
        if (given[name] === undefined || given[name] === null) continue;
        const parsed = readJob(given[name], `callbacks.${name}`, issues);
        if (parsed) callbacks[name] = parsed;
      }
    }
  } else if (body.callbacks !== undefined) {
    issues.push({ path: 'callbacks', message: 'only a batch has callbacks' });
  }
  const ids = new Map<string, string>();
  for (const [path, parsed] of [...jobs.map((job, index) => [`${field}[${index}]`, job] as const), ...Object.entries(callbacks)]) {
    const id = parsed.input.id;
    if (id === undefined) continue;
    const at = path.startsWith('on_') ? `callbacks.${path}` : path;
    if (ids.has(id)) issues.push({ path: `${at}.id`, message: `${ids.get(id)} has the same id` });
    else ids.set(id, at);
  }
  if (issues.length > 0) throw new InvalidJobInputError(issues);
  return { type, name: typeof body.name === 'string' ? body.name : null, jobs, callbacks };
}

/** One job of a workflow, or null (its problems added to `issues`). */
function readJob(job: unknown, path: string, issues: ValidationIssue[]): ParsedPush | null {
  if (isPlainObject(job) && (job.steps !== undefined || job.jobs !== undefined || job.callbacks !== undefined)) {
    issues.push({ path, message: 'nested workflows are not supported: the gateway runs one level (a job here, not a workflow)' });
    return null;
  }
  let parsed: ParsedPush;
  try {
    parsed = parsePush(job, path);
  } catch (error) {
    if (!(error instanceof InvalidJobInputError)) throw error;
    issues.push(...error.issues.map((issue) => (issue.path.startsWith(path) ? issue : { ...issue, path: `${path}.${issue.path}` })));
    return null;
  }
  if (parsed.policyPath !== null) {
    issues.push({ path: `${path}.${parsed.policyPath}`, message: 'unique policies are not supported on workflow jobs' });
    return null;
  }
  if (parsed.input.pending) {
    issues.push({ path: `${path}.options.pending`, message: 'a workflow job cannot be pending: the workflow enqueues it' });
    return null;
  }
  return parsed;
}
