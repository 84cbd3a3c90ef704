/**
 * How the adapter runs its Lua scripts: its own ioredis `Command` subclass, sent with the client's
 * (or pipeline's) public `sendCommand`. Nothing is registered on, added to or replaced in the
 * caller's client: no `defineCommand`, no swapped classes.
 *
 * Loading: EVALSHA, or EVAL the first time on a connection (so a new connection, a reconnect or a
 * failover never meets NOSCRIPT in the common case); on NOSCRIPT the connection is marked
 * unloaded and the command is sent once more, as EVAL. This is what ioredis' own `Script` does
 * for `defineCommand`.
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

/** A Lua script of the adapter, run by `run` on any ioredis client, Cluster or pipeline. */
export class OjsScript {
  readonly sha: string;
  /** The connections (sockets) that have run this script's EVAL since their last NOSCRIPT. */
  readonly #loaded = new WeakSet<object>();

  constructor(
    /** A name for messages and tests (not sent to Redis). */
    readonly command: string,
    readonly numberOfKeys: number,
    readonly lua: string,
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
    if (typeof target?.sendCommand !== 'function') throw notIoredis('the script target', target);
    const command = new ScriptCommand(this, this.#loaded, [this.sha, this.numberOfKeys, ...keysAndArgs], target);
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
 * One run of an `OjsScript`: EVALSHA or EVAL depending on the connection it is written to. Met
 * with NOSCRIPT (the connection lost the script: SCRIPT FLUSH, a failover), it is sent once more,
 * as EVAL, and settles with that second command; a pipeline's resend goes to its client, as
 * ioredis' `Script` does it. Handled in the command's own `reject`, so a run costs no promise
 * beyond the command's.
 */
class ScriptCommand extends Command {
  readonly #script: OjsScript;
  readonly #loaded: WeakSet<object>;
  /** Where a NOSCRIPT resend goes; undefined for the resend itself (sent once more at most). */
  readonly #target: IoredisTarget | undefined;

  constructor(script: OjsScript, loaded: WeakSet<object>, args: ScriptArgument[], target: IoredisTarget | undefined) {
    super('evalsha', args, { replyEncoding: 'utf8' });
    this.#script = script;
    this.#loaded = loaded;
    this.#target = target;
  }

  /** Whether this command was written before (toWritable runs once per write). */
  #written = false;

  override toWritable(socket: object): string | Buffer {
    if (this.#written) this.#script.resent?.(this.args, 2);
    this.#written = true;
    const reject = this.reject;
    this.reject = (error: Error) => {
      if (error.message.startsWith('NOSCRIPT')) {
        this.#loaded.delete(socket);
        const target = this.#target;
        if (target !== undefined) {
          const resend = new ScriptCommand(this.#script, this.#loaded, this.args as ScriptArgument[], undefined);
          resend.args[0] = this.#script.sha;
          resend.name = 'evalsha';
          const client = target.isPipeline && target.redis ? target.redis : target;
          client.sendCommand(resend);
          resend.promise.then(this.resolve, (failure: Error) => reject.call(this, failure));
          return;
        }
      }
      reject.call(this, error);
    };
    if (!this.#loaded.has(socket)) {
      this.#loaded.add(socket);
      this.name = 'eval';
      this.args[0] = this.#script.lua;
    } else if (this.name === 'eval') {
      this.name = 'evalsha';
      this.args[0] = this.#script.sha;
    }
    return encodeCommand(this.name, this.args);
  }
}

/** RESP of one command whose arguments are strings or Buffers (after ioredis' own stringifying). */
export function encodeCommand(name: string, args: readonly unknown[]): string | Buffer {
  // Runs of string arguments become one string each; Buffers stay as they are. One allocation
  // for the result, one utf8 write per run.
  const head = `*${args.length + 1}\r\n$${Buffer.byteLength(name)}\r\n${name}\r\n`;
  let parts: (string | Buffer)[] | undefined;
  let lengths: number[] | undefined;
  let prefix = head;
  let start = 0;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (!Buffer.isBuffer(arg)) continue;
    parts ??= [];
    lengths ??= [];
    const run = encodeRun(prefix, args, start, i, `$${arg.length}\r\n`);
    parts.push(run.text, arg);
    lengths.push(run.bytes, arg.length);
    prefix = '\r\n';
    start = i + 1;
  }
  const last = encodeRun(prefix, args, start, args.length, '');
  if (!parts || !lengths) return last.text;
  parts.push(last.text);
  lengths.push(last.bytes);
  let length = 0;
  for (const n of lengths) length += n;
  const out = Buffer.allocUnsafe(length);
  let offset = 0;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (typeof part === 'string') out.write(part, offset, lengths[i]!, 'utf8');
    else part.copy(out, offset);
    offset += lengths[i]!;
  }
  return out;
}

/**
 * `prefix`, the RESP of the string arguments `args[from..to)`, then `suffix` (all but the
 * arguments ASCII), and its length in bytes. Written first with each argument's length in
 * UTF-16 units, which is its length in bytes exactly when the whole run is ASCII (one
 * measurement of the run instead of one per argument); rewritten with measured lengths otherwise.
 */
function encodeRun(prefix: string, args: readonly unknown[], from: number, to: number, suffix: string): { text: string; bytes: number } {
  let text = prefix;
  for (let i = from; i < to; i++) {
    const value = String(args[i]);
    text += `$${value.length}\r\n${value}\r\n`;
  }
  text += suffix;
  const bytes = Buffer.byteLength(text);
  if (bytes === text.length) return { text, bytes };
  text = prefix;
  for (let i = from; i < to; i++) {
    const value = String(args[i]);
    text += `$${Buffer.byteLength(value)}\r\n${value}\r\n`;
  }
  text += suffix;
  return { text, bytes: Buffer.byteLength(text) };
}
