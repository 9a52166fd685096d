// Loopback ports for the tests and the bench: one free now, and whether something accepts connections on one (or on a unix socket).
import { once } from 'node:events';
import { connect, createServer } from 'node:net';

/** A port free on loopback now: bound on port 0, then let go. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/** Whether anything accepts connections on the loopback port, or on the unix socket at a path. */
export async function accepts(where: number | string): Promise<boolean> {
  const socket = typeof where === 'number' ? connect({ host: '127.0.0.1', port: where }) : connect(where);
  try {
    await once(socket, 'connect');
    return true;
  } catch {
    return false;
  } finally {
    socket.destroy();
  }
}
