// The host process (application role): a pool of workers (node:cluster) that load controllers from
// www/controllers and answer /External/<Name> on a 0600 unix socket (or a loopback port) that only
// the proxy uses. The primary manages the workers; each worker serves.
import cluster from 'node:cluster';
import { ConfigError, readConfig } from '../common/config.ts';
import { runPool } from './pool.ts';
import { runWorker } from './worker.ts';

const role = cluster.isPrimary ? 'host' : `host worker ${process.pid}`;
try {
  const argv = process.argv.slice(2);
  const config = readConfig(argv);
  await (cluster.isPrimary ? runPool(config, argv) : runWorker(config));
} catch (err) {
  process.stderr.write(`extqs ${role}: ${err instanceof ConfigError ? err.message : ((err as Error).stack ?? String(err))}\n`);
  process.exit(err instanceof ConfigError ? 2 : 1);
}
