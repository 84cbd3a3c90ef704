/**
 * ojs-unique: see why two jobs collide.
 *
 *   ojs-unique key <job.json|->        the uniqueness key and the canonical pre-image it hashes
 *   ojs-unique key --gateway <job.json|->  the key the OJS gateway computes for an OJS job: its
 *                                      array `args` mapped to the host payload first
 *   ojs-unique validate <file.json|->  every problem of a policy (or of a job and its policy)
 *   ojs-unique serve [options]         the OJS HTTP gateway (cli-serve.ts)
 *   ojs-unique migrate [options]       installs or upgrades the Graphile Worker schemas (cli-migrate.ts)
 *   ojs-unique explain <job.json> …    what an add would do now on a live store, writing nothing (cli-explain.ts)
 *   ojs-unique doctor [options]        checks a deployment (cli-doctor.ts)
 *   ojs-unique --help | --version      this usage (exit 0) | the package's version
 *
 * A job file is an OJS job: `type`, `args`, optional `queue`/`meta`, and the policy as `unique`
 * or `options.unique` (both forms appear in the spec). A file without `type` is a bare policy.
 * A job whose `unique` is absent or `null` has no policy, as at enqueue: `validate` says so and
 * `key` needs `--policy`. Jobs are checked by `prepareUnique`, the same rules as an enqueue.
 * Exit codes: 0 ok, 1 invalid input, 2 usage or unreadable file.
 *
 * Without `--gateway`, `args` is hashed as written: the key of a job a host producer adds with
 * that payload. The gateway (and `--gateway`) reads the file as a PUSH body: `args` must be an
 * array, mapped by `argsToPayload` (`[{…}]` is the object itself, anything else `{ "ojs_args":
 * […] }`) before hashing, with the gateway's own rules (ojs-request.ts). An array `args` without
 * the flag gets a note on standard error, since the two keys differ.
 */
import { readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isInvalidJobInputError, parseUniquePolicy, type JobInput, type ValidationIssue } from '../src/index.js';
import { prepareUnique } from '../src/internal.js';
import { parsePush } from '../server/ojs-request.js';

const USAGE = `usage:
  ojs-unique --help | --version
  ojs-unique key <job.json|-> [--policy <policy.json>] [--gateway] [--json]
  ojs-unique validate <policy-or-job.json|-> [--json]
  ojs-unique explain <job.json|-> --redis-url <url> [--prefix <p>] | --database-url <url> [--graphile-schema <s>] [--unique-schema <s>] [--json]
  ojs-unique doctor [--redis-url <url>] [--prefix <p>] [--database-url <url>] [--graphile-schema <s>] [--unique-schema <s>]
  ojs-unique serve [--backend memory|bullmq|graphile-worker] [--port <n>] [--host <addr>] … (see ojs-unique serve --help)
  ojs-unique migrate [--database-url <url>] [--graphile-schema <s>] [--unique-schema <s>]`;

interface Output {
  out: (line: string) => void;
  err: (line: string) => void;
}

export function main(argv: string[], io: Output = { out: console.log, err: console.error }): number {
  if (argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
    io.out(USAGE);
    return 0;
  }
  if (argv[0] === '--version' || argv[0] === '-v') {
    // The package's own package.json, by self-reference: the same from the source tree and from dist/.
    io.out(String((createRequire(import.meta.url)('ojs-unique/package.json') as { version: string }).version));
    return 0;
  }
  const args = parseArgs(argv);
  if ('error' in args) {
    io.err(`ojs-unique: ${args.error}\n${USAGE}`);
    return 2;
  }
  const { command, file, json, policyFile, gateway } = args;
  let document: unknown;
  let policyDocument: unknown;
  try {
    document = readJson(file);
    if (policyFile !== undefined) policyDocument = readJson(policyFile);
  } catch (error) {
    io.err(`ojs-unique: ${(error as Error).message}`);
    return 2;
  }

  try {
    if (gateway) return gatewayKey(document, policyDocument, json, io);
    const job = asJob(document);
    if (command === 'validate') {
      if (!job) {
        const policy = parseUniquePolicy(document);
        const reportOnly = (document as { x_report_only?: unknown } | null)?.x_report_only === true;
        io.out(
          json
            ? JSON.stringify({ valid: true, policy, ...(reportOnly ? { report_only: true } : {}) })
            : `valid policy${reportOnly ? ' (report-only: decided and counted, the job always inserted)' : ''}\n${JSON.stringify(policy, null, 2)}`,
        );
        return 0;
      }
      // Every rule an enqueue applies, the job's own values included.
      const prepared = prepareUnique(job);
      if (!prepared) {
        io.out(
          json
            ? JSON.stringify({ valid: true, policy: null })
            : 'valid job without a unique policy (unique is absent or null): it is enqueued as a plain job',
        );
        return 0;
      }
      io.out(
        json
          ? JSON.stringify({ valid: true, policy: prepared.policy })
          : `valid job and policy\n${JSON.stringify(prepared.policy, null, 2)}`,
      );
      return 0;
    }
    if (!job) {
      io.err('ojs-unique key: the file is not a job (it has no "type"); pass a job, and its policy with --policy if it has none');
      return 2;
    }
    const prepared = prepareUnique(policyDocument === undefined ? job : { ...job, unique: policyDocument });
    if (!prepared) {
      io.err(
        'ojs-unique key: the job has no unique policy (unique is absent or null), so it has no uniqueness key; pass one with --policy',
      );
      return 2;
    }
    const { key, canonical, policy } = prepared;
    io.out(json ? JSON.stringify({ key, canonical, policy }) : `key:       ${key}\npre-image: ${canonical}`);
    if (!json && Array.isArray(job.args)) {
      io.err(
        'note: args is an array, hashed as written; the OJS gateway maps an array to the host payload first and hashes that: `ojs-unique key --gateway` for its key',
      );
    }
    return 0;
  } catch (error) {
    if (!isInvalidJobInputError(error)) throw error;
    if (json) io.out(JSON.stringify({ valid: false, issues: error.issues }));
    else for (const issue of error.issues) io.err(formatIssue(issue));
    return 1;
  }
}

