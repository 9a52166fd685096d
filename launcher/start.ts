// `extqs start` (what `npm start` runs): starts the host on a private unix socket, then the proxy in
// front of it, hands each its settings, and prints the proxy's ready line. On SIGINT/SIGTERM it stops
// the proxy first (requests in flight finish against the host), then the host. On SIGHUP it reads the
// configuration again and sends both children what the reload resolver applies (common/reloadResolver.ts).
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { sliceFor } from '../common/config.ts';
import type { Config } from '../common/settings.ts';
import { writePidFile } from '../common/pidFile.ts';
import { readyLine } from '../common/ready.ts';
import { rereadConfig } from '../common/reload.ts';
import { LOCAL_UPSTREAM_LABEL } from '../common/settingParsers.ts';
import { notifyReady } from '../common/serviceManager.ts';
import type { HostConfig, ProxyConfig } from '../common/settings.ts';
import { STOP_MARGIN_S } from '../common/shutdown.ts';
import { makeTempDir } from '../common/tempDirs.ts';
import { colourWanted } from '../common/terminal.ts';
import { watchTypes, type TypeWatch } from './devTypes.ts';
import { Supervisor } from './supervisor.ts';

/** The port of a ready line's URL; the URL leaves out 80 and 443. */
function portOf(url: string): number {
  const { port, protocol } = new URL(url);
  return Number(port) || (protocol === 'https:' ? 443 : 80);
}

/** `extqs dev`'s defaults, before the developer's own flags (the last of a flag wins): one of each process, every log line. */
export const DEV_DEFAULTS: readonly string[] = ['--workers', '1', '--proxy-workers', '1', '--log-level', 'debug'];

/** `extqs start`, or with `dev` `extqs dev`: `argv` is read again on SIGHUP as the command's own. */
export async function start(argv: readonly string[], initial: Config, dev = false): Promise<void> {
  const command = dev ? 'dev' : 'start';
  let config = initial;
  // The host listens on a socket in a directory only this user can enter (0700); the socket itself is 0600. Named for
  // this process: if it is killed outright, the next host to start removes what it left.
  const runDir = await makeTempDir('run');
  const socket = join(runDir, 'host.sock');
  const removeRunDir = () => rmSync(runDir, { recursive: true, force: true });
  const say = (message: string) => process.stderr.write(`extqs: ${message}\n`);
  // With --port 0 the first proxy picks a free port; a restarted one must come back on that same port,
  // or every client would lose the service.
  let port = config.port;
  let tlsPort = config.tlsPort;
  // `extqs dev` type-checks the controllers on every save; the host's error page reads what it found here.
  const typeErrors = dev ? join(runDir, 'type-errors.json') : undefined;
  let types: TypeWatch | undefined;
  const hostConfig = (): HostConfig => ({ ...sliceFor('host', config), socket, dev, typeErrors });
  const proxyConfig = (): ProxyConfig => ({
    ...sliceFor('proxy', config),
    port,
    tlsPort,
    upstreams: [{ kind: 'unix', path: socket, label: LOCAL_UPSTREAM_LABEL }],
    dev,
  });

  const host = new Supervisor({
    role: 'host',
    config: hostConfig,
    onReady: () => {},
    onEvent: say,
    stopTimeoutMs: (config.shutdownTimeout + STOP_MARGIN_S.host) * 1000,
  });
  let removePidFile: (() => void) | undefined;
  let notified = false;
  const proxy = new Supervisor({
    role: 'proxy',
    config: proxyConfig,
    onReady: (urls) => {
      port = portOf(urls[0]);
      if (urls[1]) tlsPort = portOf(urls[1]);
      // Before the ready line, so whoever waits for that line finds the file; once, not on a proxy restart.
      if (config.pidFile !== undefined && removePidFile === undefined) {
        try {
          removePidFile = writePidFile(config.pidFile);
        } catch (err) {
          say(`cannot write --pid-file ${config.pidFile}: ${(err as Error).message}`);
          void stop('no pid file').then(() => process.exit(1));
          return;
        }
      }
      process.stdout.write(`${readyLine(...urls)}\n`);
      // The service answers: systemd may report it started (once; a restarted proxy is not a new start).
      if (!notified) notifyReady(say);
      notified = true;
    },
    onEvent: say,
    stopTimeoutMs: (config.shutdownTimeout + STOP_MARGIN_S.proxy) * 1000,
  });

  let stopping: Promise<void> | undefined;
  const stop = (reason: string) => {
    stopping ??= (async () => {
      say(`${reason}: stopping the proxy, then the host`);
      await proxy.stop();
      await host.stop();
      await types?.stop();
      removeRunDir();
      removePidFile?.();
    })();
    return stopping;
  };
  process.on('SIGINT', () => void stop('SIGINT').then(() => process.exit(0)));
  process.on('SIGTERM', () => void stop('SIGTERM').then(() => process.exit(0)));
  // The children run in their own process groups: a SIGHUP reaches them only through here. The live
  // settings read again also go to children started later (restarts); other settings need a restart.
  process.on('SIGHUP', () => {
    const { config: fresh, note, kept } = rereadConfig(command, argv, config);
    config = fresh;
    say(`SIGHUP: the children reopen their logs; ${note}`);
    host.reload({ config: hostConfig(), note, kept });
    proxy.reload({ config: proxyConfig(), note, kept });
  });

  try {
    await host.start();
    await proxy.start();
    // After the ready line: the first check takes a second or two of CPU that start-up does not wait for.
    if (typeErrors !== undefined) {
      const colour = colourWanted(process.env, process.stderr.isTTY === true);
      types = watchTypes({ www: config.www, reportFile: typeErrors, colour }, say);
    }
  } catch (err) {
    await stop('start-up failed');
    throw err;
  }
}
