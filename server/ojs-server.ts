/**
 * The OJS HTTP binding (ojs-http-binding.md) on Fastify, over one `GatewayStore`: what
 * `ojs-unique serve` runs, and `createOjsServer` from `ojs-unique/server`.
 *
 * Wire rules every response follows: `Content-Type: application/openjobspec+json` (no charset),
 * `OJS-Version: 1.0`, `X-Request-Id`; errors are `{ error: { code, message, retryable, details,
 * request_id } }`, with `hint` and `docs_url` on a 404.
 *
 * Logging: Fastify's logger (off unless given) sees method, URL, status and timings, a line per
 * request at debug level (at info, thousands of PUSHes a second would log more than they do), a
 * failed request at error. Job args, meta and uniqueness keys are logged only at debug level, and
 * the Authorization header is redacted.
 */
import { randomUUID, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions, LogController } from 'fastify';
import {
  BackendError,
  DuplicateJobError,
  InvalidJobInputError,
  InvalidTransitionError,
  JobNotFoundError,
  isBackendError,
  isDuplicateJobError,
  type ValidationIssue,
} from '../src/errors.js';
import { MAX_IDENTIFIER_LENGTH } from '../src/input-limits.js';
import { type JsonValue } from '../src/job.js';
import { OJS_JOB_STATES } from '../src/job-state.js';
import { payloadToArgs } from '../src/ojs-args-payload.js';
import { isPlainObject } from '../src/json-rules.js';
import { uuidv7 } from '../src/uuid-v7.js';
import { prepareUnique } from '../src/unique-enqueue.js';
import { DEFAULT_QUEUE } from '../src/uniqueness-key.js';
import type { UniqueExtension } from '../src/unique-policy.js';
import { GatewayDependencyError, loadFastify } from './gateway-dependency.js';
import type {
  GatewayEnqueueResult,
  GatewayJob,
  GatewayJobInput,
  GatewayStore,
  IdempotencyClaimResult,
  IdempotencyRecordKey,
  JobError,
  OjsEvent,
  StoreHealth,
  StoredAnswer,
} from './gateway-store.js';
import {
  DEFAULT_IDEMPOTENCY_LEASE_MS,
  DEFAULT_IDEMPOTENCY_RETENTION_MS,
  IDEMPOTENCY_KEY_HEADER,
  IdempotencyKeyHeaderError,
  idempotencyKeyDigest,
  idempotencyScope,
  readIdempotencyKey,
  requestFingerprint,
} from './idempotency-key.js';
import { MAX_QUEUE_NAME, QUEUE_PATTERN, SERVER_FIELDS, parsePush, type ParsedPush } from './ojs-request.js';
import { applyPushOptions } from './push-options.js';
import { HttpError } from './http-error.js';
import { registerQueueControlRoutes } from './queue-control-routes.js';
import { heartbeatState, MAX_WORKER_ID_LENGTH, registerWorkerSignalRoutes } from './worker-signal-routes.js';
import { registerDeadLetterRoutes } from './dead-letter-routes.js';
import { RETRY_ISSUE_PATH } from './retry-options.js';
import { CronNotFoundError, registerCronRoutes } from './cron-routes.js';
import { cronFirer } from './cron-firing.js';
import { loadCronParser } from './cron-expression.js';
import { registerWorkflowRoutes } from './workflow-routes.js';
import { UniqueAddCounts } from './unique-add-counts.js';

export const OJS_CONTENT_TYPE = 'application/openjobspec+json';
const DOCS_URL = 'https://openjobspec.org/spec/http-binding#errors';
const MAX_FETCH_COUNT = 100;
/** Queues one fetch may name. */
const MAX_FETCH_QUEUES = 32;
const MAX_BATCH = 1000;
/** Job ids one heartbeat may list. */
const MAX_HEARTBEAT_JOBS = MAX_FETCH_COUNT * 10;
/**
 * The longest path parameter routed (a job id, a queue name): the core's 128 characters, each up
 * to 9 characters percent-encoded (a 3-byte UTF-8 character). Longer cannot name a job: 414.
 */
const MAX_PARAM_LENGTH = MAX_IDENTIFIER_LENGTH * 9;
export const DEFAULT_MAX_CONNECTIONS = 512;
/** `Authorization: Bearer <token>`, the scheme case-insensitive (RFC 9110 §11.1). */
const BEARER = /^bearer +(.*)$/i;
const MAX_EVENTS = 10_000;
const EVENTS_TRIM = 1_000;

export interface OjsServerOptions {
  store: GatewayStore;
  /** Bearer token required on every route but health. (Default: none: no authentication.) */
  token?: string;
  /** Adds `POST /ojs/v1/admin/reset`, which clears what the store owns. (Default: false.) */
  testReset?: boolean;
  /** Largest request body, in bytes. (Default: 1 MiB.) */
  bodyLimit?: number;
  /**
   * Time allowed to receive a whole request, in ms: a connection that has not sent its headers, or
   * the rest of its body, by then is answered 408 and closed. (Default: 30 000.)
   */
  requestTimeoutMs?: number;
  /** Connections held open at once; one more is closed as it opens. (Default: 512, room under a 1 024 file limit.) */
  maxConnections?: number;
  /**
   * How long an `Idempotency-Key` of PUSH and batch PUSH is kept after its answer, in ms: a retry
   * with the key within it is answered the same. (Default: 24 h.)
   */
  idempotencyRetentionMs?: number;
  /**
   * How long a request holding an `Idempotency-Key` answers a retry with 409 before the retry may
   * take the key over (its process crashed, or gave up), in ms. (Default: 60 000.)
   */
  idempotencyLeaseMs?: number;
  /**
   * Fire the registered crons' ticks from this process too (each tick fires in one process over
   * the backend). False: this process registers and lists crons, others fire them. (Default: true.)
   */
  cron?: boolean;
  /** Fastify's logger options, or false. (Default: false.) */
  logger?: FastifyServerOptions['logger'];

  /** The version reported by the manifest. (Default: the package's.) */
  version?: string;
}

/**
 * Fastify's per-request lines (incoming, completed) at debug instead of info; a request that
 * errored stays at error. Made once Fastify is loaded (it is an optional peer: gateway-dependency.ts).
 */
