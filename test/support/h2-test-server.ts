/**
 * A bare HTTP/2 server on Vela's own connection class (src/common/http2/connection.ts), for tests of
 * the HTTP/2 layer itself: each request goes to `onStream`; `close()` destroys what is left.
 */
import net from 'node:net';
import { once } from 'node:events';
import { H2Connection, type H2ConnectionSettings, type H2Stream } from '../../src/common/http2/connection.js';

export interface H2TestServer {
  port: number;
  /** Connections open now (each leaves the set when its socket closes). */
  connections: Set<H2Connection>;
  close(): Promise<void>;
}

export async function startH2TestServer(
  settings: Omit<H2ConnectionSettings, 'role'>,
  onStream: (stream: H2Stream, headers: Record<string, string>) => void,
): Promise<H2TestServer> {
  const connections = new Set<H2Connection>();
  const server = net.createServer((socket) => {
    const c = new H2Connection(
      socket,
      { role: 'server', ...settings },
      { onStream, onClose: () => connections.delete(c), onProtocolError: () => {} },
    );
    connections.add(c);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as net.AddressInfo).port,
    connections,
    close: async () => {
      for (const c of connections) c.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
