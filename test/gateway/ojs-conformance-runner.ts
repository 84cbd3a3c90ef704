/**
 * A runner for the public OJS conformance suites (`../shared/ojs-conformance/suites`, beside the
 * repository), interpreting the JSON test files as the official runner does (see that folder's
 * README): reset before each test, setup, steps, teardown; templates; the path rules; the matchers.
 *
 * Three matcher spellings appear in the v0.4.0 files that the README's list does not name:
 * `string:non_empty` (newer official runners accept it beside `string:nonempty`),
 * `array:length(N)` and `array:min:N` (the cron list's; `array:min_length:N`). Read literally ("any other string is an exact string") no server could pass
 * the assertions that use them, so they are read as the matchers they obviously mean.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** `../shared/ojs-conformance/suites` from the repository root. */
export const SUITES_DIR = join(REPO_ROOT, '..', 'shared', 'ojs-conformance', 'suites');

export interface SuiteFile {
  /** Path relative to the suites folder. */
  file: string;
  test: ConformanceTest;
}

interface Step {
  id: string;
  action: string;
  path?: string;
  headers?: Record<string, string>;
  body?: unknown;
  delay_ms?: number;
  duration_ms?: number;
  parallel_with?: string;
  assertions?: Assertions;
}

interface Assertions {
  status?: unknown;
  status_in?: number[];
  body?: Record<string, unknown>;
  body_absent?: string[];
  body_contains?: string | string[];
  headers?: Record<string, unknown>;
  [other: string]: unknown;
}

interface ConformanceTest {
  test_id: string;
  name: string;
  setup?: { steps?: Step[] };
  teardown?: { steps?: Step[] };
  steps: Step[];
}

interface StepResponse {
  status: number;
  headers: Headers;
  raw: string;
  body: Record<string, unknown> | null;
}

/** Every suite file, sorted; empty when the suites folder is absent. */
export function loadSuites(): SuiteFile[] {
  if (!existsSync(SUITES_DIR)) return [];
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.json')) files.push(path);
    }
  };
  walk(SUITES_DIR);
  return files
    .sort()
    .map((path) => ({ file: relative(SUITES_DIR, path), test: JSON.parse(readFileSync(path, 'utf8')) as ConformanceTest }));
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** How long a test's steps wait in all (`delay_ms`, WAIT steps): a per-minute cron's file waits over two minutes. */
export function waitsOf(test: ConformanceTest): number {
  const steps = [...(test.setup?.steps ?? []), ...test.steps, ...(test.teardown?.steps ?? [])];
  return steps.reduce((sum, step) => sum + (step.delay_ms ?? 0) + (step.action === 'WAIT' ? (step.duration_ms ?? 0) : 0), 0);
}

/**
 * Runs one test against `baseUrl` (after `reset`), returning every failure (empty: passed). A
 * failing setup step is an error and stops the test, as in the official runner. `failFast`:
 * return at the first failing step. `elapse`: how a step's wait (`delay_ms`, WAIT) lets time
 * pass (default: a real sleep; a server on a movable clock moves it instead).
 */
export async function runConformanceTest(
  baseUrl: string,
  test: ConformanceTest,
  reset: () => Promise<void>,
  options: { failFast?: boolean; elapse?: (ms: number) => Promise<void> } = {},
): Promise<string[]> {
  await reset();
  const elapse = options.elapse ?? sleep;
  const responses = new Map<string, StepResponse | null>();
  const failures: string[] = [];
  const runList = async (steps: Step[], phase: string): Promise<string[]> => {
    const collected: string[] = [];
    const done = new Set<string>();
    for (const step of steps) {
      if (done.has(step.id)) continue;
      const partner = step.parallel_with ? steps.find((other) => other.id === step.parallel_with && !done.has(other.id)) : undefined;
      const group = partner ? [step, partner] : [step];
      for (const member of group) done.add(member.id);
      const results = await Promise.all(group.map((member) => runStep(baseUrl, member, responses, elapse)));
      results.forEach((problems, index) => collected.push(...problems.map((problem) => `${phase} ${group[index]!.id}: ${problem}`)));
      // A known gap only has to show that it still fails: no need to sit out its waits.
      if (options.failFast && collected.length > 0) return collected;
    }
    return collected;
  };
  const setupFailures = await runList(test.setup?.steps ?? [], 'setup');
  if (setupFailures.length > 0) return setupFailures;
  failures.push(...(await runList(test.steps, 'step')));
  if (options.failFast && failures.length > 0) return failures;
  await runList(test.teardown?.steps ?? [], 'teardown');
  return failures;
}

