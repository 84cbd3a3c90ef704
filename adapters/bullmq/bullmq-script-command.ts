/**
 * How the adapter runs its Lua scripts: its own ioredis `Command` subclass, sent with the client's
 * (or pipeline's) public `sendCommand`. Nothing is registered on, added to or replaced in the
 * caller's client: no `defineCommand`, no swapped classes.
 *
 * Loading. On Redis 7 and later the scripts of a set are one function library (`OjsScriptLibrary`,
 * `FUNCTION LOAD`), each script a function called with FCALL: the script's definitions (its
 * includes, BullMQ's spliced scripts) run once, when the library is loaded, not on every call.
 * Met with "Function not found" (never loaded on this server, FUNCTION FLUSH, a new node), the
 * library is loaded (on every master of a Cluster) and the command sent once more. Before Redis 7
 * (its version read once per client with INFO), or when the server refuses the library
 * (NOPERM: an ACL user without FUNCTION; FUNCTION renamed away), the script itself runs: EVALSHA,
 * or EVAL the first time on a connection (so a new connection, a reconnect or a failover never
 * meets NOSCRIPT in the common case); on NOSCRIPT the connection is marked unloaded and the
 * command is sent once more, as EVAL. This is what ioredis' own `Script` does for `defineCommand`.
 * Until a client's version is known its commands run as scripts.
 *
 * Arguments. `send` takes over the array it is given, whose first `SCRIPT_HEAD` slots it fills
 * (the function name or SHA, the key count): the argument list is built once by the caller, and
 * neither copied here nor flattened by ioredis' `Command` (which copies every argument list).
 *
 * Encoding: a unique add is one command of about thirty arguments, two of them Buffers (BullMQ's
 * msgpacked args and options). One Buffer puts ioredis' encoder in a mode that measures and
 * copies every argument separately; `encodeCommand` writes each run of string arguments as one
 * string, in one allocation with the Buffers, the same bytes (test/adapters/bullmq-host-contract.test.ts).
 * bench/bullmq-node-cost.ts shows what it saves per add.
 */
import { createHash } from 'node:crypto';
import { Command } from 'ioredis';
import type { IoredisTarget } from './bullmq-host.js';
import { notIoredis } from './bullmq-host.js';

export type ScriptArgument = string | number | Buffer;

/** The slots `OjsScript#send` fills at the head of its arguments: the function name or SHA, and the key count. */
export const SCRIPT_HEAD = 2;

/** How a client runs the scripts: the library's functions (Redis >= 7), or the scripts themselves. */
type ClientMode = 'functions' | 'scripts' | 'detecting';
const modes = new WeakMap<object, ClientMode>();

/** A Lua script of the adapter, run by `run` or `send` on any ioredis client, Cluster or pipeline. */
export class OjsScript {
  readonly sha: string;
  /** The function library the script is part of, and its function's name there (`OjsScriptLibrary`). */
  library: OjsScriptLibrary | undefined;
  functionName = '';
  /** The connections (sockets) that have run this script's EVAL since their last NOSCRIPT. */
  readonly #loaded = new WeakSet<object>();

  constructor(
    /** A name for messages and tests (not sent to Redis). */
    readonly command: string,
    readonly numberOfKeys: number,
    readonly lua: string,
    /**
     * Where the script's definitions end (`lua.slice(0, mainAt)`: local functions and constants,
     * nothing that reads KEYS, ARGV or Redis) and the code of each call begins. In a function
     * library the definitions run once, at load. 0: the whole script runs on every call.
     */
    readonly mainAt = 0,
    /**
     * Marks a command written a second time (ioredis re-sends a command whose reply a reconnect
     * lost, or one a Cluster redirected), before it is encoded again: `args[first]` is the first
     * of the keys and arguments given to `run`.
     */
    readonly resent?: (args: unknown[], first: number) => void,
  ) {
    this.sha = createHash('sha1').update(lua).digest('hex');
  }

