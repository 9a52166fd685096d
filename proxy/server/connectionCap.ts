// --max-connections: a cap that keeps file descriptors for the host and the logs under a flood (0 = no
// cap). Counted here, not with Node's server.maxConnections: in a cluster worker (--proxy-workers) Node does
// not refuse a connection past that cap but queues it in the primary until the worker has room, and Node 21
// and later read maxConnections 0 as "refuse all".
import type { Server as NetServer, Socket } from 'node:net';
import type { ErrorLog } from '../observe/errorLog.ts';

/** Connections refused past --max-connections are logged as one line per this interval, not one each. */
const DROP_REPORT_MS = 10_000;

/** `maxConnections` is read for each connection, as a SIGHUP may change it (0: no cap). */
export function capConnections(listeners: readonly Pick<NetServer, 'on'>[], maxConnections: () => number, errorLog: ErrorLog): void {
  let connections = 0;
  let dropped = 0;
  const reportDrop = (): void => {
    if (dropped++ > 0) return;
    setTimeout(() => {
      errorLog.write({
        module: 'mpm_event',
        level: 'error',
        message: `server reached --max-connections (${maxConnections()}): ${dropped} connection(s) refused in the last ${DROP_REPORT_MS / 1000} s`,
      });
      dropped = 0;
    }, DROP_REPORT_MS).unref();
  };
  for (const listener of listeners) {
    listener.on('connection', (socket: Socket) => {
      const max = maxConnections();
      if (max > 0 && connections >= max) {
        socket.destroy();
        reportDrop();
        return;
      }
      connections += 1;
      socket.once('close', () => (connections -= 1));
    });
  }
}
