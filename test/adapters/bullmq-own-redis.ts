/**
 * A redis-server of the test's own, on a port of its own (20000–29999, retried when taken), that
 * the test can stop and start again: outages without touching the shared Redis. No persistence;
 * stopped by the test (SIGTERM to the process it started).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';

export interface OwnRedis {
  readonly port: number;
  readonly url: string;
  /** Stops the server; resolves once it has exited. */
  stop(): Promise<void>;
  /** Starts it again on the same port (empty: no persistence). */
  start(): Promise<void>;
  /** SIGSTOP: connections stay open, nothing answers (a hung server, not a refused connection). */
  pause(): void;
  /** SIGCONT after `pause`. */
  resume(): void;
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function launch(port: number, extra: readonly string[] = []): Promise<ChildProcess | undefined> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...extra], {
    stdio: 'ignore',
  });
  const exited = new Promise<undefined>((resolve) => child.once('exit', () => resolve(undefined)));
  for (let i = 0; i < 100; i++) {
    const up = await Promise.race([listening(port).then((ok) => (ok ? 'up' : 'no')), exited.then(() => 'exited')]);
    if (up === 'exited') return undefined; // EADDRINUSE, most likely
    if (up === 'up') return child;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  child.kill('SIGKILL');
  throw new Error(`redis-server on port ${port} did not come up`);
}

/** `extra`: more redis-server arguments, e.g. `['--maxmemory-policy', 'allkeys-lru']`. */
export async function startOwnRedis(extra: readonly string[] = []): Promise<OwnRedis> {
  let child: ChildProcess | undefined;
  let port = 0;
  for (let attempt = 0; attempt < 20 && !child; attempt++) {
    port = 20000 + Math.floor(Math.random() * 10000);
    if (await listening(port)) continue;
    child = await launch(port, extra);
  }
  if (!child) throw new Error("could not start a redis-server of the test's own");
  const stop = async (): Promise<void> => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill('SIGCONT');
    running.kill('SIGTERM');
    await exited;
  };
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    stop,
    pause() {
      child?.kill('SIGSTOP');
    },
    resume() {
      child?.kill('SIGCONT');
    },
    async start() {
      if (child) return;
      child = await launch(port, extra);
      if (!child) throw new Error(`port ${port} was taken while the test's redis-server was stopped`);
    },
  };
}