async function runStep(
  baseUrl: string,
  step: Step,
  responses: Map<string, StepResponse | null>,
  elapse: (ms: number) => Promise<void>,
): Promise<string[]> {
  if (step.delay_ms) await elapse(step.delay_ms);
  if (step.action === 'WAIT') {
    await elapse(step.duration_ms || step.delay_ms || 0);
    return [];
  }
  if (step.action === 'ASSERT') return checkAssertStep(step, responses);
  const path = resolveTemplates(step.path ?? '', responses);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(step.headers ?? {})) headers[name] = value;
  let body: string | undefined;
  if (step.body !== undefined) {
    body = resolveTemplates(JSON.stringify(step.body), responses);
    for (const name of Object.keys(headers)) if (name.toLowerCase() === 'content-type') delete headers[name];
    headers['Content-Type'] = 'application/openjobspec+json';
  }
  let response: StepResponse;
  try {
    const reply = await fetch(baseUrl + path, { method: step.action, headers, ...(body === undefined ? {} : { body }) });
    const raw = await reply.text();
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(raw);
    } catch {
      parsed = null;
    }
    const isObject = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed);
    response = { status: reply.status, headers: reply.headers, raw, body: isObject ? (parsed as Record<string, unknown>) : null };
  } catch (error) {
    responses.set(step.id, null);
    return [`request failed: ${(error as Error).message}`];
  }
  responses.set(step.id, response);
  const assertions = step.assertions ? (JSON.parse(resolveTemplates(JSON.stringify(step.assertions), responses)) as Assertions) : {};
  return checkAssertions(assertions, response);
}

/**
 * ASSERT steps, which the official runner does not evaluate: this one does, as a stricter runner
 * may. `exclusive_claim`: exactly one of the named fetches got the job (and, with
 * `exactly_one_empty`, the other got none). `equality`: the named responses' bodies are equal.
 */
function checkAssertStep(step: Step, responses: Map<string, StepResponse | null>): string[] {
  const problems: string[] = [];
  /** `{{steps.<id>.response.body[.<path>]}}` or `$.steps.<id>.response.body[.<path>]`: that value of an earlier response. */
  const reference = (text: string): unknown => {
    const match = /^(?:\{\{|\$\.)steps\.([^.}]+)\.response\.body(?:\.([^}]+))?(?:\}\})?$/.exec(text);
    const body = match ? responses.get(match[1]!)?.body : undefined;
    if (!match || !body) return undefined;
    if (!match[2]) return body;
    const resolved = resolvePath(body, match[2]);
    return resolved.ok ? resolved.value : undefined;
  };
  for (const [kind, spec] of Object.entries(step.assertions ?? {})) {
    const rule = spec as Record<string, unknown>;
    if (kind === 'exclusive_claim') {
      const jobId = resolveTemplates(String(rule.job_id), responses);
      const fetches = (rule.fetches as string[]).map((template) => reference(template));
      const holding = fetches.filter((jobs) => Array.isArray(jobs) && jobs.some((job) => (job as { id?: string })?.id === jobId));
      const empty = fetches.filter((jobs) => Array.isArray(jobs) && jobs.length === 0);
      if (rule.exactly_one_has_job && holding.length !== 1) problems.push(`exclusive_claim: ${holding.length} fetches got job ${jobId}`);
      if (rule.exactly_one_empty && empty.length !== 1) problems.push(`exclusive_claim: ${empty.length} fetches were empty`);
    } else if (kind === 'equality') {
      for (const [left, right] of Object.entries(rule)) {
        const [a, b] = [reference(left), reference(String(right))];
        if (a === undefined || JSON.stringify(a) !== JSON.stringify(b)) problems.push(`equality: ${left} differs from ${String(right)}`);
      }
    }
  }
  return problems;
}

/** `{{steps.<id>.response.body.<path>}}` in `text` (the path, or the body's JSON text) replaced. */
function resolveTemplates(text: string, responses: Map<string, StepResponse | null>): string {
  return text.replace(/\{\{steps\.([^.}]+)\.response\.body\.([^}]+)\}\}/g, (whole, id: string, path: string) => {
    const response = responses.get(id);
    if (!response?.body) return whole;
    const resolved = resolvePath(response.body, path);
    if (!resolved.ok || resolved.value === null || resolved.value === undefined) return whole;
    const value = resolved.value;
    if (typeof value === 'string') return value;
    if (typeof value === 'number' && Number.isInteger(value)) return String(value);
    return JSON.stringify(value);
  });
}

type Resolved = { ok: true; value: unknown } | { ok: false; reason: string };

