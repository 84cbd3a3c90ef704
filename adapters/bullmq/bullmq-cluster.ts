/**
 * Redis Cluster errors as typed errors that say what to change. Everything one script or
 * pipeline touches must be in one hash slot: with BullMQ's keys that means a hash-tagged prefix
 * (docs/bullmq.md, "Redis Cluster"). A plain client pointed at one node of a cluster meets MOVED
 * for keys that node does not own: it needs an ioredis `Cluster`.
 */
import { BackendError, isBackendError, isOjsUniqueError, type OjsUniqueError } from '../../src/errors.js';
import { backendErrorFor } from './bullmq-reply-errors.js';

const HASH_TAG_HINT =
  'use a hash-tagged prefix, e.g. prefix: \'{myapp}\', so that every key of the prefix is in one hash slot (docs/bullmq.md, "Redis Cluster")';

/** The typed error for a Redis Cluster error, or undefined when `error` is not one. */
export function clusterErrorFor(error: unknown): BackendError | undefined {
  // The core's other errors are never a Redis error (their messages can hold a caller's job id).
  if (isOjsUniqueError(error) && !isBackendError(error)) return undefined;
  // Also a BackendError that already wraps one (its cause).
  const raw = isBackendError(error) && error.cause instanceof Error ? error.cause : error;
  if (!(raw instanceof Error)) return undefined;
  const message = raw.message;
  // Refused by Redis before running (CROSSSLOT) or by ioredis before sending (a pipeline over slots).
  if (/^CROSSSLOT\b/.test(message) || message.includes('same slots allocation group')) {
    return new BackendError('bullmq', `Redis Cluster: the keys of one operation are in different hash slots: ${HASH_TAG_HINT}`, {
      cause: raw,
      written: false,
    });
  }
  // A script that reached a key of another slot while running: it may have written before.
  if (/non local key in a cluster node|do not hash to the same slot|cross.slot/i.test(message)) {
    return new BackendError('bullmq', `Redis Cluster: a script reached keys in different hash slots: ${HASH_TAG_HINT}`, { cause: raw });
  }
  const moved = /^(MOVED|ASK) \d+ (\S+)/.exec(message);
  if (moved) {
    return new BackendError(
      'bullmq',
      `Redis Cluster: the node connected to does not own the key (${moved[1]} to ${moved[2]}); connect with an ioredis Cluster (new Cluster([...nodes])) and a hash-tagged prefix`,
      { cause: raw, written: false },
    );
  }
  return undefined;
}

/** `backendErrorFor`, with Redis Cluster errors made to say what to change. */
export function typedErrorFor(error: unknown, options: { written?: false } = {}): OjsUniqueError {
  return clusterErrorFor(error) ?? backendErrorFor(error, options);
}
