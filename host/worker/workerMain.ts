// The entry of a host worker process (forked by the pool with node:cluster): it asks the pool for its
// settings, then serves.
import { isConfigError } from '../../common/configError.ts';
import { IpcChannel, parentEndpoint } from '../../common/ipc.ts';
import type { PoolSays, WorkerSays } from '../wire/poolMessages.ts';
import { runWorker } from './worker.ts';

const CONFIG_TIMEOUT_MS = 10_000;

// SIGHUP is for the primary, which writes host.log; sent to the whole process group it must not end a
// worker (its default action), not even while the worker is still asking for its settings.
process.on('SIGHUP', () => {});

try {
  const channel = new IpcChannel<WorkerSays, PoolSays>(parentEndpoint());
  const { config, socket, quarantined } = await channel.request('config', null, CONFIG_TIMEOUT_MS);
  await runWorker(config, socket, channel, quarantined);
} catch (err) {
  process.stderr.write(`extqs host worker ${process.pid}: ${isConfigError(err) ? err.message : ((err as Error).stack ?? String(err))}\n`);
  process.exit(1);
}
