// Loopback ports for the tests and the bench: one free now, and whether something accepts connections on one.
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

/** Whether anything accepts connections on the loopback port. */
export async function accepts(port: number): Promise<boolean> {
  const socket = connect({ host: '127.0.0.1', port });
  try {
    await once(socket, 'connect');
    return true;
  } catch {
    return false;
  } finally {
    socket.destroy();
  }
}
