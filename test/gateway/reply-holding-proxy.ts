/**
 * A TCP proxy in front of a Redis (or any server) that can lose replies on cue: once a client
 * sends bytes containing a marker, the server's replies on that connection are held back (the
 * commands still run), until `release`. What a command timeout after the command was sent looks
 * like to the client, placed exactly: after the command holding the marker reached the server.
 */
import net from 'node:net';

export interface ReplyHoldingProxy {
  readonly url: string;
  /** From the next command containing `marker` on, hold the server's replies on that connection. */
  holdRepliesAfter(marker: string): void;
  /** Sends every held reply on, and holds nothing more. */
  release(): void;
  close(): Promise<void>;
}

interface Link {
  client: net.Socket;
  upstream: net.Socket;
  holding: boolean;
  held: Buffer[];
}

export async function startReplyHoldingProxy(targetPort: number): Promise<ReplyHoldingProxy> {
  let marker: Buffer | null = null;
  const links = new Set<Link>();
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, '127.0.0.1');
    const link: Link = { client, upstream, holding: false, held: [] };
    links.add(link);
    client.on('data', (chunk) => {
      if (marker && chunk.includes(marker)) link.holding = true;
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (link.holding) link.held.push(chunk);
      else client.write(chunk);
    });
    const end = () => {
      links.delete(link);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `redis://127.0.0.1:${port}`,
    holdRepliesAfter(text) {
      marker = Buffer.from(text);
    },
    release() {
      marker = null;
      for (const link of links) {
        link.holding = false;
        for (const chunk of link.held.splice(0)) link.client.write(chunk);
      }
    },
    async close() {
      for (const link of links) {
        link.client.destroy();
        link.upstream.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