  /** Runs the script with `keysAndArgs` (its `numberOfKeys` keys first) on `target`; the reply's promise. */
  run(target: IoredisTarget, keysAndArgs: readonly ScriptArgument[]): Promise<unknown> {
    const args: ScriptArgument[] = new Array<ScriptArgument>(keysAndArgs.length + SCRIPT_HEAD);
    for (let i = 0; i < keysAndArgs.length; i++) args[i + SCRIPT_HEAD] = keysAndArgs[i]!;
    return this.send(target, args);
  }

  /**
   * Runs the script with `args`: `SCRIPT_HEAD` slots this fills, then its keys, then its
   * arguments. The array is the command's from then on: the caller builds a fresh one per call.
   */
  send(target: IoredisTarget, args: ScriptArgument[], segments: readonly EncodedArguments[] = NO_SEGMENTS): Promise<unknown> {
    if (typeof target?.sendCommand !== 'function') throw notIoredis('the script target', target);
    const client = clientOf(target);
    let functions = false;
    if (this.library !== undefined) {
      const mode = modes.get(client);
      if (mode === 'functions') functions = true;
      else if (mode === undefined) detectMode(client);
    }
    args[1] = this.numberOfKeys;
    const command = new ScriptCommand(this, this.#loaded, args, functions, target, segments);
    target.sendCommand(command);
    return command.promise;
  }

  /** Whether `socket` is marked as having loaded the script (for tests). */
  loadedOn(socket: object): boolean {
    return this.#loaded.has(socket);
  }

  /** Marks `socket` as having loaded the script, so the next command on it is an EVALSHA (for tests). */
  markLoaded(socket: object): void {
    this.#loaded.add(socket);
  }
}

/**
 * The scripts of a set as one Redis function library. Its name carries a digest of its code
 * (`ojs_unique_<24 hex digits>`, each function `ojs_<digest>_<command>`), so libraries of other
 * versions of the adapter or of BullMQ coexist on one server, and a name met there always means
 * this code.
 *
 * Each script becomes a block of the library: its definitions (`OjsScript#mainAt`) run once, at
 * load, with `KEYS`, `ARGV` and each `local x = redis.<fn>` binding declared as locals the
 * function sets on each call (Redis offers no `redis.call` while a library loads); the rest is the
 * function's body. Lua in a library cannot create globals, as in a script.
 */
export class OjsScriptLibrary {
  readonly name: string;
  readonly code: string;
  /** The loads in flight, per client: concurrent "Function not found" replies share one. */
  readonly #loading = new WeakMap<object, Promise<boolean>>();

  constructor(readonly scripts: readonly OjsScript[]) {
    // A script whose definitions are another's (the same code after its opening comment) is one
    // more function of that script's block rather than a block of its own: the library's Lua heap
    // holds those definitions once.
    const sharing = new Map<OjsScript, OjsScript[]>();
    const guests = new Set<OjsScript>();
    scripts.forEach((script, at) => {
      if (guests.has(script)) return;
      for (const other of scripts.slice(at + 1)) {
        if (guests.has(other) || !sameDefinitions(script, other)) continue;
        guests.add(other);
        sharing.set(script, [...(sharing.get(script) ?? []), other]);
      }
    });
    const blocks = scripts.filter((script) => !guests.has(script)).map((script) => libraryBlock(script, sharing.get(script) ?? []));
    const digest = createHash('sha1').update(blocks.join('\n')).digest('hex').slice(0, 24);
    this.name = `ojs_unique_${digest}`;
    const header = `#!lua name=${this.name}\n-- ojs-unique's scripts as one function library (adapters/bullmq/bullmq-script-command.ts).`;
    this.code = [header, ...blocks.map((block) => block.replaceAll(FUNCTION_PREFIX, `ojs_${digest}_`))].join('\n');
    for (const script of scripts) {
      script.library = this;
      script.functionName = `ojs_${digest}_${script.command}`;
    }
  }

