/**
 * A cron registration (ojs-cron §2, ojs-http-binding §13.2) read from `POST /ojs/v1/cron`, in
 * either form a client sends: the spec's and the binding's (`cron`, and the job's `type`, `args`,
 * `meta`, `options` beside it) or the public conformance suite's (`expression`, and the job in
 * `job_template: { type, args, meta, options }`). The job is checked as a PUSH of it would be
 * (ojs-request.ts), each problem named where the request wrote it, so a template that could never
 * be enqueued is refused at registration rather than at every tick.
 */
import { InvalidJobInputError, type ValidationIssue } from '../src/errors.js';
import type { JsonValue } from '../src/job.js';
import { isPlainObject } from '../src/json-rules.js';
import { checkExpression, checkTimezone, DEFAULT_TIMEZONE, nextOccurrence } from './cron-expression.js';
import { parsePush } from './ojs-request.js';
import { OVERLAP_POLICIES, type CronDefinition, type CronJobTemplate, type OverlapPolicy } from './cron-schedules.js';

/** ojs-cron §2.2: lowercase alphanumerics, hyphens and dots, at most 255 characters. */
const NAME_PATTERN = /^[a-z0-9][a-z0-9\-.]*$/;
const MAX_NAME = 255;
const MAX_DESCRIPTION = 1000;

/** The next tick of `definition` after `from` (ms), as a record shows it (null: disabled, or none near). */
export function nextRunAt(definition: CronDefinition, from: number): string | null {
  if (!definition.enabled) return null;
  const next = nextOccurrence(definition.expression, definition.timezone, from);
  return next === null ? null : new Date(next).toISOString();
}

/** @throws InvalidJobInputError naming every bad field. */
export function readCronRegistration(body: Record<string, unknown>): CronDefinition {
  const issues: ValidationIssue[] = [];
  const { name } = body;
  if (typeof name !== 'string' || name.length > MAX_NAME || !NAME_PATTERN.test(name)) {
    issues.push({
      path: 'name',
      message: name === undefined ? 'is required' : `must match [a-z0-9][a-z0-9.-]*, at most ${MAX_NAME} characters`,
    });
  }
  const expressionField = body.expression !== undefined ? 'expression' : 'cron';
  if (body.expression !== undefined && body.cron !== undefined) {
    issues.push({ path: 'cron', message: 'give the expression once: expression or cron' });
  }
  const expression = body[expressionField];
  checkExpression(expression, expressionField, issues);
  const timezone = body.timezone ?? DEFAULT_TIMEZONE;
  checkTimezone(timezone, 'timezone', issues);
  const overlap = body.overlap_policy ?? 'skip';
  if (!OVERLAP_POLICIES.includes(overlap as OverlapPolicy)) {
    issues.push({ path: 'overlap_policy', message: `must be one of ${OVERLAP_POLICIES.join(', ')}` });
  }
  if (body.enabled !== undefined && typeof body.enabled !== 'boolean') issues.push({ path: 'enabled', message: 'must be a boolean' });
  const description = body.description ?? null;
  if (description !== null && (typeof description !== 'string' || description.length > MAX_DESCRIPTION)) {
    issues.push({ path: 'description', message: `must be a string of at most ${MAX_DESCRIPTION} characters` });
  }
  const template = readTemplate(body, issues);
  if (issues.length > 0) throw new InvalidJobInputError(issues);
  return {
    name: name as string,
    expression: (expression as string).trim(),
    timezone: timezone as string,
    overlap_policy: overlap as OverlapPolicy,
    enabled: body.enabled !== false,
    description: description as string | null,
    template: template!,
  };
}

function readTemplate(body: Record<string, unknown>, issues: ValidationIssue[]): CronJobTemplate | null {
  const nested = body.job_template !== undefined;
  if (nested && !isPlainObject(body.job_template)) {
    issues.push({ path: 'job_template', message: 'must be an object: the job each tick pushes (type, args, meta, options)' });
    return null;
  }
  const source = nested ? (body.job_template as Record<string, unknown>) : body;
  if (nested && (body.type !== undefined || body.args !== undefined)) {
    issues.push({ path: 'type', message: 'give the job once: in job_template, or as type and args beside the expression' });
  }
  // `args` defaults to [] (ojs-cron §2.2); a PUSH requires it.
  const template: CronJobTemplate = { type: source.type as string, args: (source.args ?? []) as JsonValue[] };
  if (source.meta !== undefined) template.meta = source.meta as Record<string, JsonValue>;
  if (source.options !== undefined) template.options = source.options as Record<string, JsonValue>;
  try {
    parsePush({ ...template }, nested ? 'job_template' : '');
  } catch (error) {
    if (!(error instanceof InvalidJobInputError)) throw error;
    issues.push(...error.issues);
    return null;
  }
  return template;
}
