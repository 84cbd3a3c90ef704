/**
 * The adapter's Lua scripts, composed with the installed BullMQ's own add scripts.
 *
 * BullMQ's add scripts are reused, not copied: `unique-add` splices addStandardJob, addDelayedJob
 * and addPrioritizedJob from the installed bullmq into itself at start-up, each one building its
 * KEYS from unique-add's by name (`unique-flow` also addParentJob and BullMQ's release of a flow's
 * parents, when the installed BullMQ has them); every script also gets the BullMQ facts it uses
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
  BULLMQ_FLOW_SCRIPTS,
  BULLMQ_MOVE_SCRIPTS,
  BULLMQ_LUA,
  BULLMQ_STORE_JOB_HMSET,
  installedBullMQ,
  loadAddScripts,
  storeJobHookProblem,
  flowScriptProblem,
  SUPPORTED_BULLMQ_RANGE,
  type BullMQAddScript,
  type BullMQFlowScript,
  type BullMQMoveScript,
  type InstalledBullMQ,
  type IoredisTarget,
} from './bullmq-host.js';
import { OjsScript, OjsScriptLibrary, SCRIPT_HEAD, type EncodedArguments, type ScriptArgument } from './bullmq-script-command.js';
import { luaScripts, type LuaScriptSource } from './generated/lua.js';

export { SUPPORTED_BULLMQ_RANGE };
export type { ShippedScript as BullMQScriptSource } from './bullmq-host.js';

/** The names the scripts go by in messages and tests. */
export const COMMANDS = {
  uniqueAdd: 'ojsUniqueAdd',
  uniqueNativeAdd: 'ojsUniqueNativeAdd',
  uniqueProbe: 'ojsUniqueProbe',
  getJob: 'ojsGetJob',
  cancelJob: 'ojsCancelJob',
  uniqueFind: 'ojsUniqueFind',
  uniqueExplain: 'ojsUniqueExplain',
  uniqueRelease: 'ojsUniqueRelease',
  dropQueueEntries: 'ojsDropQueueEntries',
  uniqueFlow: 'ojsUniqueFlow',
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

/**
 * Where unique-add's ARGV[1] is in a command's arguments (after `SCRIPT_HEAD` and its 12 keys):
 * ARGV[n] is at `UNIQUE_ADD_ARGV + n - 1`. Its 22 arguments are followed by the layout check.
 */
export const UNIQUE_ADD_ARGV = SCRIPT_HEAD + UNIQUE_ADD_QUEUE_KEYS.length + 1;
export const UNIQUE_ADD_ARGV_COUNT = 23;
/** unique-probe's ARGV[1] (after its 3 keys), and its count of arguments before the layout check. */
export const UNIQUE_PROBE_ARGV = SCRIPT_HEAD + 3;
/**
 * unique-native-add's count of arguments before the layout check (lua/unique-native-add-12.lua:
 * unique-add's keys, then only what its native path reads). Its ARGV[1] is at `UNIQUE_ADD_ARGV`.
 */
export const UNIQUE_NATIVE_ADD_ARGV_COUNT = 13;
export const UNIQUE_PROBE_ARGV_COUNT = 17;

/**
 * The keys a script that splices BullMQ's scripts by name hands each of them (`K`): unique-add's
 * KEYS[1..12] (the queue's keys above, then an index key), then, in unique-flow only, the
 * queue's waiting-children key for addParentJob.
 */
const SPLICED_KEYS: readonly string[] = [...UNIQUE_ADD_QUEUE_KEYS, '(index)', 'waiting-children'];

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

/**
 * What a spliced BullMQ script sees as `cmsgpack`: the real one, except that `unpack` hands back a
 * table it is given. unique-add has unpacked BullMQ's args and options already (to read them and
 * to set the timestamp): it passes the tables, and BullMQ's script takes them as they are instead
 * of a pack and two unpacks more. A string (unique-flow's nodes) is unpacked as before. The
 * global is read when the functions run: a function library cannot reach it while it loads.
 */
const BULLMQ_MSGPACK_SHIM = `local OJS_BULLMQ_MSGPACK = {
  pack = function(...) return cmsgpack.pack(...) end,
  unpack = function(packed, ...)
    if type(packed) == "table" then return packed end
    return cmsgpack.unpack(packed, ...)
  end,
}`;

/**
 * The end of storeJob's HMSET of the job hash, hooked (bullmq-host.ts, BULLMQ_STORE_JOB_HMSET):
 * the fields a caller put in its BullMQ argument table (`ojsFields`) are written with BullMQ's own.
 */
const STORE_FIELDS_HOOK = `local function ojsUnpackWith(values, extra)
  if extra then for i = 1, #extra do values[#values + 1] = extra[i] end end
  return unpack(values)
end`;

/** The start-up check and the splice, on a given BullMQ version and scripts module (exported for tests). */
export function composeScripts(bullmq: Pick<InstalledBullMQ, 'version' | 'scripts'>): ComposedScript[] {
  const shipped: Record<string, { content: string }> = { ...loadAddScripts(bullmq) };
  // Each flow script on its own: without BullMQ's release step (6.0.0), unique-flow still inserts
  // a lone child under an existing parent; a tree needs the step (flowScriptsProblem).
  const problems: Partial<Record<BullMQFlowScript, string>> = {};
  for (const name of Object.keys(BULLMQ_FLOW_SCRIPTS) as BullMQFlowScript[]) {
    const problem = flowScriptProblem(name, bullmq.scripts[name]);
    if (problem) problems[name] = `bullmq ${bullmq.version}: ${problem}`;
    else shipped[name] = bullmq.scripts[name]!;
  }
  // Every add script must take the hook, or none is rewritten (the scripts then HSET their fields).
  const storesFields = (Object.keys(BULLMQ_ADD_SCRIPTS) as BullMQAddScript[]).every(
    (name) => storeJobHookProblem(name, shipped[name]) === null,
  );
  const hooked = (name: string, content: string) =>
    storesFields && name in BULLMQ_ADD_SCRIPTS
      ? content.replace(BULLMQ_STORE_JOB_HMSET, (hmset) =>
          hmset.replace(/unpack\(optionalValues\)\)$/, 'ojsUnpackWith(optionalValues, ojsStoreFields))'),
        )
      : content;
  const shimText = `${BULLMQ_MSGPACK_SHIM}\nlocal BULLMQ_STORES_OJS_FIELDS = ${storesFields}\n${STORE_FIELDS_HOOK}`;
  const withHost = (lua: string) => lua.replace(/^--- @bullmq-host\s*$/m, () => BULLMQ_LUA);
  const splice = (lua: string) => {
    let shimmed = false;
    return withHost(lua)
      .replace(/^--- @bullmq "(\w+)"\s*$/gm, (_line, name: string) => {
        const queueKeys =
          name in BULLMQ_ADD_SCRIPTS
            ? BULLMQ_ADD_SCRIPTS[name as BullMQAddScript]
            : name in BULLMQ_MOVE_SCRIPTS
              ? BULLMQ_MOVE_SCRIPTS[name as BullMQMoveScript].queue
              : name === 'addParentJob'
                ? BULLMQ_FLOW_SCRIPTS.addParentJob.queue
                : null;
        if (!queueKeys) throw new Error(`--- @bullmq "${name}": not one of the checked BullMQ scripts`);
        const script = shipped[name];
        if (!script) throw new Error(`--- @bullmq "${name}": ${problems[name as BullMQFlowScript] ?? 'missing'}`);
        const keys = queueKeys.map((key) => `K[${splicedKeyIndex(key)}]`).join(', ');
        const shim = shimmed ? '' : `${shimText}\n`;
        shimmed = true;
        const { helpers, body } = hoistHelpers(hooked(name, script.content));
        // The helpers are defined once per block (once per library load), the body runs per call;
        // storeJob's hook reads the fields of the call (ojsStoreFields) rather than its ARGV.
        return [
          `${shim}local __bullmq_${name}`,
          'do',
          'local rcall = redis.call',
          'local cmsgpack = OJS_BULLMQ_MSGPACK',
          'local ojsStoreFields',
          helpers,
          `__bullmq_${name} = function(K, ARGV)`,
          `local KEYS = { ${keys} }`,
          'local cmsgpack = OJS_BULLMQ_MSGPACK',
          'ojsStoreFields = ARGV.ojsFields',
          body,
          'end',
          'end',
        ].join('\n');
      })
      .replace(/^--- @bullmq-raw "(\w+)"\s*$/gm, (_line, name: string) => {
        if (name !== 'releaseParentIfNoPendingDependencies')
          throw new Error(`--- @bullmq-raw "${name}": not one of the checked BullMQ scripts`);
        const script = shipped[name];
        // Without it (an older BullMQ), a stub: ojs-detach-child then leaves the parent as it is.
        if (!script) return `local BULLMQ_CAN_RELEASE_PARENT = false\nlocal function __bullmq_${name}(KEYS, ARGV) return nil end`;
        return `local BULLMQ_CAN_RELEASE_PARENT = true\nlocal function __bullmq_${name}(KEYS, ARGV)\n${script.content}\nend`;
      });
  };
  // Each script split where its definitions end (mainAt), then spliced: the splices are definitions.
  const script = (
    command: string,
    source: LuaScriptSource,
    compose: (lua: string) => string,
    resent?: (args: unknown[], first: number) => void,
  ) => {
    const at = mainStart(source.lua);
    const definitions = compose(source.lua.slice(0, at));
    return new OjsScript(command, source.numberOfKeys, definitions + compose(source.lua.slice(at)), definitions.length, resent);
  };
  const scripts = [
    script(COMMANDS.uniqueAdd, luaScripts['unique-add'], splice, markNativeResent(22)),
    script(COMMANDS.uniqueProbe, luaScripts['unique-probe'], withHost),
    script(COMMANDS.getJob, luaScripts['get-job'], withHost),
    script(COMMANDS.cancelJob, luaScripts['cancel-job'], splice),
    script(COMMANDS.uniqueFind, luaScripts['unique-find'], withHost),
    script(COMMANDS.uniqueExplain, luaScripts['unique-explain'], withHost),
    script(COMMANDS.uniqueRelease, luaScripts['unique-release'], withHost),
    script(COMMANDS.dropQueueEntries, luaScripts['drop-queue-entries'], withHost),
    script(COMMANDS.uniqueNativeAdd, luaScripts['unique-native-add'], splice, markNativeResent(12)),
  ];
  childProblem = problems.addParentJob ?? null;
  treeProblem = childProblem ?? problems.releaseParentIfNoPendingDependencies ?? null;
  if (childProblem === null) scripts.push(script(COMMANDS.uniqueFlow, luaScripts['unique-flow'], splice));
  // Every script of the set, as one function library (Redis >= 7; bullmq-script-command.ts).
  new OjsScriptLibrary(scripts);
  return scripts;
}

