/**
 * A loopback TCP proxy the fault tests control: clients connect to `proxy.port`, bytes go through
 * to the real server unchanged, and a test can arm a fault that lets the server execute a request
 * and reply, then swallows that reply and cuts the connection. The client sees a connection lost
 * after its command was sent: exactly the case where a write may or may not have happened.
 *
 * Deterministic: a fault fires on the first server reply that matches (or, `beforeRequest`, the first
 * client chunk), once per `armDrop` call.
 */
import net from 'node:net';

export interface DropRule {
  /** Only replies that follow a client chunk matching this count (default: any chunk). */
  request?: (chunk: Buffer) => boolean;
  /** The reply chunk to swallow (default: the first one after a matching request). */
  reply?: (chunk: Buffer) => boolean;
  /**
   * Cut the connection instead of forwarding the first client chunk matching `request`: the
   * server never runs it (a request lost on its way, where the default loses the reply).
   */
  beforeRequest?: boolean;
}

export interface TcpProxy {
  readonly port: number;
  readonly url: (scheme: 'redis' | 'postgres', path?: string) => string;
  /** Drops the next reply that matches; resolves once it has been dropped. */
  armDrop(rule?: DropRule): Promise<void>;
  /**
   * Holds the connections accepted from now on: nothing they send reaches the server until the
   * returned function is called. Lets a test run other clients' commands between a lost reply
   * and the re-send that follows the reconnect, in that order whatever the timing.
   */
  holdNewConnections(): () => void;
  /** Cuts every open connection now (both sides). */
  cutAll(): void;
  /** Connections accepted so far. */
  readonly accepted: number;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const pairs = new Set<{ client: net.Socket; server: net.Socket }>();
  const rules: { rule: DropRule; armedBy: WeakSet<net.Socket>; fired: () => void }[] = [];
  let accepted = 0;
  let held: net.Socket[] | null = null;

  const pipe = (client: net.Socket): void => {
    const upstream = net.connect(target.port, target.host);
    const pair = { client, server: upstream };
    pairs.add(pair);
    const cut = (): void => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (chunk: Buffer) => {
      const lost = rules.findIndex((entry) => entry.rule.beforeRequest && (!entry.rule.request || entry.rule.request(chunk)));
      if (lost >= 0) {
        const [entry] = rules.splice(lost, 1);
        cut();
        entry!.fired();
        return;
      }
      for (const entry of rules) if (!entry.rule.request || entry.rule.request(chunk)) entry.armedBy.add(client);
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      const index = rules.findIndex((entry) => entry.armedBy.has(client) && (!entry.rule.reply || entry.rule.reply(chunk)));
      if (index >= 0) {
        const [entry] = rules.splice(index, 1);
        cut();
        entry!.fired();
        return;
      }
      client.write(chunk);
    });
    client.on('error', cut);
    upstream.on('error', cut);
    client.on('close', cut);
    upstream.on('close', cut);
    client.resume();
  };
  const server = net.createServer((client) => {
    accepted += 1;
    if (held === null) pipe(client);
    else {
      // Paused, its bytes wait in the socket until the release pipes it.
      client.pause();
      held.push(client);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;

  const cutAll = (): void => {
    for (const client of held?.splice(0) ?? []) client.destroy();
    for (const pair of [...pairs]) {
      pairs.delete(pair);
      pair.client.destroy();
      pair.server.destroy();
    }
  };
  return {
    port,
    url: (scheme, path = '') => `${scheme}://127.0.0.1:${port}${path}`,
    get accepted() {
      return accepted;
    },
    armDrop(rule = {}) {
      return new Promise<void>((resolve) => rules.push({ rule, armedBy: new WeakSet(), fired: resolve }));
    },
    holdNewConnections() {
      const waiting: net.Socket[] = (held ??= []);
      return () => {
        if (held !== waiting) return;
        held = null;
        for (const client of waiting.splice(0)) if (!client.destroyed) pipe(client);
      };
    },
    cutAll,
    async close() {
      cutAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Whether a chunk contains `text`, ignoring ASCII case (ioredis sends command names in lower case),
 * for matching a Redis command name or a PostgreSQL command tag such as `COMMIT`.
 */
export function contains(text: string): (chunk: Buffer) => boolean {
  const needle = text.toLowerCase();
  return (chunk) => chunk.toString('latin1').toLowerCase().includes(needle);
}
