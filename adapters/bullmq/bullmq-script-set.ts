/**
 * The adapter's Lua scripts, composed with the installed BullMQ's own add scripts.
 *
 * BullMQ's add scripts are reused, not copied: `unique-add` splices addStandardJob, addDelayedJob
 * and addPrioritizedJob from the installed bullmq into itself at start-up, each one building its
 * KEYS from unique-add's by name; every script also gets the BullMQ facts it uses
 * (`BULLMQ_LUA`). All of that is BullMQ internals, checked once before any script runs
 * (bullmq-host.ts, `loadAddScripts`): an unsupported BullMQ fails with a `BackendError` naming
 * what differs, instead of jobs that silently never run.
 *
 * `npm run print:lua` writes the composed scripts to disk, so that the line number of a Lua
 * error means something.
 */
import { BackendError } from '../../src/errors.js';
import {
  BULLMQ_ADD_SCRIPTS,
  BULLMQ_MOVE_SCRIPTS,
  BULLMQ_LUA,
  installedBullMQ,
  loadAddScripts,
  SUPPORTED_BULLMQ_RANGE,
  type BullMQAddScript,
  type BullMQMoveScript,
  type InstalledBullMQ,
  type IoredisTarget,
} from './bullmq-host.js';
import { OjsScript, type ScriptArgument } from './bullmq-script-command.js';
import { luaScripts } from './generated/lua.js';

export { SUPPORTED_BULLMQ_RANGE };
export type { ShippedScript as BullMQScriptSource } from './bullmq-host.js';

/** The names the scripts go by in messages and tests. */
export const COMMANDS = {
  uniqueAdd: 'ojsUniqueAdd',
  uniqueProbe: 'ojsUniqueProbe',
  getJob: 'ojsGetJob',
  cancelJob: 'ojsCancelJob',
  uniqueFind: 'ojsUniqueFind',
  uniqueRelease: 'ojsUniqueRelease',
  dropQueueEntries: 'ojsDropQueueEntries',
} as const;

/** unique-add's KEYS[1..11]: the queue's own keys, by `queue.keys` name (lua/unique-add-12.lua). */
export const UNIQUE_ADD_QUEUE_KEYS = [
  'wait',
  'paused',
  'meta',
  'id',
  'completed',
  'delayed',
  'active',
  'events',
  'marker',
  'prioritized',
  'pc',
] as const;

export type ComposedScript = OjsScript;

let composed: ComposedScript[] | undefined;

/**
 * The composed scripts for the installed bullmq, built on first use. Throws `BackendError` when
 * it lacks what they rely on.
 */
export function composedScripts(): ComposedScript[] {
  composed ??= composeScripts(installedBullMQ());
  return composed;
}

/** The start-up check and the splice, on a given BullMQ version and scripts module (exported for tests). */
export function composeScripts(bullmq: Pick<InstalledBullMQ, 'version' | 'scripts'>): ComposedScript[] {
  const shipped = loadAddScripts(bullmq);
  const withHost = (lua: string) => lua.replace(/^--- @bullmq-host\s*$/m, () => BULLMQ_LUA);
  const splice = (lua: string) =>
    withHost(lua).replace(/^--- @bullmq "(\w+)"\s*$/gm, (_line, name: string) => {
      const queueKeys =
        name in BULLMQ_ADD_SCRIPTS
          ? BULLMQ_ADD_SCRIPTS[name as BullMQAddScript]
          : name in BULLMQ_MOVE_SCRIPTS
            ? BULLMQ_MOVE_SCRIPTS[name as BullMQMoveScript].queue
            : null;
      if (!queueKeys) throw new Error(`--- @bullmq "${name}": not one of the checked BullMQ scripts`);
      const keys = queueKeys.map((key) => `KEYS[${uniqueAddKeyIndex(key)}]`).join(', ');
      return `local function __bullmq_${name}(ARGV)\nlocal KEYS = { ${keys} }\n${shipped[name as BullMQAddScript | BullMQMoveScript].content}\nend`;
    });
  return [
    new OjsScript(COMMANDS.uniqueAdd, luaScripts['unique-add'].numberOfKeys, splice(luaScripts['unique-add'].lua)),
    new OjsScript(COMMANDS.uniqueProbe, luaScripts['unique-probe'].numberOfKeys, withHost(luaScripts['unique-probe'].lua)),
    new OjsScript(COMMANDS.getJob, luaScripts['get-job'].numberOfKeys, withHost(luaScripts['get-job'].lua)),
    new OjsScript(COMMANDS.cancelJob, luaScripts['cancel-job'].numberOfKeys, withHost(luaScripts['cancel-job'].lua)),
    new OjsScript(COMMANDS.uniqueFind, luaScripts['unique-find'].numberOfKeys, withHost(luaScripts['unique-find'].lua)),
    new OjsScript(COMMANDS.uniqueRelease, luaScripts['unique-release'].numberOfKeys, withHost(luaScripts['unique-release'].lua)),
    new OjsScript(COMMANDS.dropQueueEntries, luaScripts['drop-queue-entries'].numberOfKeys, withHost(luaScripts['drop-queue-entries'].lua)),
  ];
}

function uniqueAddKeyIndex(name: string): number {
  const index = (UNIQUE_ADD_QUEUE_KEYS as readonly string[]).indexOf(name);
  if (index < 0) throw new Error(`BullMQ's add scripts take the queue key "${name}", which unique-add does not have`);
  return index + 1;
}

/** The file name `npm run print:lua` gives a composed script. */
export function printedName(script: ComposedScript): string {
  const names: Record<string, string> = {
    [COMMANDS.uniqueAdd]: 'unique-add',
    [COMMANDS.uniqueProbe]: 'unique-probe',
    [COMMANDS.getJob]: 'get-job',
    [COMMANDS.cancelJob]: 'cancel-job',
    [COMMANDS.uniqueFind]: 'unique-find',
    [COMMANDS.uniqueRelease]: 'unique-release',
    [COMMANDS.dropQueueEntries]: 'drop-queue-entries',
  };
  return `${names[script.command] ?? script.command}.lua`;
}

/** Runs a composed script (by its `COMMANDS` name) on a client, Cluster or pipeline. */
export function runScript(target: object, command: string, args: ScriptArgument[]): Promise<unknown> {
  const script = composedScripts().find((candidate) => candidate.command === command);
  if (!script) throw new BackendError('bullmq', `no script ${command}`, { written: false });
  return script.run(target as IoredisTarget, args);
}