/**
 * unique-add's ARGV[22] "n" (the native path) becomes "r" when ioredis writes the add again after
 * a lost reply: a native job that finished meanwhile has no deduplication key left to find its
 * token by, so the re-run looks among the jobs finished within the replay grace
 * (lua/includes/ojs-native-add.lua). unique-native-add's flag is its last argument before the
 * layout check too (ARGV[12]); both scripts take unique-add's keys.
 */
function markNativeResent(flagArgv: number): (args: unknown[], first: number) => void {
  return (args, first) => {
    const native = first + luaScripts['unique-add'].numberOfKeys + flagArgv - 1;
    if (args[native] === 'n') args[native] = 'r';
  };
}

/**
 * Where a script's definitions end (a string offset, at a line start): the longest head made of
 * comments, `local function`s (closed by an `end` at the start of a line), `--- @bullmq…`
 * splices, `local x = redis.<fn>` bindings and constants (capitalised names given literals:
 * numbers, strings, booleans, one-line tables of those). In a function library that head runs
 * once, at load, so it must neither read KEYS, ARGV or Redis nor hold state a call changes:
 * anything else, and all that follows it, runs on every call.
 */
export function mainStart(lua: string): number {
  const lines = lua.split('\n');
  let offset = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    let last = i;
    if (line.startsWith('--[[')) {
      while (last < lines.length && !lines[last]!.includes(']]')) last++;
    } else if (/^local function [\w.]+\(/.test(line)) {
      if (!/\bend\s*$/.test(line)) while (last < lines.length && !/^end\b/.test(lines[last]!)) last++;
    } else if (!(line.trim() === '' || line.startsWith('--') || DEFINITION.test(line))) return offset;
    for (; i <= last && i < lines.length; i++) offset += lines[i]!.length + 1;
    i--;
  }
  return lua.length;
}