function debugRequestLog(Base: typeof LogController): LogController {
  class DebugRequestLog extends Base {
    override incomingRequest(request: FastifyRequest): void {
      request.log.debug({ req: request }, 'incoming request');
    }

    override requestCompleted(error: Error | null | undefined, _request: FastifyRequest, reply: FastifyReply): void {
      if (error) reply.log.error({ res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
      else reply.log.debug({ res: reply, responseTime: reply.elapsedTime }, 'request completed');
    }
  }
  return new DebugRequestLog();
}

/** What a route answers: status, body, and the `Location` of a created job. */
interface Answer {
  status: number;
  body: unknown;
  location?: string;
}

/** The routes that create jobs, where a retry after a write would create them again. */
const PUSH_ROUTES = new Set(['/ojs/v1/jobs', '/ojs/v1/jobs/batch']);
const isPush = (request: FastifyRequest) => request.method === 'POST' && PUSH_ROUTES.has(request.routeOptions.url ?? '');

const invalidPayload = (message: string) => new HttpError(400, 'invalid_payload', message);

function requireObject(body: unknown): Record<string, unknown> {
  if (body === undefined || body === null || body === '') throw invalidPayload('the request body is empty; send a JSON object');
  if (!isPlainObject(body)) throw invalidPayload('the request body must be a JSON object');
  return body;
}

function requireId(body: Record<string, unknown>): string {
  const id = body.job_id ?? body.id;
  if (typeof id !== 'string' || id === '') throw new HttpError(400, 'invalid_request', 'job_id is required', { field: 'job_id' });
  return id;
}

function positiveInteger(value: unknown, field: string, fallback: number, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || (value as number) <= 0 || (value as number) > max) {
    throw new HttpError(400, 'invalid_request', `${field} must be an integer from 1 to ${max}`, { field });
  }
  return value as number;
}

/** GatewayJob fields wireJob writes in another form or place. */
const WIRE_LATER: ReadonlySet<string> = new Set(['envelope', 'args', 'unique', 'uniqueness_key']);

/** The job as the wire shows it: OJS `args` from the host payload, the kept envelope fields, `error`/`result` when set. */
export function wireJob(job: GatewayJob): Record<string, unknown> {
  const { envelope, unique, uniqueness_key } = job;
  const wire: Record<string, unknown> = { specversion: '1.0' };
  // Kept client fields first, never one the server sets (a record written before SERVER_FIELDS existed).
  for (const field in envelope) if (!SERVER_FIELDS.has(field)) wire[field] = envelope[field];
  // Then the job's own fields in its order, `args` in OJS's form last (a loop: this runs on every PUSH).
  for (const field in job) if (!WIRE_LATER.has(field)) wire[field] = job[field as keyof GatewayJob];
  wire.specversion = '1.0';
  wire.args = payloadToArgs(job.args);
  if (unique !== null) wire.unique = unique;
  if (uniqueness_key !== null) wire.uniqueness_key = uniqueness_key;
  if (job.state === 'discarded' && !job.discarded_at && job.completed_at) wire.discarded_at = job.completed_at;
  // A cancelled job never completed: OJS reports when it was cancelled instead.
  if (job.state === 'cancelled') {
    delete wire.completed_at;
    if (job.completed_at) wire.cancelled_at = job.completed_at;
  }
  return wire;
}

function issuesFor(error: InvalidJobInputError, policyPath: ParsedPush['policyPath'], prefix = ''): ValidationIssue[] {
  return error.issues.map((issue) => {
    let path = issue.path;
    if (policyPath && (path === 'unique' || path.startsWith('unique.'))) path = policyPath + path.slice('unique'.length);
    return { ...issue, path: prefix && !path.startsWith(prefix) ? `${prefix}${path}` : path };
  });
}

/** A store's batch issues (`jobs[1].unique.keys[0]`) named where each job wrote its policy (`jobs[1].options.unique.keys[0]`). */
function batchIssues(issues: readonly ValidationIssue[], parsed: readonly ParsedPush[]): ValidationIssue[] {
  return issues.map((issue) => {
    const match = /^jobs\[(\d+)\]\.unique(?=$|[.[])/.exec(issue.path);
    const policyPath = match ? parsed[Number(match[1])]?.policyPath : null;
    return policyPath ? { ...issue, path: `jobs[${match![1]}].${policyPath}${issue.path.slice(match![0].length)}` } : issue;
  });
}

function validationError(issues: readonly ValidationIssue[], extra: Record<string, unknown> = {}): HttpError {
  const first = issues[0];
  // A caller-chosen id that is taken: OJS's `duplicate`.
  if (first && issues.length === 1 && /(^|\.)id$/.test(first.path) && /already exists/.test(first.message)) {
    return new HttpError(409, 'duplicate', `a job with this id already exists`, { field: first.path });
  }
  const message = issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ');
  // A PUSH whose only problem is its retry policy is well-formed but unprocessable: 422, as the
  // conformance suite's retry files require, in the same body (docs/migration.md).
  const retryOnly = issues.length > 0 && issues.every((issue) => RETRY_ISSUE_PATH.test(issue.path));
  const http = new HttpError(retryOnly ? 422 : 400, 'invalid_request', message, { field: first?.path, issues, ...extra });
  if (retryOnly) http.type = 'validation_error';
  return http;
}

/**
 * Fastify schemas of the worker routes' bodies (validated by Fastify's ajv before the handler; a
 * failure is `invalid_request` naming the field). The PUSH bodies are checked by ojs-request.ts,
 * whose messages name OJS's own fields and rules.
 */
const JOB_ID = { type: 'string', minLength: 1 } as const;
const VISIBILITY = { type: 'integer', minimum: 1 } as const;
const WORKER_SCHEMAS = {
  fetch: {
    type: 'object',
    properties: {
      // The PUSH rule for `options.queue`: a name that could not hold a job is refused, not opened.
      queues: {
        type: 'array',
        minItems: 1,
        maxItems: MAX_FETCH_QUEUES,
        items: { type: 'string', maxLength: MAX_QUEUE_NAME, pattern: QUEUE_PATTERN.source },
      },
      count: { type: 'integer', minimum: 1, maximum: MAX_FETCH_COUNT },
      worker_id: { type: 'string', maxLength: MAX_WORKER_ID_LENGTH },
      visibility_timeout_ms: VISIBILITY,
    },
  },
  ack: { type: 'object', required: ['job_id'], properties: { job_id: JOB_ID } },
  nack: {
    type: 'object',
    required: ['job_id'],
    properties: {
      job_id: JOB_ID,
      requeue: { type: 'boolean' },
      error: {
        type: 'object',
        properties: { code: { type: 'string' }, type: { type: 'string' }, message: { type: 'string' }, retryable: { type: 'boolean' } },
      },
    },
  },
  // The binding's BEAT (`worker_id`, `active_jobs` the ids), the worker protocol's as the JS SDK
  // sends it (`active_jobs` a count, `active_job_ids` the ids), and the one-job form (`job_id`).
  heartbeat: {
    type: 'object',
    properties: {
      worker_id: { type: 'string', minLength: 1, maxLength: MAX_WORKER_ID_LENGTH },
      active_jobs: {
        anyOf: [
          { type: 'array', maxItems: MAX_HEARTBEAT_JOBS, items: JOB_ID },
          { type: 'integer', minimum: 0 },
        ],
      },
      active_job_ids: { type: 'array', maxItems: MAX_HEARTBEAT_JOBS, items: JOB_ID },
      job_id: JOB_ID,
      visibility_timeout_ms: VISIBILITY,
    },
  },
} as const;

/** A reply's body as sent: a string (an idempotent replay's stored answer) is JSON already. */
const serializeBody = (payload: unknown): string => (typeof payload === 'string' ? payload : JSON.stringify(payload));

/** An event as kept: `id` made on its first listing, from `at`. */
interface EventRecord {
  at: number;
  id: string | null;
  type: string;
  data: Record<string, JsonValue>;
}

function eventView(event: EventRecord): OjsEvent {
  event.id ??= uuidv7(event.at);
  return { id: event.id, type: event.type, time: new Date(event.at).toISOString(), data: event.data };
}

/** An empty body is OJS's `invalid_payload`, before schema validation would call it a bad field. */
async function bodyRequired(request: FastifyRequest): Promise<void> {
  requireObject(request.body);
}

/**
 * The gateway's Fastify app over `options.store`, not yet listening.
 *
 * @throws GatewayDependencyError (`code: "missing_dependency"`) when `fastify`, an optional peer
 *   of this package, is not installed.
 */
export async function createOjsServer(options: OjsServerOptions): Promise<FastifyInstance> {
  const { default: Fastify, LogController } = await loadFastify();
  const { store } = options;
  const startedAt = Date.now();
  const token = options.token ? Buffer.from(options.token) : null;
  const events: EventRecord[] = [];
  const uniqueAdds = new UniqueAddCounts();
  /** Counts a PUSH of a job with a policy under the queue it named (the stats' `unique_adds`). */
  const countUnique = (input: GatewayJobInput, outcome: GatewayEnqueueResult['outcome'] | 'rejected') => {
    if (input.unique !== undefined && input.unique !== null) uniqueAdds.add(input.queue ?? DEFAULT_QUEUE, outcome);
  };
  const requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
  const app = Fastify({
    logger: options.logger ?? false,
    // Without a logger, Fastify's per-request lines are skipped before they are built.
    logController: options.logger ? debugRequestLog(LogController) : new LogController({ disableRequestLogging: true }),
    bodyLimit: options.bodyLimit ?? 1024 * 1024,
    requestTimeout: requestTimeoutMs,
    // Node closes a connection whose headers are late (or never come) only when it checks, every
    // 30 s by default: checked often enough that the timeout is the time a stalled one is held.
    http: {
      headersTimeout: requestTimeoutMs,
      requestTimeout: requestTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, requestTimeoutMs),
    },
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    genReqId: () => `req_${uuidv7()}`,
    // Wire types as sent: "5" is not a count.
    ajv: { customOptions: { coerceTypes: false } },
    requestIdHeader: false,
  });

  const emit = (type: string, data: Record<string, JsonValue>) => {
    // Its id and time are written out when it is first listed: most events never are.
    events.push({ at: Date.now(), id: null, type, data });
    // Trimmed a slice at a time: a shift of the whole array on every event would cost each request.
    if (events.length >= MAX_EVENTS + EVENTS_TRIM) events.splice(0, events.length - MAX_EVENTS);
  };
  const record = (type: string, job: GatewayJob, data: Record<string, JsonValue> = {}) =>
    emit(type, { job_id: job.id, job_type: job.type, queue: job.queue, attempt: job.attempt, ...data });

  // A PUSH met a duplicate and enqueued nothing (`ignore`): the job it answered with, the existing one.
  const recordDeduplicated = (existing: GatewayJob) => record('job.deduplicated', existing, { existing_job_id: existing.id });

  // Every body is read as text and parsed here, so that an empty or malformed one is OJS's
  // `invalid_payload`, whatever content type it claims.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => {
    const text = String(body);
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch {
      done(invalidPayload('the request body is not valid JSON'), undefined);
    }
  });

  app.server.maxConnections = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS;

  // One callback hook, not an async one: it runs on every request, and a promise each is measurable.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('OJS-Version', '1.0');
    reply.header('X-Request-Id', request.id);
    // The reply's own serializer: Fastify then sends the content type as set, without the
    // `; charset=utf-8` it adds to a JSON type otherwise, and no onSend hook is needed to undo it.
    reply.header('content-type', OJS_CONTENT_TYPE);
    reply.serializer(serializeBody);
    // Checked once the bytes already read are parsed (Node parses a body that came with its
    // headers after the request's ticks, before its immediates): such a body needs no timer.
    if (!request.raw.complete) setImmediate(closeIfBodyLate, request.raw, reply.raw, requestTimeoutMs);
    if (!token || request.url === '/ojs/v1/health') return done();
    const given = Buffer.from(BEARER.exec(request.headers.authorization ?? '')?.[1] ?? '');
    if (given.length !== token.length || !timingSafeEqual(given, token)) {
      return done(
        new HttpError(401, 'unauthenticated', 'a valid bearer token is required', undefined, 'send Authorization: Bearer <token>'),
      );
    }
    done();
  });

  // The PUSHes that carried an Idempotency-Key: a retry of theirs is safe whatever was written.
  const keyed = new WeakSet<FastifyRequest>();

  app.setErrorHandler((error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const http = toHttpError(error, request.method !== 'GET');
    if (http.status >= 500) request.log.error({ err: error }, 'request failed');
    // Fastify drops the content type before calling this handler.
    void reply.header('content-type', OJS_CONTENT_TYPE);
    void reply.status(http.status).send(errorBody(http, request.id, retryableFor(http, request)));
  });

  /**
   * A 5xx that may have written a PUSH's jobs is not retryable (a retry would enqueue them again)
   * unless the request carried an Idempotency-Key. Other writes (ack, nack, heartbeat, cancel,
   * fetch) are retryable as before: repeating them changes nothing twice (a repeat meets 409 or
   * extends a lease again; a repeated fetch takes other jobs, the lost ones return at their
   * visibility timeout).
   */
  const retryableFor = (http: HttpError, request: FastifyRequest): boolean => {
    if (http.retryable !== undefined) return http.retryable;
    if (http.status >= 500 && http.written !== false && isPush(request)) return keyed.has(request);
    return http.status >= 500 || http.status === 429;
  };
  app.setNotFoundHandler((request) => {
    throw new HttpError(404, 'not_found', `no route ${request.method} ${request.url.split('?')[0]}`, { resource_type: 'route' });
  });

  app.get('/ojs/manifest', async () => ({
    specversion: '1.0',
    implementation: { name: 'ojs-unique', version: options.version ?? '0.1.0', language: 'typescript', backend: store.backend },
    conformance_level: 0,
    protocols: ['http'],
    backend: store.backend,
    capabilities: {
      ...store.capabilities,
      batch_enqueue: true,
      dead_letter: true,
      delayed_jobs: true,
      job_ttl: true,
      pause_resume: true,
      rate_limiting: true,
      cron_jobs: true,
      workflows: true,
    },
    unique_job_strength: store.capabilities.unique_jobs.strength,
    extensions: { supported: ['unique-jobs', 'bulk'] },
  }));

  app.get('/ojs/v1/health', async (request, reply) => {
    const health: StoreHealth = await store.health().catch((error: unknown) => ({ ok: false, type: store.backend, error: String(error) }));
    const { ok, ...backend } = health;
    // Health needs no token: the backend's own error text (hosts, ports, users) stays in the debug log.
    if (backend.error !== undefined) {
      request.log.debug({ detail: backend.error }, 'health check failed');
      backend.error = 'the backend is unreachable';
    }
    void reply.status(ok ? 200 : 503);
    return {
      status: ok ? 'ok' : 'degraded',
      version: '1.0',
      uptime_seconds: Math.floor((Date.now() - startedAt) / 1000),
      backend: { ...backend, status: ok ? 'connected' : 'disconnected' },
    };
  });

  const idempotencyScopeName = idempotencyScope(options.token);
  const retentionMs = options.idempotencyRetentionMs ?? DEFAULT_IDEMPOTENCY_RETENTION_MS;
  const leaseMs = options.idempotencyLeaseMs ?? DEFAULT_IDEMPOTENCY_LEASE_MS;

  const send = (reply: FastifyReply, answer: Answer) => {
    void reply.status(answer.status);
    if (answer.location) void reply.header('Location', answer.location);
    return answer.body;
  };

  app.post('/ojs/v1/jobs', async (request, reply) => {
    const key = idempotencyKeyOf(request);
    const parsed = parsePush(requireObject(request.body));
    request.log.debug({ type: parsed.input.type, args: parsed.input.args, unique: parsed.input.unique }, 'push');
    if (key === null) return send(reply, await pushOne(parsed));
    return keyedPush(
      request,
      reply,
      key,
      [parsed],
      ([one]) => pushOne(one!),
      ([one]) => recoverOne(one!),
    );
  });

  const pushOne = async (parsed: ParsedPush): Promise<Answer> => {
    // Most PUSHes ask for neither a relative time nor a rate limit: no await for them.
    if (parsed.relative !== null || parsed.rateLimit) await applyPushOptions(store, [parsed]);
    let result: GatewayEnqueueResult;
    try {
      result = await store.enqueue(parsed.input);
    } catch (error) {
      if (error instanceof InvalidJobInputError) throw validationError(issuesFor(error, parsed.policyPath));
      if (isDuplicateJobError(error)) countUnique(parsed.input, 'rejected');
      throw error;
    }
    countUnique(parsed.input, result.outcome);
    return answerPush(result);
  };

  const answerPush = (result: GatewayEnqueueResult): Answer => {
    if (result.outcome === 'deduplicated') {
      recordDeduplicated(result.job);
      return { status: 200, body: { job: wireJob(result.job), deduplicated: true } };
    }
    if (result.outcome === 'updated') {
      // The x_update extension: nothing was enqueued; the existing job now holds the new values.
      return { status: 200, body: { job: wireJob(result.job), updated: true, changed: result.changed } };
    }
    if (result.outcome === 'replaced') {
      // Each live duplicate superseded was cancelled; a finished one was left as it was: nothing was cancelled.
      for (const replaced of [result.replaced, ...(result.also_replaced ?? [])]) {
        if (replaced.replaced_by === result.job.id) record('job.cancelled', replaced, { replaced_by: result.job.id });
      }
      return { ...created(result.job), body: { job: wireJob(result.job), replaced_job_id: result.replaced.id } };
    }
    if (result.outcome === 'created' && result.wouldBe !== undefined) {
      // A report-only policy (`x_report_only`): enqueued whatever it met; what it would have done, beside the job.
      const answer = created(result.job);
      return {
        ...answer,
        body: { job: wireJob(result.job), x_would_be: result.wouldBe, x_would_be_existing_job_id: result.existingJobId },
      };
    }
    return created(result.job);
  };

  const created = (job: GatewayJob): Answer => {
    record('job.enqueued', job);
    return { status: 201, body: { job: wireJob(job) }, location: `/ojs/v1/jobs/${job.id}` };
  };

  app.post('/ojs/v1/jobs/batch', async (request, reply) => {
    const key = idempotencyKeyOf(request);
    const body = requireObject(request.body);
    if (!Array.isArray(body.jobs) || body.jobs.length === 0) {
      throw new HttpError(400, 'invalid_request', 'jobs must be a non-empty array', { field: 'jobs' });
    }
    if (body.jobs.length > MAX_BATCH) throw new HttpError(400, 'invalid_request', `at most ${MAX_BATCH} jobs per batch`, { field: 'jobs' });
    const parsed: ParsedPush[] = [];
    const issues: ValidationIssue[] = [];
    body.jobs.forEach((job: unknown, index: number) => {
      try {
        parsed.push(parsePush(job, `jobs[${index}]`));
      } catch (error) {
        if (!(error instanceof InvalidJobInputError)) throw error;
        issues.push(
          ...error.issues.map((issue) => (issue.path.startsWith('jobs[') ? issue : { ...issue, path: `jobs[${index}].${issue.path}` })),
        );
      }
    });
    if (issues.length > 0) throw validationError(issues, { index: Number(/^jobs\[(\d+)\]/.exec(issues[0]!.path)?.[1] ?? 0) });
    if (key === null) return send(reply, await pushBatch(parsed));
    return keyedPush(request, reply, key, parsed, pushBatch, recoverBatch);
  });

  const enqueueBatch = async (parsed: readonly ParsedPush[]): Promise<GatewayEnqueueResult[]> => {
    await applyPushOptions(store, parsed);
    let results: GatewayEnqueueResult[];
    try {
      results = await store.enqueueBatch(parsed.map((p) => p.input));
    } catch (error) {
      if (error instanceof InvalidJobInputError) throw validationError(batchIssues(error.issues, parsed));
      // The batch wrote nothing: only the job that refused it is counted.
      if (isDuplicateJobError(error)) {
        const refused = refusedJob(
          parsed.map((p) => p.input),
          error.uniquenessKey,
          store.capabilities.unique_jobs.extensions ?? [],
        );
        if (refused) countUnique(refused, 'rejected');
      }
      throw error;
    }
    results.forEach((result, index) => countUnique(parsed[index]!.input, result.outcome));
    return results;
  };

  const batchEntry = (result: GatewayEnqueueResult) => {
    if (result.outcome === 'deduplicated') {
      recordDeduplicated(result.job);
      return { ...wireJob(result.job), deduplicated: true };
    }
    if (result.outcome === 'updated') return { ...wireJob(result.job), updated: true, changed: result.changed };
    record('job.enqueued', result.job);
    return wireJob(result.job);
  };

  const pushBatch = async (parsed: readonly ParsedPush[]): Promise<Answer> => {
    const jobs = (await enqueueBatch(parsed)).map(batchEntry);
    return { status: 201, body: { jobs, count: jobs.length } };
  };

  /** The `Idempotency-Key` of a PUSH, or null; a malformed one is `invalid_request` naming the header. */
  const idempotencyKeyOf = (request: FastifyRequest): string | null => {
    try {
      return readIdempotencyKey(request.headers['idempotency-key']);
    } catch (error) {
      if (!(error instanceof IdempotencyKeyHeaderError)) throw error;
      throw new HttpError(400, 'invalid_request', error.message, { header: IDEMPOTENCY_KEY_HEADER });
    }
  };

  /**
   * A PUSH with an `Idempotency-Key` (docs/design/gateway.md, "Idempotency keys"): the key is
   * claimed on the backend first, with the job ids the request's jobs get; then the jobs are
   * enqueued under those ids; then the answer is stored. A retry meets the stored answer, or a
   * claim still leased (409), or a lapsed claim, which it takes over: its jobs are enqueued under
   * the same ids, so a job the first attempt wrote is found, never added twice (`recover`).
   */
  const keyedPush = async (
    request: FastifyRequest,
    reply: FastifyReply,
    key: string,
    parsed: readonly ParsedPush[],
    run: (parsed: readonly ParsedPush[]) => Promise<Answer>,
    recover: (parsed: readonly ParsedPush[]) => Promise<Answer>,
  ): Promise<string> => {
    keyed.add(request);
    const recordKey: IdempotencyRecordKey = { scope: idempotencyScopeName, keyHash: idempotencyKeyDigest(key) };
    const owner = randomUUID();
    let claim: IdempotencyClaimResult;
    try {
      claim = await store.idempotency.claim({
        ...recordKey,
        fingerprint: requestFingerprint(request.method, request.routeOptions.url ?? request.url, request.body),
        owner,
        ids: parsed.map((p) => p.input.id ?? uuidv7()),
        leaseMs,
        retentionMs,
      });
    } catch (error) {
      // The claim may still land (a Redis reply lost, not the command): ended right behind it.
      store.idempotency.abandon(recordKey, owner).catch(() => undefined);
      throw new BackendError(store.backend, 'the idempotency key could not be claimed: no job was enqueued', {
        cause: error,
        written: false,
      });
    }
    if (claim.outcome === 'mismatch') {
      throw new HttpError(
        422,
        'x_idempotency_key_reused',
        `this ${IDEMPOTENCY_KEY_HEADER} was sent with another request (method, path or body): send a new key for a new request`,
        { header: IDEMPOTENCY_KEY_HEADER },
      );
    }
    if (claim.outcome === 'in_progress') {
      void reply.header('Retry-After', String(Math.max(1, Math.ceil(claim.retryAfterMs / 1000))));
      const busy = new HttpError(
        409,
        'x_idempotency_key_in_use',
        `a request with this ${IDEMPOTENCY_KEY_HEADER} is in progress: retry once it has been answered`,
        { header: IDEMPOTENCY_KEY_HEADER },
      );
      busy.retryable = true;
      throw busy;
    }
    if (claim.outcome === 'done') {
      void reply.header('Idempotent-Replayed', 'true');
      return sendStored(reply, claim.answer);
    }
    const ids = claim.ids;
    const withIds = parsed.map((p, index) => ({ ...p, input: { ...p.input, id: ids[index]! } }));
    let answer: Answer;
    try {
      answer = claim.resumed ? await recover(withIds) : await run(withIds);
    } catch (error) {
      const http = toHttpError(error, true);
      if (http.status >= 500) {
        // Whatever was written, the next request with the key takes over at once and finds it.
        store.idempotency.abandon(recordKey, owner).catch(() => undefined);
        throw error;
      }
      // A refusal (409 duplicate, 400) is the answer to this request: stored, as a success is.
      answer = { status: http.status, body: errorBody(http, request.id, retryableFor(http, request)) };
    }
    const stored: StoredAnswer = { status: answer.status, body: JSON.stringify(answer.body) };
    if (answer.location) stored.location = answer.location;
    await store.idempotency.finish(recordKey, owner, stored, retentionMs).catch((error: unknown) => {
      // The jobs are in; a retry with the key takes the claim over once it lapses and finds them.
      request.log.error({ err: error }, 'the answer of a PUSH with an idempotency key was not stored');
    });
    return sendStored(reply, stored);
  };

  const sendStored = (reply: FastifyReply, answer: StoredAnswer): string => {
    void reply.status(answer.status);
    if (answer.location) void reply.header('Location', answer.location);
    return answer.body;
  };

  /**
   * A PUSH taken over from a lapsed claim: the first attempt's job, when it exists, is the answer
   * (201, as created); otherwise the job is enqueued now, under the same id, and a duplicate that
   * turns out to be that very job (the first attempt's write landing meanwhile) is answered so too.
   */
  const recoverOne = async (parsed: ParsedPush): Promise<Answer> => {
    const id = parsed.input.id!;
    const existing = await store.getJob(id);
    if (existing) return created(existing);
    await applyPushOptions(store, [parsed]);
    let result: GatewayEnqueueResult;
    try {
      result = await store.enqueue(parsed.input);
    } catch (error) {
      if (namesOwnJobs(error, [id])) return created(await jobOf(id));
      if (error instanceof InvalidJobInputError) throw validationError(issuesFor(error, parsed.policyPath));
      if (isDuplicateJobError(error)) countUnique(parsed.input, 'rejected');
      throw error;
    }
    if (result.outcome !== 'created' && result.outcome !== 'replaced' && result.job.id === id) return created(result.job);
    countUnique(parsed.input, result.outcome);
    return answerPush(result);
  };

  /**
   * A batch taken over from a lapsed claim. A batch is one atomic step on every backend: when one
   * of its jobs exists, the first attempt wrote it; those jobs are answered as they are, and the
   * others (deduplicated or updated by that attempt) are enqueued again, as a batch of their own.
   * When none exists, the batch is enqueued now under the same ids.
   */
  const recoverBatch = async (parsed: readonly ParsedPush[], again = true): Promise<Answer> => {
    const ids = parsed.map((p) => p.input.id!);
    const existing = await Promise.all(ids.map((id) => store.getJob(id)));
    if (existing.some((job) => job !== null)) {
      const missing = parsed.filter((_, index) => existing[index] === null);
      const rest = missing.length > 0 ? await enqueueBatch(missing) : [];
      let next = 0;
      const jobs = existing.map((job) => {
        if (job === null) return batchEntry(rest[next++]!);
        record('job.enqueued', job);
        return wireJob(job);
      });
      return { status: 201, body: { jobs, count: jobs.length } };
    }
    try {
      return await pushBatch(parsed);
    } catch (error) {
      if (again && namesOwnJobs(error, ids)) return recoverBatch(parsed, false);
      throw error;
    }
  };

  const jobOf = async (id: string): Promise<GatewayJob> => {
    const job = await store.getJob(id);
    if (!job) throw notFound(id);
    return job;
  };

  app.get<{ Params: { id: string } }>('/ojs/v1/jobs/:id', async (request) => {
    const job = await store.getJob(request.params.id);
    if (!job) throw notFound(request.params.id);
    return { job: wireJob(job) };
  });

  app.delete<{ Params: { id: string } }>('/ojs/v1/jobs/:id', async (request) => {
    const before = await store.getJob(request.params.id);
    if (!before) throw notFound(request.params.id);
    const job = await store.cancel(request.params.id);
    record('job.cancelled', job);
    return { job: { ...wireJob(job), previous_state: before.state } };
  });

  app.post<{ Params: { id: string } }>('/ojs/v1/jobs/:id/activate', async (request) => {
    const job = await store.activate(request.params.id);
    return { job: { ...wireJob(job), previous_state: 'pending' } };
  });

  app.post('/ojs/v1/workers/fetch', { schema: { body: WORKER_SCHEMAS.fetch }, preValidation: bodyRequired }, async (request) => {
    const body = requireObject(request.body);
    const queues = body.queues ?? ['default'];
    if (!Array.isArray(queues) || queues.length === 0 || !queues.every((queue) => typeof queue === 'string' && queue !== '')) {
      throw new HttpError(400, 'invalid_request', 'queues must be a non-empty array of queue names', { field: 'queues' });
    }
    const workerId = typeof body.worker_id === 'string' ? body.worker_id : null;
    // A worker told to go quiet or terminate (worker-signal-routes.ts) is handed no new job.
    if (workerId !== null && (await store.workerState(workerId)) !== 'running') return { jobs: [] };
    const jobs = await store.fetch({
      queues: queues as string[],
      count: positiveInteger(body.count, 'count', 1, MAX_FETCH_COUNT),
      workerId,
      visibilityTimeoutMs:
        body.visibility_timeout_ms === undefined ? null : positiveInteger(body.visibility_timeout_ms, 'visibility_timeout_ms', 1),
    });
    for (const job of jobs) record('job.started', job);
    return { jobs: jobs.map(wireJob) };
  });

  app.post('/ojs/v1/workers/ack', { schema: { body: WORKER_SCHEMAS.ack }, preValidation: bodyRequired }, async (request) => {
    const body = requireObject(request.body);
    const id = requireId(body);
    const job = await store.ack(id, body.result as JsonValue | undefined);
    const started = job.started_at ? Date.parse(job.started_at) : Date.now();
    record('job.completed', job, { duration_ms: Math.max(0, Date.now() - started) });
    return { acknowledged: true, job_id: job.id, id: job.id, state: job.state, completed_at: job.completed_at ?? null, job: wireJob(job) };
  });

  app.post('/ojs/v1/workers/nack', { schema: { body: WORKER_SCHEMAS.nack }, preValidation: bodyRequired }, async (request) => {
    const body = requireObject(request.body);
    const id = requireId(body);
    const raw = isPlainObject(body.error) ? body.error : {};
    const error: JobError = {
      type: typeof raw.type === 'string' ? raw.type : typeof raw.code === 'string' ? raw.code : 'error',
      message: typeof raw.message === 'string' ? raw.message : 'the job failed',
    };
    if (typeof raw.code === 'string') error.code = raw.code;
    if (typeof raw.retryable === 'boolean') error.retryable = raw.retryable;
    if (raw.details !== undefined) error.details = raw.details as JsonValue;
    if (body.requeue === true) return nackAnswer(await store.release(id, error), error);
    const retry = raw.retryable !== false && body.requeue !== false;
    return nackAnswer(await store.nack(id, error, retry), error);
  });

  const nackAnswer = (job: GatewayJob, error: JobError) => {
    record(job.state === 'discarded' ? 'job.discarded' : 'job.failed', job, { error: { type: error.type, message: error.message } });
    const answer: Record<string, unknown> = {
      job_id: job.id,
      // `id` as well: the conformance suites read it.
      id: job.id,
      state: job.state,
      attempt: job.attempt,
      max_attempts: job.max_attempts,
      job: wireJob(job),
    };
    if (job.state === 'discarded') answer.discarded_at = answer.completed_at = job.completed_at ?? new Date().toISOString();
    if (job.state === 'retryable') {
      answer.next_attempt_at = job.scheduled_at;
      if (job.retry_delay_ms !== undefined) answer.retry_delay_ms = job.retry_delay_ms;
    }
    return answer;
  };

  app.post('/ojs/v1/workers/heartbeat', { schema: { body: WORKER_SCHEMAS.heartbeat }, preValidation: bodyRequired }, async (request) => {
    const body = requireObject(request.body);
    // Absent: each job's own visibility timeout (job-reservation.ts).
    const visibility =
      body.visibility_timeout_ms === undefined ? null : positiveInteger(body.visibility_timeout_ms, 'visibility_timeout_ms', 1);
    const single = typeof body.job_id === 'string' ? body.job_id : null;
    // Both lists may come (a binding-form array beside the SDK's ids): each job is extended once.
    const listed = [
      ...new Set([
        ...(Array.isArray(body.active_jobs) ? (body.active_jobs as string[]) : []),
        ...(Array.isArray(body.active_job_ids) ? (body.active_job_ids as string[]) : []),
      ]),
    ];
    if (single === null && typeof body.worker_id !== 'string') {
      throw new HttpError(400, 'invalid_request', 'worker_id is required', { field: 'worker_id' });
    }
    const extended: GatewayJob[] = [];
    // The one-job form answers the job's own refusal (404, 409), as ack and nack do.
    if (single !== null) extended.push(await store.heartbeat(single, visibility));
    // A listed job that is no longer this worker's to run (done, cancelled, reclaimed) is left out of jobs_extended.
    for (const id of listed) {
      if (id === single) continue;
      try {
        extended.push(await store.heartbeat(id, visibility));
      } catch (error) {
        if (!(error instanceof JobNotFoundError || error instanceof InvalidTransitionError)) throw error;
      }
    }
    const workerId = typeof body.worker_id === 'string' ? body.worker_id : null;
    const answer: Record<string, unknown> = {
      // What an operator asked of the worker (ojs-worker-protocol §4.4): running, quiet or terminate.
      state: await heartbeatState(store, workerId, extended, options.testReset === true),
      jobs_extended: extended.map((job) => job.id),
      server_time: new Date().toISOString(),
    };
    if (visibility !== null) answer.visibility_timeout_ms = visibility;
    if (single !== null) answer.job_id = single;
    return answer;
  });

  app.get<{ Querystring: Record<string, string | undefined> }>('/ojs/v1/events', async (request) => {
    const list = (value: string | undefined) => (value ? value.split(',').filter(Boolean) : null);
    const types = list(request.query.types);
    const queues = list(request.query.queues);
    const limit = Math.min(
      positiveInteger(request.query.limit === undefined ? undefined : Number(request.query.limit), 'limit', 100),
      1000,
    );
    const selected = events.filter(
      (event) => (!types || types.includes(event.type)) && (!queues || queues.includes(String(event.data.queue))),
    );
    return { events: selected.slice(-limit).map(eventView) };
  });

  app.get<{ Params: { name: string } }>('/ojs/v1/queues/:name/stats', async (request) => {
    const name = request.params.name;
    if (name.length > MAX_QUEUE_NAME || !QUEUE_PATTERN.test(name)) {
      throw new HttpError(400, 'invalid_request', 'the queue name must match [a-z0-9][a-z0-9.-]*, at most 128 characters', {
        field: 'name',
      });
    }
    const counts = await store.queueStats(request.params.name);
    const queue: Record<string, unknown> = { name: request.params.name, paused: await store.isPaused(request.params.name) };
    for (const state of OJS_JOB_STATES) queue[state] = counts[state] ?? 0;
    // This gateway's unique PUSHes to the queue by outcome, since it started (unique-add-counts.ts).
    queue.unique_adds = uniqueAdds.of(request.params.name);
    // The suite's shape (`queue`), and the same fields flat, as the SDKs' `queues.stats` reads them.
    return { queue, ...queue };
  });

  registerQueueControlRoutes(app, store);
  registerWorkerSignalRoutes(app, store);
  registerDeadLetterRoutes(app, store, wireJob);
  registerCronRoutes(app, store);
  // Without cron-parser (an optional peer) the cron routes answer 422 naming it, and no tick fires here.
  const cronParser = await loadCronParser().then(
    () => true,
    (error: unknown) => {
      if (error instanceof GatewayDependencyError) return false;
      throw error;
    },
  );
  if (cronParser && options.cron !== false) {
    store.cron.start(cronFirer(store, { event: emit, jobEvent: (type, job) => record(type, job) }));
  }
  registerWorkflowRoutes(app, store);

  if (options.testReset) {
    app.post('/ojs/v1/admin/reset', async () => {
      await store.reset();
      events.length = 0;
      uniqueAdds.clear();
      return { reset: true };
    });
  }

  app.addHook('onClose', async () => {
    await store.close();
  });
  return app;
}

