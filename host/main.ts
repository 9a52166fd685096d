// The host process (application role): loads controllers from www/controllers and answers
// /External/<Name> on a loopback port or a 0600 unix socket that only the proxy uses.
import { chmod, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError, readConfig, type Config } from '../common/config.ts';
import { onShutdownSignal } from '../common/shutdown.ts';
import { readyLine } from '../common/ready.ts';
import { createHostApp } from './app.ts';
import { openHostLog } from './hostLog.ts';
import { ControllerRegistry } from './registry.ts';
import { watchControllers } from './watcher.ts';

async function listen(app: ReturnType<typeof createHostApp>, config: Config): Promise<string> {
  if (config.socket) {
    // A socket file left by a host that was killed would make listen() fail with EADDRINUSE.
    await rm(config.socket, { force: true });
    await app.listen({ path: config.socket });
    await chmod(config.socket, 0o600);
    return `unix:${config.socket}`;
  }
  // The host is for the proxy only: never bind anything but loopback.
  await app.listen({ host: '127.0.0.1', port: config.hostPort });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.hostPort;
  return `http://127.0.0.1:${port}`;
}

async function main(): Promise<void> {
  const config = readConfig(process.argv.slice(2));
  const log = openHostLog(config.logs);
  const controllersDir = join(config.www, 'controllers');

  const registry = new ControllerRegistry(controllersDir, {
    loaded: (c, reason) => log.info(`Loaded controller ${c.name} from ${c.file} (version ${c.version}, on ${reason})`),
    removed: (name, file) => log.info(`Unloaded controller ${name}: ${file} was removed`),
    reloadFailed: (name, err) =>
      log.error(`Reload of controller ${name} failed, the previous version keeps serving: ${(err as Error).message ?? String(err)}`),
    disposeFailed: (name, err) => log.warn(`dispose() of controller ${name} threw: ${(err as Error).stack ?? String(err)}`),
  });
  const watcher = await watchControllers(registry, (err) => log.error(`Watcher error on ${controllersDir}: ${String(err)}`));
  const app = createHostApp(registry, log);
  const url = await listen(app, config);
  log.info(`Host ${process.pid} serving ${controllersDir} on ${url}`);
  process.stdout.write(`${readyLine(url)}\n`);

  onShutdownSignal(async (reason) => {
    log.info(`Host ${process.pid} shutting down (${reason})`);
    await app.close(); // waits for requests in flight
    await watcher.close();
    await registry.disposeAll();
    if (config.socket) await rm(config.socket, { force: true });
    await log.drain();
  });
}

main().catch((err) => {
  process.stderr.write(`extqs host: ${err instanceof ConfigError ? err.message : (err as Error).stack ?? String(err)}\n`);
  process.exit(err instanceof ConfigError ? 2 : 1);
});