  /**
   * Loads the library on `client` (every master of a Cluster). True when it is there (loaded now
   * or already), false when the server refuses it (NOPERM, no FUNCTION command): run the scripts.
   */
  load(client: IoredisTarget): Promise<boolean> {
    let pending = this.#loading.get(client);
    if (pending === undefined) {
      const cluster = client as IoredisTarget & { isCluster?: boolean; nodes?(role: string): IoredisTarget[] };
      const nodes = cluster.isCluster === true && typeof cluster.nodes === 'function' ? cluster.nodes('master') : [client];
      pending = Promise.all(nodes.map((node) => this.#loadOn(node))).then(
        () => true,
        (error: Error) => {
          if (refusesFunctions(error)) return false;
          throw error;
        },
      );
      const settled = () => this.#loading.delete(client);
      pending.then(settled, settled);
      this.#loading.set(client, pending);
    }
    return pending;
  }

  #loadOn(node: IoredisTarget): Promise<unknown> {
    const command = new Command('function', ['LOAD', this.code], { replyEncoding: 'utf8' });
    node.sendCommand(command);
    LOADED_LIBRARIES.add(this.name);
    return command.promise.catch((error: Error) => {
      // Another process loaded it first: same name, same code.
      if (!/already exists/i.test(error.message)) throw error;
    });
  }
}

/** The libraries this process has sent FUNCTION LOAD for (the tests' leftovers hook deletes them). */
const LOADED_LIBRARIES = new Set<string>();
export function loadedLibraries(): string[] {
  return [...LOADED_LIBRARIES];
}

const FUNCTION_PREFIX = '\u0000ojs-function\u0000';

/** `script`'s definitions without their comment lines and blocks, for `sameDefinitions`. */
function definitionsCode(script: OjsScript): string {
  return script.lua
    .slice(0, script.mainAt)
    .replace(/^--\[\[[\s\S]*?\]\]\n/gm, '')
    .replace(/^--.*\n/gm, '');
}

/** Whether two scripts define the same functions and constants (their comments aside). */
function sameDefinitions(a: OjsScript, b: OjsScript): boolean {
  return a.mainAt > 0 && b.mainAt > 0 && definitionsCode(a) === definitionsCode(b);
}

/**
 * A script as a block of the library (its function named with FUNCTION_PREFIX until the digest is
 * known), with the functions of `guests`, scripts of the same definitions (`sameDefinitions`).
 */
function libraryBlock(script: OjsScript, guests: readonly OjsScript[] = []): string {
  const bound: string[] = ['KEYS, ARGV = keys, args'];
  const values = new Map<string, string>();
  const definitions = script.lua
    .slice(0, script.mainAt)
    .replace(/^local (\w+) = (redis\.\w+)[ \t]*$/gm, (_line, name: string, value: string) => {
      // Declared again (each include declares its `rcall`): the one local, which every function sees.
      const before = values.get(name);
      if (before === value) return `-- ${name}: bound on each call`;
      if (before !== undefined) throw new Error(`${script.command}: local ${name} is bound to ${before}, then to ${value}`);
      values.set(name, value);
      bound.push(`${name} = ${value}`);
      return `local ${name}`;
    });
  const register = (each: OjsScript) => [
    `redis.register_function('${FUNCTION_PREFIX}${each.command}', function(keys, args)`,
    ...bound,
    each.lua.slice(each.mainAt).trimEnd(),
    'end)',
  ];
  return [
    `do -- ${[script, ...guests].map((each) => each.command).join(', ')}`,
    'local KEYS, ARGV',
    definitions.trimEnd(),
    ...[script, ...guests].flatMap(register),
    'end',
  ].join('\n');
}

/** Whether a FUNCTION or FCALL error means this client cannot use functions (then: scripts). */
function refusesFunctions(error: Error): boolean {
  return /^(NOPERM|ERR unknown command|ERR unknown subcommand)/.test(error.message);
}

/** The client a command goes to: a pipeline's, or the target itself. */
function clientOf(target: IoredisTarget): IoredisTarget {
  return target.isPipeline && target.redis ? target.redis : target;
}

/** Reads the server's version once per client (INFO), meanwhile its commands run as scripts. */
function detectMode(client: IoredisTarget): void {
  modes.set(client, 'detecting');
  const info = new Command('info', ['server'], { replyEncoding: 'utf8' });
  client.sendCommand(info);
  info.promise.then(
    (reply: unknown) => {
      const major = Number(/^redis_version:(\d+)/m.exec(String(reply))?.[1] ?? 0);
      modes.set(client, major >= 7 ? 'functions' : 'scripts');
    },
    // Asked again on the next command (a closed client, a server still loading).
    () => modes.delete(client),
  );
}

/** The mode of a client (for tests): 'functions', 'scripts', 'detecting' or undefined. */
export function scriptModeOf(client: object): string | undefined {
  return modes.get(client);
}

/** Sets the mode of a client (for tests and benchmarks). */
export function setScriptMode(client: object, mode: 'functions' | 'scripts'): void {
  modes.set(client, mode);
}

const NO_ARGS: ScriptArgument[] = [];

/**
 * Arguments `from` … `to - 1` of a command, already in RESP: values a caller sends on many calls
 * (a queue's keys, a policy's arguments), encoded once (`encodedArguments`) and copied into each
 * command's bytes. The command's `args` still hold them (a Cluster routes by them).
 */
export interface EncodedArguments {
  readonly from: number;
  readonly to: number;
  readonly bytes: Buffer;
}

/** `values`, which a command will hold at `from` onwards, in RESP (lengths in bytes). */
export function encodedArguments(from: number, values: readonly (string | number)[]): EncodedArguments {
  let text = '';
  for (const value of values) {
    const string = String(value);
    text += `$${Buffer.byteLength(string)}\r\n${string}\r\n`;
  }
  return { from, to: from + values.length, bytes: Buffer.from(text) };
}

const NO_SEGMENTS: readonly EncodedArguments[] = [];

/**
 * One run of an `OjsScript`: FCALL, or EVALSHA or EVAL depending on the connection it is written
 * to. Met with "Function not found", the library is loaded and the command sent once more; met
 * with NOSCRIPT (the connection lost the script: SCRIPT FLUSH, a failover), it is sent once
 * more, as EVAL. The resend settles this command; a pipeline's resend goes to its client, as
 * ioredis' `Script` does it. Handled in the command's own `reject`, so a run costs no promise
 * beyond the command's.
 */
class ScriptCommand extends Command {
  readonly #script: OjsScript;
  readonly #loaded: WeakSet<object>;
  /** Where a resend goes; undefined for the resend itself (sent once more at most). */
  readonly #target: IoredisTarget | undefined;
  /** The socket it was last written to. */
  #socket: object | undefined;
  readonly #segments: readonly EncodedArguments[];