/**
 * The job of a batch that a `DuplicateJobError` refused: the first with its key (the error names
 * the key, not the job). Two jobs of one key in different queues, under a policy without the
 * `queue` dimension, may name the wrong one of the two; only its queue is used.
 */
function refusedJob(inputs: readonly GatewayJobInput[], key: string, extensions: readonly UniqueExtension[]): GatewayJobInput | undefined {
  return inputs.find((input) => {
    if (input.unique === undefined || input.unique === null) return false;
    const { extras: _extras, pending: _pending, ...job } = input;
    return prepareUnique(job, { extensions })?.key === key;
  });
}

/**
 * Node's own request timeout stops at the headers: a body that stalls part-way holds its
 * connection for good. The body is allowed the request timeout from its headers; a request
 * still short of its body then is answered 408 and its connection closed, as Node answers late
 * headers (unless an answer went out already: a body over the limit is refused at once).
 */
function closeIfBodyLate(raw: IncomingMessage, response: ServerResponse, requestTimeoutMs: number): void {
  if (raw.complete || response.headersSent) return;
  const timer = setTimeout(() => {
    if (raw.complete || response.headersSent || !raw.socket || raw.socket.destroyed) return;
    raw.socket.end('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    raw.socket.destroySoon();
  }, requestTimeoutMs);
  timer.unref();
  const clear = () => clearTimeout(timer);
  raw.once('end', clear);
  raw.once('close', clear);
}

function notFound(id: string): HttpError {
  return new HttpError(
    404,
    'not_found',
    `job ${id} not found`,
    { resource_type: 'job', resource_id: id },
    'the id may be mistyped, or the job was removed by its host',
  );
}

/** The OJS error body of `http`. */
function errorBody(http: HttpError, requestId: string, retryable: boolean): { error: Record<string, unknown> } {
  const body: Record<string, unknown> = { code: http.code, message: http.message, retryable };
  if (http.type) body.type = http.type;
  if (http.details) body.details = http.details;
  if (http.status === 404) {
    body.hint = http.hint ?? 'check the job id or the route; the routes are listed in the OJS HTTP binding';
    body.docs_url = DOCS_URL;
  } else if (http.hint) body.hint = http.hint;
  body.request_id = requestId;
  return { error: body };
}

/**
 * Whether `error`, met by a PUSH that enqueued under `ids`, says those jobs exist: a taken id, or
 * a duplicate that is one of them. Such a PUSH had written them before (its reply was lost).
 */
function namesOwnJobs(error: unknown, ids: readonly string[]): boolean {
  const takenId = (path: unknown, message?: string) =>
    typeof path === 'string' && /(^|\.)id$/.test(path) && (message === undefined || /already exists/.test(message));
  if (error instanceof DuplicateJobError) return ids.includes(error.existingJobId);
  if (error instanceof InvalidJobInputError) return error.issues.some((issue) => takenId(issue.path, issue.message));
  if (error instanceof HttpError && error.code === 'duplicate') {
    return takenId(error.details?.field) || ids.includes(String(error.details?.existing_job_id));
  }
  return false;
}

/** `writes`: the request asked for a write, so a 5xx says whether it happened (`details.written`). */
function toHttpError(error: unknown, writes = false): HttpError {
  if (error instanceof HttpError) return error;
  if (error instanceof DuplicateJobError) {
    return new HttpError(409, 'duplicate', error.message, {
      existing_job_id: error.existingJobId,
      existing_job_state: error.existingJobState,
      uniqueness_key: error.uniquenessKey,
      reason: error.reason,
    });
  }
  if (error instanceof InvalidJobInputError) return validationError(error.issues);
  if (error instanceof JobNotFoundError) return notFound(error.jobId);
  if (error instanceof GatewayDependencyError) return new HttpError(422, 'unsupported', error.message, { missing: [...error.packages] });
  if (error instanceof CronNotFoundError) {
    return new HttpError(
      404,
      'not_found',
      error.message,
      { resource_type: 'cron', resource_id: error.cronName },
      'list the crons: GET /ojs/v1/cron',
    );
  }
  if (error instanceof InvalidTransitionError) {
    return new HttpError(409, 'conflict', `job ${error.jobId} is ${error.from}: it cannot become ${error.to}`, {
      job_id: error.jobId,
      current_state: error.from,
    });
  }
  if (isBackendError(error)) {
    // A branded error of another copy of the package may lack `written`: then it is not known.
    const written = error.written ?? 'unknown';
    const http = new HttpError(503, 'backend_unavailable', 'the backend failed; see the server log', writes ? { written } : undefined);
    http.written = written;
    return http;
  }
  const fastify = error as {
    statusCode?: number;
    code?: string;
    message?: string;
    validation?: { instancePath: string; message?: string; params?: { missingProperty?: string } }[];
  };
  if (fastify.validation) {
    const issues = fastify.validation.map((issue) => {
      const path = [
        issue.instancePath
          .replace(/^\//, '')
          .replace(/\/(\d+)/g, '[$1]')
          .replace(/\//g, '.'),
        issue.params?.missingProperty,
      ]
        .filter(Boolean)
        .join('.');
      return { path: path || 'body', message: issue.message ?? 'is invalid' };
    });
    return validationError(issues);
  }
  if (fastify.statusCode === 413) return new HttpError(413, 'payload_too_large', 'the request body is larger than the server accepts');
  if (fastify.statusCode === 415) return new HttpError(415, 'unsupported_media_type', 'send application/openjobspec+json');
  if (fastify.statusCode && fastify.statusCode >= 400 && fastify.statusCode < 500) {
    return new HttpError(fastify.statusCode, 'invalid_request', fastify.message ?? 'bad request');
  }
  const internal = new HttpError(500, 'internal_error', 'internal error; see the server log', writes ? { written: 'unknown' } : undefined);
  internal.written = 'unknown';
  return internal;
}
