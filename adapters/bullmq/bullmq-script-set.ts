/**
 * The adapter's Lua scripts, composed with the installed BullMQ's own add scripts and registered
 * on a Redis client.
 *
 * BullMQ's add scripts are reused, not copied: `unique-add` splices
 * addStandardJob, addDelayedJob and addPrioritizedJob from `bullmq/dist/cjs/scripts` into itself
 * at start-up. That is a dependency on BullMQ internals, so it is checked here, once, before any
 * script runs: the major version, the three scripts with their key counts, the argument layout
 * they unpack, and the backend seam used to encode a job exactly as BullMQ does. Anything
 * missing fails with a `BackendError` naming it, instead of jobs that silently never run.
 */
import { createRequire } from 'node:module';
import { BackendError } from '../../src/errors.js';
import { useFastEncoding } from './bullmq-script-encoding.js';
import { luaScripts } from './generated/lua.js';

/** BullMQ majors this adapter is written and tested against. */
export const SUPPORTED_BULLMQ_RANGE = '>=6.0.0 <7.0.0';

const BULLMQ_ADD_SCRIPTS = { addStandardJob: 9, addDelayedJob: 6, addPrioritizedJob: 9 } as const;

export interface BullMQScriptSource {
  name: string;
  content: string;
  keys: number;
}

/** The command names registered with ioredis `defineCommand` (suffixed so they never clash with BullMQ's). */
export const COMMANDS = {
  uniqueAdd: 'ojsUniqueAdd',
  uniqueProbe: 'ojsUniqueProbe',
  getJob: 'ojsGetJob',
  cancelJob: 'ojsCancelJob',
} as const;

export interface ComposedScript {
  command: string;
  numberOfKeys: number;
  lua: string;
}

let composed: ComposedScript[] | undefined;

/**
 * The composed scripts for the installed bullmq, built on first use. Throws `BackendError` when
 * it lacks what they rely on.
 */
export function composedScripts(): ComposedScript[] {
  if (composed) return composed;
  const require = createRequire(import.meta.url);
  let version: string;
  let shipped: Record<string, BullMQScriptSource | undefined>;
  try {
    version = (require('bullmq/package.json') as { version: string }).version;
    shipped = require('bullmq/dist/cjs/scripts') as Record<string, BullMQScriptSource | undefined>;
  } catch (error) {
    throw unsupported('cannot load bullmq/dist/cjs/scripts', error);
  }
  composed = composeScripts(version, shipped);
  return composed;
}

/** The start-up check and the splice, on a given BullMQ version and scripts module (exported for tests). */
export function composeScripts(version: string, shipped: Record<string, BullMQScriptSource | undefined>): ComposedScript[] {
  if (Number(version.split('.')[0]) !== 6) throw unsupported(`version ${version}`);
  for (const [name, keys] of Object.entries(BULLMQ_ADD_SCRIPTS)) {
    const script = shipped[name];
    if (!script || typeof script.content !== 'string') throw unsupported(`script ${name} is missing`);
    if (script.keys !== keys) throw unsupported(`script ${name} takes ${script.keys} keys, expected ${keys}`);
    // The splice feeds the script the argument layout BullMQ's own encoder produced; these are the
    // lines that read it.
    for (const marker of ['cmsgpack.unpack(ARGV[1])', 'ARGV[2]', 'return jobId']) {
      if (!script.content.includes(marker)) throw unsupported(`script ${name} no longer contains ${marker}`);
    }
  }
  const splice = (lua: string) =>
    lua.replace(/^--- @bullmq "(\w+)"\s*$/gm, (_line, name: string) => {
      if (!(name in BULLMQ_ADD_SCRIPTS)) throw new Error(`--- @bullmq "${name}": not one of the checked BullMQ scripts`);
      return `local function __bullmq_${name}(KEYS, ARGV)\n${shipped[name]!.content}\nend`;
    });
  return [
    { command: COMMANDS.uniqueAdd, numberOfKeys: luaScripts['unique-add'].numberOfKeys, lua: splice(luaScripts['unique-add'].lua) },
    { command: COMMANDS.uniqueProbe, numberOfKeys: luaScripts['unique-probe'].numberOfKeys, lua: luaScripts['unique-probe'].lua },
    { command: COMMANDS.getJob, numberOfKeys: luaScripts['get-job'].numberOfKeys, lua: luaScripts['get-job'].lua },
    { command: COMMANDS.cancelJob, numberOfKeys: luaScripts['cancel-job'].numberOfKeys, lua: luaScripts['cancel-job'].lua },
  ];
}

function unsupported(why: string, cause?: unknown): BackendError {
  return new BackendError('bullmq', `the installed bullmq is not supported (${why}); ojs-unique/bullmq supports bullmq ${SUPPORTED_BULLMQ_RANGE}`, {
    cause,
    written: false,
  });
}

/** The slice of an ioredis client (or BullMQ's proxy of one) the scripts need. */
export interface ScriptClient {
  defineCommand(name: string, definition: { numberOfKeys: number; lua: string }): void;
  pipeline(): ScriptPipeline;
}

export interface ScriptPipeline {
  exec(): Promise<[Error | null, unknown][] | null>;
}

const registered = new WeakSet<object>();

/** Registers the composed scripts on `client` once (EVALSHA with a NOSCRIPT fallback, via ioredis). */
export function ensureScripts(client: ScriptClient): void {
  if (registered.has(client)) return;
  for (const script of composedScripts()) {
    client.defineCommand(script.command, { numberOfKeys: script.numberOfKeys, lua: script.lua });
    useFastEncoding(client, script.command, script.lua);
  }
  registered.add(client);
}

/** Runs a registered script on a client or pipeline. */
export function runScript(target: object, command: string, args: (string | number | Buffer)[]): Promise<unknown> {
  const fn = (target as Record<string, unknown>)[command];
  if (typeof fn !== 'function') throw new BackendError('bullmq', `script ${command} is not registered on this client`, { written: false });
  return (fn as (...a: unknown[]) => Promise<unknown>).apply(target, args);
}
