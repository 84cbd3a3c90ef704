/**
 * ojs-unique: see why two jobs collide.
 *
 *   ojs-unique key <job.json|->        the uniqueness key and the canonical pre-image it hashes
 *   ojs-unique validate <file.json|->  every problem of a policy (or of a job and its policy)
 *
 * A job file is an OJS job: `type`, `args`, optional `queue`/`meta`, and the policy as `unique`
 * or `options.unique` (both forms appear in the spec). A file without `type` is a bare policy.
 * Exit codes: 0 ok, 1 invalid input, 2 usage or unreadable file.
 */
import { readFileSync } from 'node:fs';
import { computeUniquenessKey, isInvalidUniquePolicyError, parseUniquePolicy, type JobInput, type ValidationIssue } from '../src/index.js';

const USAGE = `usage:
  ojs-unique key <job.json|-> [--policy <policy.json>] [--json]
  ojs-unique validate <policy-or-job.json|-> [--json]`;

interface Output {
  out: (line: string) => void;
  err: (line: string) => void;
}

export function main(argv: string[], io: Output = { out: console.log, err: console.error }): number {
  const [command, file, ...rest] = argv;
  const json = rest.includes('--json');
  const policyFlag = rest.indexOf('--policy');
  if ((command !== 'key' && command !== 'validate') || !file || (policyFlag >= 0 && !rest[policyFlag + 1])) {
    io.err(USAGE);
    return 2;
  }
  let document: unknown;
  let policyDocument: unknown;
  try {
    document = readJson(file);
    if (policyFlag >= 0) policyDocument = readJson(rest[policyFlag + 1]!);
  } catch (error) {
    io.err(`ojs-unique: ${(error as Error).message}`);
    return 2;
  }

  const job = asJob(document);
  try {
    if (command === 'validate') {
      const policy = job ? parseUniquePolicy(job.unique ?? {}, job) : parseUniquePolicy(document);
      if (job) computeUniquenessKey(job, policy); // the job's own values must be hashable too
      io.out(json ? JSON.stringify({ valid: true, policy }) : `valid ${job ? 'job and policy' : 'policy'}\n${JSON.stringify(policy, null, 2)}`);
      return 0;
    }
    if (!job) {
      io.err('ojs-unique key: the file is not a job (it has no "type"); pass a job, and its policy with --policy if it has none');
      return 2;
    }
    const policy = parseUniquePolicy(policyDocument ?? job.unique ?? {}, job);
    const { key, canonical } = computeUniquenessKey(job, policy);
    io.out(json ? JSON.stringify({ key, canonical, policy }) : `key:       ${key}\npre-image: ${canonical}`);
    return 0;
  } catch (error) {
    if (!isInvalidUniquePolicyError(error)) throw error;
    if (json) io.out(JSON.stringify({ valid: false, issues: error.issues }));
    else for (const issue of error.issues) io.err(formatIssue(issue));
    return 1;
  }
}

function readJson(file: string): unknown {
  const text = file === '-' ? readFileSync(0, 'utf8') : readFileSync(file, 'utf8');
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error(`${file === '-' ? 'standard input' : file} is not JSON: ${(error as Error).message}`);
  }
}

function asJob(document: unknown): JobInput | null {
  if (typeof document !== 'object' || document === null || Array.isArray(document) || !('type' in document)) return null;
  const job = document as JobInput & { options?: { unique?: unknown } };
  return { ...job, args: job.args ?? [], unique: job.unique ?? job.options?.unique };
}

function formatIssue(issue: ValidationIssue): string {
  return `${issue.path}: ${issue.message}`;
}
