// SIGTERM: no new connection, what was accepted finished (up to --shutdown-timeout), then the workers and spares stopped.
import { rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { PoolState } from './poolState.ts';

/** Workers cut their connections at --shutdown-timeout (worker.ts); one that hangs past it by this much is killed. */
export const HARD_STOP_MS = 5_000;

export async function stopPool(reason: string, pool: PoolState, server: Server): Promise<void> {
  const { config, log, feed, dispatcher, records, workers, spares, socketDir } = pool;
  for (const timer of pool.timers) clearInterval(timer);
  log.notice(`Host pool ${process.pid} shutting down (${reason})`);
  // No new connections from now on: a proxy that connects finds no socket (a connect failure, which
  // it retries on another host) instead of a backlog that nobody accepts and that is reset when this
  // process exits (a reset before headers, which the proxy must answer 500).
  if (config.socket) await rm(config.socket, { force: true });
  // The proxies stop sending requests straight to the workers: what they send next finds no socket too.
  feed.end();
  // Answer what still arrives with `Connection: close`, and leave idle connections for the proxy to close:
  // closing one ourselves races with the proxy reusing it, and the request it sends then would fail. The
  // proxy drops idle sockets within 10 s.
  server.maxRequestsPerSocket = 1;
  server.closeIdleConnections = () => {};
  const closed = new Promise((resolve) => server.close(resolve));
  // What was accepted is finished, queued requests included, while the workers serve on (and are replaced
  // if one dies); what still runs at --shutdown-timeout is cut, as each worker cut it before.
  await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, config.shutdownTimeout * 1000).unref())]);
  server.closeAllConnections();
  for (const worker of workers.handles) {
    const record = records.of(worker);
    if (record) dispatcher.gone(record.slot);
  }
  // A signal, not a message: a worker still starting has no message handler yet, and would miss a
  // 'retire' (a stop during a recycle then waited for the hard stop). SIGTERM retires it the same way.
  const sparesGone = spares.stopAll();
  await workers.stop('SIGTERM', config.shutdownTimeout * 1000 + HARD_STOP_MS);
  await sparesGone;
  await closed;
  if (config.socket) await rm(config.socket, { force: true });
  await rm(socketDir, { recursive: true, force: true });
  await log.drain();
}