type Args = { command: 'key' | 'validate'; file: string; json: boolean; policyFile?: string; gateway: boolean } | { error: string };

/** Flags may stand anywhere after the command; exactly one file (or `-`) is required. */
function parseArgs(argv: string[]): Args {
  const [command, ...rest] = argv;
  if (command !== 'key' && command !== 'validate')
    return { error: command === undefined ? 'no command' : `unknown command ${JSON.stringify(command)}` };
  const files: string[] = [];
  let json = false;
  let gateway = false;
  let policyFile: string | undefined;
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    if (arg === '--json') json = true;
    else if (arg === '--gateway') {
      if (command !== 'key') return { error: '--gateway is only for key' };
      gateway = true;
    } else if (arg === '--policy') {
      const value = rest[++i];
      if (value === undefined || (value.startsWith('--') && value !== '-')) return { error: '--policy needs a file' };
      if (command !== 'key') return { error: '--policy is only for key' };
      policyFile = value;
    } else if (arg.startsWith('--')) return { error: `unknown option ${arg}` };
    else files.push(arg);
  }
  if (files.length !== 1) return { error: files.length === 0 ? 'no file given' : `one file at a time (got ${files.length})` };
  return { command, file: files[0]!, json, policyFile, gateway };
}

export function readJson(file: string): unknown {
  const name = file === '-' ? 'standard input' : file;
  let text: string;
  try {
    if (file !== '-' && statSync(file).isDirectory()) throw new Error(`${file} is a directory, not a JSON file`);
    text = readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new Error(`${name}: no such file`);
    if (code === 'EACCES' || code === 'EPERM') throw new Error(`${name}: permission denied`);
    if (code === undefined) throw error;
    throw new Error(`${name} cannot be read (${code})`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error(`${file === '-' ? 'standard input' : file} is not JSON: ${(error as Error).message}`);
  }
}

export function asJob(document: unknown): JobInput | null {
  if (typeof document !== 'object' || document === null || Array.isArray(document) || !('type' in document)) return null;
  const { options, ...job } = document as JobInput & { options?: { unique?: unknown } };
  // `unique: null` is "no policy" (as at enqueue), not "look in options".
  const unique = Object.hasOwn(job, 'unique') ? job.unique : options?.unique;
  // Untrusted JSON: the policy is validated by prepareUnique like any other caller's.
  return { ...job, args: Object.hasOwn(job, 'args') ? job.args : [], unique: unique as JobInput['unique'] };
}

/**
 * `key --gateway`: the file read as the gateway reads a PUSH body (parsePush: array `args`, the
 * policy at `options.unique` or `unique`, the SDKs' `key` as `keys` or `args_keys`), so the key is the
 * one it enqueues under. `--policy` stands for the file's policy, as `options.unique`.
 * @throws InvalidJobInputError as the gateway would answer `invalid_request`.
 */
function gatewayKey(document: unknown, policyDocument: unknown, json: boolean, io: Output): number {
  let body = document;
  if (policyDocument !== undefined && typeof document === 'object' && document !== null && !Array.isArray(document)) {
    const { unique: _unique, options, ...rest } = document as Record<string, unknown>;
    const kept = typeof options === 'object' && options !== null && !Array.isArray(options) ? options : {};
    body = { ...rest, options: { ...kept, unique: policyDocument } };
  }
  const { input } = parsePush(body);
  const { extras: _extras, pending: _pending, ...job } = input;
  const prepared = prepareUnique(job);
  if (!prepared) {
    io.err('ojs-unique key: the job has no unique policy (unique is absent or null), so it has no uniqueness key; pass one with --policy');
    return 2;
  }
  const { key, canonical, policy } = prepared;
  io.out(
    json
      ? JSON.stringify({ key, canonical, policy, payload: job.args })
      : `key:       ${key}\npre-image: ${canonical}\npayload:   ${JSON.stringify(job.args)}`,
  );
  return 0;
}

function formatIssue(issue: ValidationIssue): string {
  return `${issue.path}: ${issue.message}`;
}