  constructor(
    script: OjsScript,
    loaded: WeakSet<object>,
    args: ScriptArgument[],
    functions: boolean,
    target: IoredisTarget | undefined,
    segments: readonly EncodedArguments[],
  ) {
    // No arguments to the constructor, which would copy them (Array#flat); the encoding below
    // stringifies numbers, which is all ioredis' own preparation would do to these.
    super(functions ? 'fcall' : 'evalsha', NO_ARGS, { replyEncoding: 'utf8' });
    args[0] = functions ? script.functionName : script.sha;
    this.args = args;
    this.#script = script;
    this.#loaded = loaded;
    this.#target = target;
    this.#segments = segments;
    const reject = this.reject;
    this.reject = (error: Error) => {
      if (target === undefined || !this.#retried(error, reject)) reject.call(this, error);
    };
  }

  /** Sends the command once more when `error` asks for it; false when it does not. */
  #retried(error: Error, reject: (error: Error) => void): boolean {
    const message = error.message;
    const client = clientOf(this.#target!);
    const settle = (resend: ScriptCommand) => resend.promise.then(this.resolve, (failure: Error) => reject.call(this, failure));
    if (this.name === 'fcall') {
      if (message.startsWith('ERR Function not found')) {
        this.#script.library!.load(client).then(
          (loaded) => {
            if (!loaded) modes.set(client, 'scripts');
            settle(this.#resend(client, loaded));
          },
          (failure: Error) => reject.call(this, failure),
        );
        return true;
      }
      if (refusesFunctions(error)) {
        modes.set(client, 'scripts');
        settle(this.#resend(client, false));
        return true;
      }
      return false;
    }
    if (!message.startsWith('NOSCRIPT')) return false;
    if (this.#socket !== undefined) this.#loaded.delete(this.#socket);
    settle(this.#resend(client, false));
    return true;
  }

  #resend(client: IoredisTarget, functions: boolean): ScriptCommand {
    const resend = new ScriptCommand(this.#script, this.#loaded, this.args as ScriptArgument[], functions, undefined, this.#segments);
    client.sendCommand(resend);
    return resend;
  }

  /** Whether this command was written before (toWritable runs once per write). */
  #written = false;

  override toWritable(socket: object): string | Buffer {
    // Written again, the arguments the script marks may differ from their encoded segment.
    const segments = this.#written ? NO_SEGMENTS : this.#segments;
    if (this.#written) this.#script.resent?.(this.args, SCRIPT_HEAD);
    this.#written = true;
    this.#socket = socket;
    if (this.name !== 'fcall') {
      if (!this.#loaded.has(socket)) {
        this.#loaded.add(socket);
        this.name = 'eval';
        this.args[0] = this.#script.lua;
      } else if (this.name === 'eval') {
        this.name = 'evalsha';
        this.args[0] = this.#script.sha;
      }
    }
    return encodeCommand(this.name, this.args, segments);
  }
}

/** Each argument's length in bytes, between `encodeCommand`'s two passes (reused: no allocation per command). */
let byteLengths = new Int32Array(64);

/**
 * RESP of one command whose arguments are strings, numbers or Buffers; `segments`, runs of
 * arguments already in RESP, in order and apart. Two passes over the arguments: measure, then
 * write each one straight into the one Buffer of the result (no intermediate strings).
 */
export function encodeCommand(name: string, args: readonly unknown[], segments: readonly EncodedArguments[] = NO_SEGMENTS): Buffer {
  const count = args.length;
  if (byteLengths.length < count) byteLengths = new Int32Array(count * 2);
  const head = `*${count + 1}\r\n$${Buffer.byteLength(name)}\r\n${name}\r\n`;
  let total = Buffer.byteLength(head);
  for (let i = 0, next = 0; i < count; i++) {
    const segment = next < segments.length && segments[next]!.from === i ? segments[next++]! : undefined;
    if (segment !== undefined) {
      total += segment.bytes.length;
      i = segment.to - 1;
      continue;
    }
    const arg = args[i];
    const bytes = typeof arg === 'string' ? Buffer.byteLength(arg) : Buffer.isBuffer(arg) ? arg.length : Buffer.byteLength(String(arg));
    byteLengths[i] = bytes;
    total += bytes + digitCount(bytes) + 5;
  }
  const out = Buffer.allocUnsafe(total);
  let offset = out.write(head, 0, 'utf8');
  for (let i = 0, next = 0; i < count; i++) {
    const segment = next < segments.length && segments[next]!.from === i ? segments[next++]! : undefined;
    if (segment !== undefined) {
      out.set(segment.bytes, offset);
      offset += segment.bytes.length;
      i = segment.to - 1;
      continue;
    }
    const arg = args[i];
    const bytes = byteLengths[i]!;
    out[offset++] = 0x24; // $
    offset = writeDigits(out, offset, bytes);
    out[offset++] = 0x0d;
    out[offset++] = 0x0a;
    if (Buffer.isBuffer(arg)) out.set(arg, offset);
    else out.write(typeof arg === 'string' ? arg : String(arg), offset, bytes, 'utf8');
    offset += bytes;
    out[offset++] = 0x0d;
    out[offset++] = 0x0a;
  }
  return out;
}

function digitCount(n: number): number {
  let digits = 1;
  while (n >= 10) {
    n = Math.floor(n / 10);
    digits++;
  }
  return digits;
}

/** Writes `n` (a non-negative integer) in decimal at `offset`; the offset after it. */
function writeDigits(out: Buffer, offset: number, n: number): number {
  const end = offset + digitCount(n);
  for (let at = end - 1; at >= offset; at--) {
    out[at] = 0x30 + (n % 10);
    n = Math.floor(n / 10);
  }
  return end;
}