/** Splits `$.a.b[0].c[*].d[?(@.k=='v')].e` into segments. */
function segmentsOf(path: string): string[] {
  let rest = path.startsWith('$.') ? path.slice(2) : path.startsWith('$') ? path.slice(1) : path;
  const segments: string[] = [];
  while (rest.length > 0) {
    if (rest.startsWith('.')) rest = rest.slice(1);
    if (rest.startsWith('[')) {
      const end = rest.indexOf(']', rest.startsWith('[?(') ? rest.indexOf(')') : 0);
      segments.push(rest.slice(0, end + 1));
      rest = rest.slice(end + 1);
      continue;
    }
    const match = /^[^.[]+/.exec(rest);
    if (!match) break;
    segments.push(match[0]);
    rest = rest.slice(match[0].length);
  }
  return segments;
}

/** The README's path rules: a missing key is null; through null, a scalar or past an array's end fails. */
export function resolvePath(root: unknown, path: string): Resolved {
  let current: unknown = root;
  const segments = segmentsOf(path);
  for (let index = 0; index < segments.length; index++) {
    const segment = segments[index]!;
    if (segment === '[*]') {
      if (!Array.isArray(current)) return { ok: false, reason: `${segment}: not an array` };
      const rest = segments.slice(index + 1).join('.');
      const values = current
        .map((element) => (rest ? resolvePath(element, rest) : ({ ok: true, value: element } as Resolved)))
        .filter((r): r is { ok: true; value: unknown } => r.ok && r.value !== null && r.value !== undefined)
        .map((r) => r.value);
      return { ok: true, value: values };
    }
    const filter = /^\[\?\(@\.([^=]+)==['"](.*)['"]\)\]$/.exec(segment);
    if (filter) {
      if (!Array.isArray(current)) return { ok: false, reason: `${segment}: not an array` };
      current = current.find(
        (element) =>
          element !== null && typeof element === 'object' && String((element as Record<string, unknown>)[filter[1]!]) === filter[2],
      );
      if (current === undefined) return { ok: false, reason: `${segment}: no match` };
      continue;
    }
    const arrayIndex = /^\[(\d+)\]$/.exec(segment);
    if (arrayIndex) {
      if (!Array.isArray(current)) return { ok: false, reason: `${segment}: not an array` };
      const at = Number(arrayIndex[1]);
      if (at >= current.length) return { ok: false, reason: `${segment}: past the array's end` };
      current = current[at];
      continue;
    }
    if (current === null || typeof current !== 'object' || Array.isArray(current))
      return { ok: false, reason: `${segment}: not an object` };
    const value = (current as Record<string, unknown>)[segment];
    current = value === undefined ? null : value;
  }
  return { ok: true, value: current };
}

function checkAssertions(assertions: Assertions, response: StepResponse): string[] {
  const problems: string[] = [];
  const status = assertions.status;
  if (status !== undefined) {
    const problem = checkStatus(status, response.status);
    if (problem) problems.push(`status: ${problem} (body ${response.raw.slice(0, 300)})`);
  }
  if (assertions.status_in && !assertions.status_in.includes(response.status)) {
    problems.push(`status ${response.status} not in ${JSON.stringify(assertions.status_in)}`);
  }
  // A body assertion on a reply that is not a JSON object fails: skipping it would pass a test that checked nothing.
  if ((assertions.body || assertions.body_absent) && !response.body) {
    problems.push(`body: expected a JSON object (body ${response.raw.slice(0, 300)})`);
  }
  if (assertions.body && response.body) {
    for (const [path, matcher] of Object.entries(assertions.body)) {
      if (path === '$or') {
        const alternatives = matcher as Record<string, unknown>[];
        const holds = alternatives.some((alternative) =>
          Object.entries(alternative).every(([altPath, altMatcher]) => checkPath(response.body, altPath, altMatcher) === null),
        );
        if (!holds) problems.push(`$or: no alternative holds (body ${response.raw.slice(0, 300)})`);
        continue;
      }
      const problem = checkPath(response.body, path, matcher);
      if (problem) problems.push(`${path}: ${problem}`);
    }
  }
  if (assertions.body_absent && response.body) {
    for (const path of assertions.body_absent) {
      const resolved = resolvePath(response.body, path);
      if (resolved.ok && resolved.value !== null) problems.push(`${path}: expected absent`);
    }
  }
  if (assertions.body_contains !== undefined) {
    const needles = Array.isArray(assertions.body_contains) ? assertions.body_contains : [assertions.body_contains];
    for (const needle of needles) if (!response.raw.includes(needle)) problems.push(`body does not contain ${JSON.stringify(needle)}`);
  }
  if (assertions.headers) {
    for (const [name, expected] of Object.entries(assertions.headers)) {
      const actual = response.headers.get(name);
      const problem = checkHeader(expected, actual);
      if (problem) problems.push(`header ${name}: ${problem}`);
    }
  }
  return problems;
}

function checkStatus(expected: unknown, actual: number): string | null {
  if (typeof expected === 'number') return expected === actual ? null : `expected ${expected}, got ${actual}`;
  if (typeof expected === 'string' && expected.startsWith('one_of:')) {
    const allowed = expected.slice('one_of:'.length).split(',').map(Number);
    return allowed.includes(actual) ? null : `expected one of ${allowed.join(',')}, got ${actual}`;
  }
  if (typeof expected === 'string') {
    const problem = matchValue(expected, actual, true);
    return problem ? `${problem} (got ${actual})` : null;
  }
  if (expected && typeof expected === 'object' && Array.isArray((expected as { $in?: unknown }).$in)) {
    return ((expected as { $in: unknown[] }).$in as unknown[]).includes(actual)
      ? null
      : `expected one of ${JSON.stringify(expected)}, got ${actual}`;
  }
  return `unsupported status assertion ${JSON.stringify(expected)}`;
}

function checkHeader(expected: unknown, actual: string | null): string | null {
  if (typeof expected === 'string')
    return actual === expected ? null : `expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`;
  if (expected && typeof expected === 'object') {
    const operators = expected as { $match?: string; $eq?: unknown };
    if (operators.$match !== undefined) {
      return actual !== null && new RegExp(operators.$match).test(actual)
        ? null
        : `expected to match ${operators.$match}, got ${JSON.stringify(actual)}`;
    }
    if (operators.$eq !== undefined)
      return actual === String(operators.$eq) ? null : `expected ${JSON.stringify(operators.$eq)}, got ${JSON.stringify(actual)}`;
  }
  return `unsupported header assertion ${JSON.stringify(expected)}`;
}

function checkPath(body: unknown, path: string, matcher: unknown): string | null {
  const resolved = resolvePath(body, path);
  if (!resolved.ok) return matcher === 'absent' ? null : resolved.reason;
  return matchValue(matcher, resolved.value, true);
}

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const DATETIME = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

function describe(value: unknown): string {
  return JSON.stringify(value)?.slice(0, 200) ?? String(value);
}

/** The matchers of the README; null when `actual` matches. `present` is false for a missing key. */
export function matchValue(matcher: unknown, actual: unknown, present: boolean): string | null {
  const fail = (what: string) => `expected ${what}, got ${describe(actual)}`;
  if (matcher === null) return actual === null ? null : fail('null');
  if (typeof matcher === 'number') return actual === matcher ? null : fail(String(matcher));
  if (typeof matcher === 'boolean') return actual === matcher ? null : fail(String(matcher));
  if (Array.isArray(matcher)) {
    if (!Array.isArray(actual) || actual.length !== matcher.length) return fail(describe(matcher));
    for (let index = 0; index < matcher.length; index++) {
      const problem = matchValue(matcher[index], actual[index], true);
      if (problem) return `[${index}]: ${problem}`;
    }
    return null;
  }
  if (typeof matcher === 'string') return matchString(matcher, actual, present, fail);
  if (typeof matcher === 'object') return matchObject(matcher as Record<string, unknown>, actual, fail);
  return `unsupported matcher ${describe(matcher)}`;
}

function matchString(matcher: string, actual: unknown, present: boolean, fail: (what: string) => string): string | null {
  const isString = typeof actual === 'string';
  const isNumber = typeof actual === 'number';
  switch (matcher) {
    case 'any':
      return null;
    case 'absent':
      return actual === null || actual === undefined ? null : fail('absent');
    case 'exists':
      return actual !== null && actual !== undefined && present ? null : fail('a value');
    case 'string:nonempty':
    case 'string:non_empty':
      return isString && actual !== '' ? null : fail('a non-empty string');
    case 'string:uuid':
      return isString && UUID.test(actual) ? null : fail('a UUID');
    case 'string:uuidv7':
      return isString && UUID_V7.test(actual) ? null : fail('a lowercase UUIDv7');
    case 'string:datetime':
      return isString && DATETIME.test(actual) && !Number.isNaN(Date.parse(actual)) ? null : fail('an RFC 3339 date-time');
    case 'number:positive':
      return isNumber && actual > 0 ? null : fail('a positive number');
    case 'number:non_negative':
      return isNumber && actual >= 0 ? null : fail('a non-negative number');
    case 'array:nonempty':
      return Array.isArray(actual) && actual.length > 0 ? null : fail('a non-empty array');
    case 'array:empty':
      return Array.isArray(actual) && actual.length === 0 ? null : fail('an empty array');
  }
  let match: RegExpExecArray | null;
  if (matcher.startsWith('string:contains:')) {
    return isString && actual.includes(matcher.slice('string:contains:'.length)) ? null : fail(matcher);
  }
  if ((match = /^string:pattern\((.*)\)$/.exec(matcher))) return isString && new RegExp(match[1]!).test(actual) ? null : fail(matcher);
  if ((match = /^number:range\(\s*(-?[\d.]+)\s*,\s*(-?[\d.]+)\s*\)$/.exec(matcher))) {
    return isNumber && actual >= Number(match[1]) && actual <= Number(match[2]) ? null : fail(matcher);
  }
  if ((match = /^~(-?[\d.]+)$/.exec(matcher))) {
    const target = Number(match[1]);
    return isNumber && Math.abs(actual - target) <= Math.abs(target) * 0.5 ? null : fail(matcher);
  }
  if ((match = /^array:length(?::(\d+)|\((\d+)\))$/.exec(matcher))) {
    return Array.isArray(actual) && actual.length === Number(match[1] ?? match[2]) ? null : fail(matcher);
  }
  if ((match = /^array:min(?:_length)?:(\d+)$/.exec(matcher)))
    return Array.isArray(actual) && actual.length >= Number(match[1]) ? null : fail(matcher);
  if ((match = /^(not_)?contains:(.*)$/.exec(matcher))) {
    const strings = Array.isArray(actual) ? actual.map((element) => (typeof element === 'string' ? element : JSON.stringify(element))) : [];
    const found = Array.isArray(actual) && strings.includes(match[2]!);
    if (!Array.isArray(actual)) return fail('an array');
    return found === !match[1] ? null : fail(matcher);
  }
  return actual === matcher ? null : fail(JSON.stringify(matcher));
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

function matchObject(matcher: Record<string, unknown>, actual: unknown, fail: (what: string) => string): string | null {
  const keys = Object.keys(matcher);
  const operators = keys.filter((key) => key.startsWith('$') || key === 'range');
  if (operators.length > 0) {
    for (const operator of operators) {
      const operand = matcher[operator];
      switch (operator) {
        case '$exists': {
          const exists = actual !== null && actual !== undefined;
          if (exists !== operand) return fail(operand ? 'a value' : 'no value');
          break;
        }
        case '$type': {
          const expected = operand === 'integer' ? 'number' : operand;
          if (typeOf(actual) !== expected) return fail(`type ${String(operand)}`);
          break;
        }
        case '$match':
          if (typeof actual !== 'string' || !new RegExp(String(operand)).test(actual)) return fail(`to match ${String(operand)}`);
          break;
        case '$in':
          if (!(operand as unknown[]).some((candidate) => matchValue(candidate, actual, true) === null))
            return fail(`one of ${describe(operand)}`);
          break;
        case '$size': {
          if (!Array.isArray(actual) && typeof actual !== 'string') return fail('an array');
          const size = actual.length;
          if (typeof operand === 'number' ? size !== operand : size < Number((operand as { $gte: number }).$gte))
            return fail(`size ${describe(operand)}`);
          break;
        }
        case '$or':
          if (!(operand as unknown[]).some((candidate) => matchValue(candidate, actual, true) === null))
            return fail(`any of ${describe(operand)}`);
          break;
        case '$empty': {
          const empty =
            actual === null ||
            (Array.isArray(actual) && actual.length === 0) ||
            actual === '' ||
            (typeof actual === 'object' && Object.keys(actual).length === 0);
          if (empty !== operand) return fail(operand ? 'empty' : 'not empty');
          break;
        }
        case 'range': {
          const { min, max } = operand as { min?: number; max?: number };
          if (typeof actual !== 'number' || (min !== undefined && actual < min) || (max !== undefined && actual > max))
            return fail(`range ${describe(operand)}`);
          break;
        }
        default:
          return `unsupported operator ${operator}`;
      }
    }
    return null;
  }
  if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return fail('an object');
  for (const key of keys) {
    const present = Object.hasOwn(actual, key);
    if (matcher[key] === 'absent') {
      if (present) return `${key}: expected absent`;
      continue;
    }
    const problem = matchValue(matcher[key], (actual as Record<string, unknown>)[key] ?? null, present);
    if (problem) return `${key}: ${problem}`;
  }
  return null;
}
