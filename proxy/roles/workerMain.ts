// The entry of a proxy worker (--proxy-workers > 1, forked by primary.ts with node:cluster): it asks the
// primary for its settings, then serves the shared port; its reloads come from the primary.
import { IpcChannel, parentEndpoint } from '../../common/ipc.ts';
import type { Reloads } from '../../common/reload.ts';
import type { ProxyConfig } from '../../common/settings.ts';
import { serveProxy } from './serveProxy.ts';
import type { ProxyPrimarySays, ProxyWorkerSays } from '../observe/workerMessages.ts';

const CONFIG_TIMEOUT_MS = 10_000;
/** How long a failing worker waits for the primary to take its reason before it exits. */
const FAILED_TIMEOUT_MS = 1_000;

// SIGHUP is for the primary, which writes the logs and tells the workers; sent to the whole process
// group it must not end a worker (its default action).
process.on('SIGHUP', () => {});

const channel = new IpcChannel<ProxyWorkerSays, ProxyPrimarySays>(parentEndpoint());
try {
  const config = await channel.request('config', null, CONFIG_TIMEOUT_MS);
  const reloads: Reloads<ProxyConfig> = (apply) =>
    channel.on('reload', ({ config: fresh, note, kept }) => apply(fresh as ProxyConfig, note, kept));
  await serveProxy(config, reloads, channel);
} catch (err) {
  // The primary says it for the proxy (`extqs proxy: cannot listen: …`), as a proxy without workers would.
  const { message, code } = err as NodeJS.ErrnoException;
  const told = await channel.request('failed', { message, code }, FAILED_TIMEOUT_MS).then(
    () => true,
    () => false,
  );
  if (!told) process.stderr.write(`extqs proxy worker ${process.pid}: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
}
