// `extqs start` (what `npm start` runs): validates the configuration, starts the host on a private unix
// socket, then the proxy in front of it, and prints the proxy's ready line. On SIGINT/SIGTERM it stops
// the proxy first (requests in flight finish against the host), then the host. On SIGHUP it reads the
// configuration again and has both children reopen their logs with the new log settings (common/reload.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, logSettingsOf, readConfig, type ClientLimits, type Config } from '../common/config.ts';
import { readyLine } from '../common/ready.ts';
import { rereadConfig, type ReloadMessage } from '../common/reload.ts';
import { STOP_MARGIN_S } from '../common/shutdown.ts';
import { Supervisor } from './supervisor.ts';

const USAGE = `usage: extqs start [options]
  --port               PORT                public port of the proxy (default 8080, 0 = any free port)
  --listen             LISTEN              address the proxy binds (default 0.0.0.0)
  --www                WWW_ROOT            directory holding public/ and controllers/ (default ./www)
  --logs               LOG_DIR             directory for access.log, error.log, host.log (default ./logs)
  --workers            WORKERS             host worker processes (default: available CPUs)
  --max-requests       MAX_REQUESTS        recycle a host worker after N requests (default 0 = never)
  --max-execution-time MAX_EXECUTION_TIME  seconds a controller may run, then 504 (default 30, 0 = no limit)
  --upstream-timeout   UPSTREAM_TIMEOUT    seconds the proxy waits for the host's headers (default: max-execution-time)
  --forwarder          FORWARDER           the proxy's forwarding engine: undici (default) or http-proxy
  --shutdown-timeout   SHUTDOWN_TIMEOUT    seconds a stop waits for requests in flight (default: max-execution-time + 5)
  --status-allow       STATUS_ALLOW        addresses/subnets allowed /server-status (default 127.0.0.0/8,::1)
  --log-level          LOG_LEVEL           Apache level for error.log and host.log: emerg … debug, trace1-8 (default info)
  --log-format         LOG_FORMAT          combined (Apache's text layouts, default) or json (one object a line)
  --log-max-size       LOG_MAX_SIZE        rotate a log past this size, e.g. 100m (default 0 = never)
  --log-max-files      LOG_MAX_FILES       rotated files kept per log (default 5)
  --config             EXTQS_CONFIG        file of NAME=value lines (the names here), read again on SIGHUP
  --header-timeout     HEADER_TIMEOUT      seconds a client has to send the request head, then 408 (default 20)
  --request-timeout    REQUEST_TIMEOUT     seconds a client has to send the whole request, then 408 (default 60)
  --keep-alive-timeout KEEP_ALIVE_TIMEOUT  seconds an idle client connection is kept (default 5, at most 60; 0 = no keep-alive)
  --max-header-size    MAX_HEADER_SIZE     bytes of request line and headers, then 431 (default 16384)
  --max-header-fields  MAX_HEADER_FIELDS   header fields in a request, then 400 (default 100)
  --max-connections    MAX_CONNECTIONS     client connections open at once, 0 = no cap (default 0)
SIGHUP reopens every log file and applies the log settings read again; SIGTERM/SIGINT stop.
`;

/** The proxy's flags for its client limits, from the validated values. */
function limitFlags(limits: ClientLimits): string[] {
  return [
    ...['--header-timeout', String(limits.headerTimeout), '--request-timeout', String(limits.requestTimeout)],
    ...['--keep-alive-timeout', String(limits.keepAliveTimeout), '--max-header-size', String(limits.maxHeaderSize)],
    ...['--max-header-fields', String(limits.maxHeaderFields), '--max-connections', String(limits.maxConnections)],
  ];
}

function fail(message: string, code: number): never {
  process.stderr.write(`extqs: ${message}\n`);
  process.exit(code);
}

async function start(argv: string[]): Promise<void> {
  let config: Config = readConfig(argv);
  const logFlags = () => [
    ...['--log-level', config.logLevel, '--log-format', config.logFormat],
    ...['--log-max-size', String(config.logMaxSize), '--log-max-files', String(config.logMaxFiles)],
  ];
  // The host listens on a socket in a directory only this user can enter (0700); the socket itself is 0600.
  const runDir = mkdtempSync(join(tmpdir(), 'extqs-'));
  const socket = join(runDir, 'host.sock');
  const removeRunDir = () => rmSync(runDir, { recursive: true, force: true });
  const say = (message: string) => process.stderr.write(`extqs: ${message}\n`);

  const host = new Supervisor({
    name: 'host',
    script: 'host/main.ts',
    args: () => [
      ...['--www', config.www, '--logs', config.logs, '--socket', socket],
      ...['--workers', String(config.workers), '--max-requests', String(config.maxRequests), '--max-execution-time', String(config.maxExecutionTime)],
      ...['--shutdown-timeout', String(config.shutdownTimeout)],
      ...logFlags(),
    ],
    onReady: () => {},
    onEvent: say,
    stopTimeoutMs: (config.shutdownTimeout + STOP_MARGIN_S.host) * 1000,
  });
  // With --port 0 the first proxy picks a free port; a restarted one must come back on that same port,
  // or every client would lose the service.
  let port = config.port;
  const proxy = new Supervisor({
    name: 'proxy',
    script: 'proxy/main.ts',
    args: () => [
      ...['--port', String(port), '--listen', config.listen, '--www', config.www, '--logs', config.logs],
      ...['--upstream', `unix:${socket}`, '--upstream-timeout', String(config.upstreamTimeout), '--forwarder', config.forwarder],
      ...['--shutdown-timeout', String(config.shutdownTimeout)],
      ...['--status-allow', config.statusAllow.map(({ address, prefix }) => `${address}/${prefix}`).join(',')],
      ...logFlags(),
      ...limitFlags(config.limits),
    ],
    onReady: (url) => {
      port = Number(new URL(url).port);
      process.stdout.write(`${readyLine(url)}\n`);
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
      removeRunDir();
    })();
    return stopping;
  };
  process.on('SIGINT', () => void stop('SIGINT').then(() => process.exit(0)));
  process.on('SIGTERM', () => void stop('SIGTERM').then(() => process.exit(0)));
  // The children run in their own process groups: a SIGHUP reaches them only through here. The log
  // settings read again also go to children started later (restarts); other settings need a restart.
  process.on('SIGHUP', () => {
    const { config: fresh, note, kept } = rereadConfig(argv, config);
    config = { ...config, ...logSettingsOf(fresh) };
    say(`SIGHUP: the children reopen their logs; ${note}`);
    const message: ReloadMessage = { type: 'extqs:reload', settings: logSettingsOf(config), note, kept };
    host.send(message);
    proxy.send(message);
  });

  try {
    await host.start();
    await proxy.start();
  } catch (err) {
    await stop('start-up failed');
    fail((err as Error).message, 1);
  }
}

const [command, ...rest] = process.argv.slice(2);
if (command === 'start') {
  start(rest).catch((err) => fail(err instanceof ConfigError ? err.message : (err as Error).stack ?? String(err), err instanceof ConfigError ? 2 : 1));
} else if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
  process.stdout.write(USAGE);
} else {
  process.stderr.write(USAGE);
  fail(`unknown command ${JSON.stringify(command)}`, 2);
}