const LITERAL = String.raw`(?:-?\d+(?:\.\d+)?|"[^"\\]*"|'[^'\\]*'|true|false|nil|\{[\w\s=,."'-]*\})`;
const DEFINITION = new RegExp(
  String.raw`^local (?:\w+ = redis\.\w+|[A-Z][A-Z0-9_]*(?:, [A-Z][A-Z0-9_]*)* = ${LITERAL}(?:, ${LITERAL})*)\s*(?:--.*)?$`,
);

/**
 * A BullMQ script split into its helper functions and the rest. BullMQ's scripts define their
 * helpers (`local function`, about 25 in an add script) among their statements; spliced as the
 * body of one function, they would be made again (a closure each) on every call. Hoisted before
 * it, they are made once per block: once per function library load (Redis >= 7), once per call
 * as a script, as before. Only where that changes nothing, checked on the text: every top-level
 * `local function` of the script is defined once, and reads no top-level local declared before
 * it (`KEYS` and `ARGV` included), except `rcall`, which the block binds to `redis.call` too, and
 * its own parameters. Otherwise nothing is hoisted (the script is spliced whole, as before).
 */
export function hoistHelpers(content: string): { helpers: string; body: string } {
  const lines = content.split('\n');
  const helpers: string[] = [];
  const body: string[] = [];
  const names = new Set<string>();
  // The top-level locals declared so far (the main statements' and the helpers').
  const declared = new Set<string>(['KEYS', 'ARGV']);
  const whole = { helpers: '', body: content };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (!line.startsWith('local function ')) {
      const local = /^local (?!function\b)([\w, ]+?)\s*(?:=|$)/.exec(line);
      if (local) for (const name of local[1]!.split(',')) if (name.trim() !== 'rcall') declared.add(name.trim());
      body.push(line);
      continue;
    }
    let last = i;
    if (!/\bend\s*$/.test(line)) while (last < lines.length && !/^end\b/.test(lines[last]!)) last++;
    const text = lines.slice(i, last + 1).join('\n');
    const header = /^local function (\w+)\(([^)]*)\)/.exec(text);
    if (last >= lines.length || !header || names.has(header[1]!)) return whole;
    names.add(header[1]!);
    const params = new Set(header[2]!.split(',').map((param) => param.trim()));
    const code = luaCode(text.slice(header[0].length)).split('\n');
    for (const name of declared) if (!params.has(name) && !ownLocalOnly(code, name)) return whole;
    helpers.push(text);
    i = last;
  }
  return { helpers: helpers.join('\n'), body: body.join('\n') };
}

/**
 * Whether every use of `name` in a function's lines (comments and strings removed) is within the
 * scope of a `local name` of the function's own: at or after the declaration, before the first
 * line indented less than it (the end of its block; BullMQ's scripts are indented by block).
 */
function ownLocalOnly(lines: readonly string[], name: string): boolean {
  const use = new RegExp(`(?<![\\w.:])${name}\\b`);
  const declaration = new RegExp(`^(\\s*)local (?:[\\w\\s]+,\\s*)*${name}\\b`);
  let scopeIndent = -1;
  for (const line of lines) {
    const indent = line.length - line.trimStart().length;
    if (scopeIndent >= 0 && line.trim() !== '' && indent < scopeIndent) scopeIndent = -1;
    const declared = declaration.exec(line);
    if (declared) scopeIndent = declared[1]!.length;
    else if (scopeIndent < 0 && use.test(line)) return false;
  }
  return true;
}

/** Lua source without its comments and string literals (each left as `""`), for looking up names. */
function luaCode(lua: string): string {
  let out = '';
  for (let i = 0; i < lua.length;) {
    const c = lua[i]!;
    if (c === '-' && lua[i + 1] === '-') {
      const long = /^--\[(=*)\[/.exec(lua.slice(i, i + 8));
      const end = long ? lua.indexOf(`]${long[1]}]`, i) : lua.indexOf('\n', i);
      i = end < 0 ? lua.length : long ? end + long[1]!.length + 2 : end;
    } else if (c === '"' || c === "'") {
      let j = i + 1;
      while (j < lua.length && lua[j] !== c) j += lua[j] === '\\' ? 2 : 1;
      out += '""';
      i = j + 1;
    } else if (c === '[' && /^\[=*\[/.test(lua.slice(i, i + 8))) {
      const level = /^\[(=*)\[/.exec(lua.slice(i, i + 8))![1]!;
      const end = lua.indexOf(`]${level}]`, i);
      out += '""';
      i = end < 0 ? lua.length : end + level.length + 2;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

let childProblem: string | null = null;
let treeProblem: string | null = null;

/**
 * Why unique-flow cannot insert, on the installed BullMQ, a flow tree (`tree`: a node with
 * children; the default) or a lone unique node under an existing parent: a script it splices is
 * missing or differs. Null when it can.
 */
export function flowScriptsProblem({ tree = true }: { tree?: boolean } = {}): string | null {
  composedScripts();
  return tree ? treeProblem : childProblem;
}

function splicedKeyIndex(name: string): number {
  const index = SPLICED_KEYS.indexOf(name);
  if (index < 0) throw new Error(`BullMQ's scripts take the queue key "${name}", which the spliced key table does not have`);
  return index + 1;
}

/** The file name `npm run print:lua` gives a composed script. */
export function printedName(script: ComposedScript): string {
  const names: Record<string, string> = {
    [COMMANDS.uniqueAdd]: 'unique-add',
    [COMMANDS.uniqueNativeAdd]: 'unique-native-add',
    [COMMANDS.uniqueProbe]: 'unique-probe',
    [COMMANDS.getJob]: 'get-job',
    [COMMANDS.cancelJob]: 'cancel-job',
    [COMMANDS.uniqueFind]: 'unique-find',
    [COMMANDS.uniqueExplain]: 'unique-explain',
    [COMMANDS.uniqueRelease]: 'unique-release',
    [COMMANDS.dropQueueEntries]: 'drop-queue-entries',
    [COMMANDS.uniqueFlow]: 'unique-flow',
  };
  return `${names[script.command] ?? script.command}.lua`;
}

/** Runs a composed script (by its `COMMANDS` name) on a client, Cluster or pipeline. */
export function runScript(target: object, command: string, args: readonly ScriptArgument[]): Promise<unknown> {
  return scriptNamed(command).run(target as IoredisTarget, args);
}

/**
 * `runScript` without a copy: `args` starts with `SCRIPT_HEAD` slots for the script to fill and
 * is the command's from then on (`OjsScript#send`).
 */
export function sendScript(
  target: object,
  command: string,
  args: ScriptArgument[],
  segments?: readonly EncodedArguments[],
): Promise<unknown> {
  return scriptNamed(command).send(target as IoredisTarget, args, segments);
}

function scriptNamed(command: string): ComposedScript {
  const scripts = composedScripts();
  for (let i = 0; i < scripts.length; i++) if (scripts[i]!.command === command) return scripts[i]!;
  throw new BackendError('bullmq', `no script ${command}`, { written: false });
}
