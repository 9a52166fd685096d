// Every setting of extqs, declared once: its flag, environment name, default, parser, the processes
// that use it, whether a SIGHUP applies it live, and its help. The Config types, the validation, each
// command's options and --help, docs/configuration.md's tables and the SIGHUP resolver (reloadResolver.ts) all come from
// this table.
import { availableParallelism } from 'node:os';
import { MAX_HEADER_SIZE_CEILING } from './protocol.ts';
import { tlsPairProblem } from './tlsPair.ts';
import { isLoopbackAddress } from './clientList.ts';
import { compileAccessFormat, LOG_FORMATS, LOG_LEVELS } from './logFormat.ts';
import {
  address,
  allowList,
  errorDocuments,
  formatAllowList,
  formatUpstream,
  integer,
  logDirectory,
  logFormat,
  oneOf,
  optionalPath,
  optionalPort,
  pemFile,
  pidFilePath,
  port,
  setOf,
  size,
  upstreamList,
  wwwDirectory,
  type Parser,
  type Upstream,
} from './settingParsers.ts';
import type { Command } from './commands.ts';

/**
 * Whether one of the upstreams is on this machine: a unix socket, or a loopback address or name. --help reads a
 * default with the other settings' default texts, not their values: there is no list then, and no host elsewhere.
 */
function reachesHostHere(upstreams: unknown): boolean {
  if (!Array.isArray(upstreams)) return true;
  return (upstreams as Upstream[]).some(
    (upstream) => upstream.kind === 'unix' || upstream.host.toLowerCase() === 'localhost' || isLoopbackAddress(upstream.host),
  );
}

/** The two server processes; a setting is used by one or both. */
export type Role = 'proxy' | 'host';

/** How docs/configuration.md groups the settings. */
export type SettingGroup = 'service' | 'tls' | 'host' | 'input' | 'upstreams' | 'logs' | 'limits';

export interface SettingSpec<T, R extends readonly Role[], L extends boolean = boolean> {
  flag: string;
  env: string;
  /** The name read before 0.1 (generic, shared with other programs); still read, with a warning, until 0.2. */
  deprecatedEnv?: string;
  /** The default as text, parsed like a given value; a function when it follows another setting or the command. */
  default: string | ((value: (key: string) => unknown, command: Command) => string);
  /** The default as --help and docs/configuration.md show it, when it is not the text itself. */
  defaultText?: string;
  parse: Parser<T>;
  /** The processes that use it: `extqs proxy` and `extqs host` take exactly their own. */
  roles: R;
  /** `extqs start` does not take it: the launcher sets it for its children, for this reason. */
  setByLauncher?: string;
  /** A SIGHUP applies it without a restart. */
  live?: L;
  /** The flag may be given more than once; the environment then lists the values with commas. */
  repeatable?: true;
  /** Checks it against settings it depends on (read before it); calls `fail` to refuse it. */
  relation?: (value: T, other: (key: string) => unknown, fail: (allowed: string) => never) => void;
  /** The value as an operator would write it, for the SIGHUP report (JSON text by default). */
  format?: (value: T) => string;
  /** The placeholder in --help: `N`, `ADDR`, … */
  placeholder: string;
  help: string;
  group: SettingGroup;
}

function setting<T, const R extends readonly Role[], const L extends boolean = false>(spec: SettingSpec<T, R, L>): SettingSpec<T, R, L> {
  return spec;
}

const MAX_WORKERS = 256;
/** --max-header-fields' ceiling: HTTP/2 sessions are bounded by it from the start, so a SIGHUP may raise the limit. */
export const MAX_HEADER_FIELDS = 10_000;
/** The host keeps idle sockets 75 s (host/worker/app.ts); the proxy's own clients must be let go sooner. */
const MAX_KEEP_ALIVE_TIMEOUT = 60;
const seconds = (max: number) => integer(0, max);
const MTLS_UNDER_LAUNCHER = 'the launcher gives its host a private unix socket, which only its own proxy can reach';

export const FORWARDERS = ['builtin', 'http-proxy'] as const;
export type Forwarder = (typeof FORWARDERS)[number];

/** The content codings the proxy can make (proxy/core/compression.ts). */
export const CONTENT_CODINGS = ['gzip', 'br'] as const;
export type ContentCoding = (typeof CONTENT_CODINGS)[number];

/** Which symbolic links under www/public and www/controllers are followed (common/linkGuard.ts). */
export const FOLLOW_SYMLINKS = ['owner', 'on', 'off'] as const;
export type FollowSymlinks = (typeof FOLLOW_SYMLINKS)[number];

/** What the `Server` field says (Apache's ServerTokens): full `extqs/<version> (Node.js <version>)`, prod `extqs`, off none. */
/** php-fpm's pm: how the host keeps its workers (host/pool/pool.ts). */
export const PM_MODES = ['static', 'dynamic', 'ondemand'] as const;
export type PmMode = (typeof PM_MODES)[number];

export const SERVER_TOKENS = ['full', 'prod', 'off'] as const;
export type ServerTokens = (typeof SERVER_TOKENS)[number];

export const SETTINGS = {
  port: setting({
    flag: 'port',
    env: 'EXTQS_PORT',
    deprecatedEnv: 'PORT',
    default: '8080',
    parse: port,
    roles: ['proxy'],
    placeholder: 'PORT',
    help: 'public port of the proxy; 0 picks a free one (see the ready line)',
    group: 'service',
  }),
  listen: setting({
    flag: 'listen',
    env: 'EXTQS_LISTEN',
    deprecatedEnv: 'LISTEN',
    default: '0.0.0.0',
    parse: address,
    roles: ['proxy'],
    placeholder: 'ADDR',
    help: 'address the proxy binds',
    group: 'service',
  }),
  tlsPort: setting({
    flag: 'tls-port',
    env: 'EXTQS_TLS_PORT',
    deprecatedEnv: 'TLS_PORT',
    default: '8443',
    parse: port,
    roles: ['proxy'],
    placeholder: 'PORT',
    help: 'port of the HTTPS listener (HTTP/2 and HTTP/1.1), opened when --tls-cert is given; 0 picks a free one',
    group: 'tls',
  }),
  tlsCert: setting({
    flag: 'tls-cert',
    env: 'EXTQS_TLS_CERT',
    deprecatedEnv: 'TLS_CERT',
    default: '',
    defaultText: 'none (no HTTPS)',
    parse: pemFile('a certificate, then its chain'),
    roles: ['proxy'],
    live: true,
    placeholder: 'FILE',
    help: "PEM certificate, followed by its intermediates (certbot's fullchain.pem); read again on SIGHUP",
    group: 'tls',
  }),
  tlsKey: setting({
    flag: 'tls-key',
    env: 'EXTQS_TLS_KEY',
    deprecatedEnv: 'TLS_KEY',
    default: '',
    defaultText: 'none',
    parse: pemFile('a private key'),
    // A certificate without its key (or a key that is not the certificate's) would fail every handshake.
    relation: (key, other, fail) => {
      const cert = other('tlsCert') as string | undefined;
      if ((key === undefined) !== (cert === undefined)) fail('given together with --tls-cert (EXTQS_TLS_CERT), or neither');
      const problem = cert !== undefined && key !== undefined ? tlsPairProblem(cert, key) : undefined;
      if (problem) fail(`the private key of the certificate in --tls-cert (${problem})`);
    },
    roles: ['proxy'],
    live: true,
    placeholder: 'FILE',
    help: "PEM private key of --tls-cert (certbot's privkey.pem); read again on SIGHUP",
    group: 'tls',
  }),
  tlsRedirect: setting({
    flag: 'tls-redirect',
    env: 'EXTQS_TLS_REDIRECT',
    deprecatedEnv: 'TLS_REDIRECT',
    default: 'off',
    parse: oneOf(['off', 'on']),
    relation: (value, other, fail) => {
      if (value === 'on' && other('tlsCert') === undefined) fail('off without --tls-cert (there is no HTTPS to send clients to)');
    },
    roles: ['proxy'],
    live: true,
    placeholder: 'SWITCH',
    help: 'on: every plain HTTP request is answered 301 to the same URL on HTTPS',
    group: 'tls',
  }),
  h2MaxConcurrentStreams: setting({
    flag: 'h2-max-concurrent-streams',
    env: 'EXTQS_H2_MAX_CONCURRENT_STREAMS',
    deprecatedEnv: 'H2_MAX_CONCURRENT_STREAMS',
    default: '100',
    parse: integer(1, 10_000),
    roles: ['proxy'],
    placeholder: 'N',
    help: 'HTTP/2 streams one connection may have open at once (Apache H2MaxSessionStreams 100)',
    group: 'tls',
  }),
  proxyWorkers: setting({
    flag: 'proxy-workers',
    env: 'EXTQS_PROXY_WORKERS',
    deprecatedEnv: 'PROXY_WORKERS',
    // Half the CPUs with a host on this machine: its workers take one each, and a front per CPU beside them keeps
    // twice as many busy processes as CPUs on controller traffic (docs/benchmarks.md, "The whole stack"). A proxy
    // whose hosts are elsewhere takes every CPU, as nginx's `worker_processes auto`.
    default: (other, command) => {
      const cpus = availableParallelism();
      const hostHere = command !== 'proxy' || reachesHostHere(other('upstreams'));
      return String(Math.min(hostHere ? Math.ceil(cpus / 2) : cpus, MAX_WORKERS));
    },
    defaultText:
      'half the available CPUs, rounded up, with a host on this machine (extqs start, or an --upstream on a unix socket or loopback); else all of them',
    parse: integer(1, MAX_WORKERS),
    roles: ['proxy'],
    placeholder: 'N',
    help: 'proxy worker processes sharing the port (nginx worker_processes); 1 = the proxy process serves itself',
    group: 'service',
  }),
  www: setting({
    flag: 'www',
    env: 'EXTQS_WWW_ROOT',
    deprecatedEnv: 'WWW_ROOT',
    default: './www',
    parse: wwwDirectory,
    roles: ['proxy', 'host'],
    placeholder: 'DIR',
    help: 'directory holding public/ (served files) and controllers/',
    group: 'service',
  }),
  followSymlinks: setting({
    flag: 'follow-symlinks',
    env: 'EXTQS_FOLLOW_SYMLINKS',
    deprecatedEnv: 'FOLLOW_SYMLINKS',
    // Apache's SymLinksIfOwnerMatch, narrowed to the same root: nothing outside www/ is served or run.
    default: 'owner',
    parse: oneOf(FOLLOW_SYMLINKS),
    roles: ['proxy', 'host'],
    placeholder: 'MODE',
    help: "symbolic links under www/public and www/controllers: owner follows one whose target is in the same directory and has the link's owner (Apache SymLinksIfOwnerMatch); on follows every link (FollowSymLinks); off none",
    group: 'service',
  }),
  serverTokens: setting({
    flag: 'server-tokens',
    env: 'EXTQS_SERVER_TOKENS',
    // Apache's ServerTokens Full and nginx's server_tokens on both name the server and its version.
    default: 'full',
    parse: oneOf(SERVER_TOKENS),
    roles: ['proxy'],
    placeholder: 'MODE',
    help: 'the Server field of every answer: full says extqs/0.1.0 (Node.js v20.20.2) with the versions running, prod says extqs, off sends none (Apache ServerTokens)',
    group: 'service',
  }),
  logs: setting({
    flag: 'logs',
    env: 'EXTQS_LOG_DIR',
    deprecatedEnv: 'LOG_DIR',
    default: './logs',
    parse: logDirectory,
    roles: ['proxy', 'host'],
    placeholder: 'DIR',
    help: 'directory of access.log, error.log and host.log; created if missing. `-`: access lines on stdout, error.log and host.log lines on stderr (containers)',
    group: 'service',
  }),
  configFile: setting({
    flag: 'config',
    env: 'EXTQS_CONFIG',
    default: '',
    defaultText: 'none',
    parse: optionalPath,
    roles: ['proxy', 'host'],
    placeholder: 'FILE',
    help: 'a file of NAME=value lines (the environment names), below flags and environment; read again on SIGHUP',
    group: 'service',
  }),
  pidFile: setting({
    flag: 'pid-file',
    env: 'EXTQS_PID_FILE',
    default: '',
    defaultText: 'none',
    parse: pidFilePath,
    // The launcher's own: neither server process writes one (a service manager knows their pid).
    roles: [],
    placeholder: 'FILE',
    help: "file the launcher writes its pid to once the service answers, removed at exit (nginx's pid; an existing file is overwritten); what logrotate's postrotate signals",
    group: 'service',
  }),
  workers: setting({
    flag: 'workers',
    env: 'EXTQS_WORKERS',
    deprecatedEnv: 'WORKERS',
    default: () => String(Math.min(availableParallelism(), MAX_WORKERS)),
    defaultText: 'available CPUs',
    parse: integer(1, MAX_WORKERS),
    roles: ['host'],
    placeholder: 'N',
    help: 'host worker processes, the most at once with --pm dynamic or ondemand (php-fpm pm.max_children)',
    group: 'host',
  }),
  spareWorkers: setting({
    flag: 'spare-workers',
    env: 'EXTQS_SPARE_WORKERS',
    default: '0',
    parse: integer(0, MAX_WORKERS),
    roles: ['host'],
    placeholder: 'N',
    help: "host workers kept started beside the pool, with the controllers in use loaded, each taking a dead or retiring worker's place at once",
    group: 'host',
  }),
  workerConcurrency: setting({
    flag: 'worker-concurrency',
    env: 'EXTQS_WORKER_CONCURRENCY',
    default: '0',
    defaultText: '0 (unlimited)',
    parse: integer(0, 100_000),
    roles: ['host'],
    placeholder: 'N',
    help: "the most requests one host worker runs at once (Passenger's force_max_concurrent_requests_per_process); 0 = unlimited, 1 = one at a time, as php-fpm, for controllers that keep global state",
    group: 'host',
  }),
  spoolMaxSize: setting({
    flag: 'spool-max-size',
    env: 'EXTQS_SPOOL_MAX_SIZE',
    default: '1g',
    parse: size,
    roles: ['host'],
    placeholder: 'SIZE',
    help: 'request bodies the host keeps on disk until a worker takes them (at --worker-concurrency 1 or more), all together: a declared length past it is 413, a body that crosses it 503 with Retry-After; 0 = no bound',
    group: 'host',
  }),
  pm: setting({
    flag: 'pm',
    env: 'EXTQS_PM',
    default: 'static',
    parse: oneOf(PM_MODES),
    roles: ['host'],
    placeholder: 'MODE',
    help: 'how the host keeps its workers (php-fpm pm): static keeps --workers; dynamic keeps idle ones between --min-spare-workers and --max-spare-workers; ondemand starts one when a request finds none idle and stops it after --worker-idle-timeout',
    group: 'host',
  }),
  startWorkers: setting({
    flag: 'start-workers',
    env: 'EXTQS_START_WORKERS',
    // php-fpm's default: min_spare + (max_spare - min_spare) / 2.
    default: (value) => {
      const min = Number(value('minSpareWorkers'));
      return String(min + Math.floor((Number(value('maxSpareWorkers')) - min) / 2));
    },
    defaultText: 'min + (max - min) / 2 of the spare bounds',
    parse: integer(1, MAX_WORKERS),
    relation: (value, other, fail) => {
      if (other('pm') !== 'dynamic') return;
      const min = Number(other('minSpareWorkers'));
      const max = Number(other('maxSpareWorkers'));
      if (value < min || value > max) fail(`from --min-spare-workers (${min}) to --max-spare-workers (${max})`);
    },
    roles: ['host'],
    placeholder: 'N',
    help: 'with --pm dynamic: workers started at start-up (php-fpm pm.start_servers)',
    group: 'host',
  }),
  minSpareWorkers: setting({
    flag: 'min-spare-workers',
    env: 'EXTQS_MIN_SPARE_WORKERS',
    default: '1',
    parse: integer(1, MAX_WORKERS),
    relation: (value, other, fail) => {
      if (other('pm') === 'dynamic' && value > Number(other('workers'))) fail(`at most --workers (${String(other('workers'))})`);
    },
    roles: ['host'],
    placeholder: 'N',
    help: 'with --pm dynamic: fewer idle workers than this and more are started, once a second (php-fpm pm.min_spare_servers)',
    group: 'host',
  }),
  maxSpareWorkers: setting({
    flag: 'max-spare-workers',
    env: 'EXTQS_MAX_SPARE_WORKERS',
    // php-fpm's www.conf says 3 (with max_children 5); bounded by --workers so that `--pm dynamic` alone starts on
    // a machine of fewer CPUs (a SIGHUP that changes --workers then names this one too).
    default: (value) => String(Math.min(3, Number(value('workers')))),
    defaultText: '3, at most --workers',
    parse: integer(1, MAX_WORKERS),
    relation: (value, other, fail) => {
      if (other('pm') !== 'dynamic') return;
      const workers = Number(other('workers'));
      const min = Number(other('minSpareWorkers'));
      if (value > workers) fail(`at most --workers (${workers})`);
      if (value < min) fail(`at least --min-spare-workers (${min})`);
    },
    roles: ['host'],
    placeholder: 'N',
    help: 'with --pm dynamic: more idle workers than this and one is stopped, once a second (php-fpm pm.max_spare_servers)',
    group: 'host',
  }),
  workerIdleTimeout: setting({
    flag: 'worker-idle-timeout',
    env: 'EXTQS_WORKER_IDLE_TIMEOUT',
    default: '10',
    parse: integer(1, 86_400),
    roles: ['host'],
    placeholder: 'SECONDS',
    help: 'with --pm ondemand: seconds a worker stays idle before it is stopped (php-fpm pm.process_idle_timeout)',
    group: 'host',
  }),
  listenBacklog: setting({
    flag: 'listen-backlog',
    env: 'EXTQS_LISTEN_BACKLOG',
    default: '511',
    parse: integer(0, 65_535),
    roles: ['host'],
    placeholder: 'N',
    help: 'requests that may wait for a free host worker; past it the request is answered 503 (php-fpm listen.backlog)',
    group: 'host',
  }),
  maxRequests: setting({
    flag: 'max-requests',
    env: 'EXTQS_MAX_REQUESTS',
    deprecatedEnv: 'MAX_REQUESTS',
    default: '0',
    defaultText: '0 (never)',
    parse: integer(0, 1_000_000_000),
    roles: ['host'],
    placeholder: 'N',
    help: 'recycle a host worker after this many requests (php-fpm pm.max_requests)',
    group: 'host',
  }),
  maxExecutionTime: setting({
    flag: 'max-execution-time',
    env: 'EXTQS_MAX_EXECUTION_TIME',
    deprecatedEnv: 'MAX_EXECUTION_TIME',
    default: '30',
    parse: seconds(86_400),
    roles: ['host'],
    placeholder: 'SECONDS',
    help: 'seconds a controller may run (PHP max_execution_time); 0 = no limit',
    group: 'host',
  }),
  slowlogTimeout: setting({
    flag: 'slowlog-timeout',
    env: 'EXTQS_SLOWLOG_TIMEOUT',
    default: '0',
    parse: seconds(86_400),
    roles: ['host'],
    placeholder: 'SECONDS',
    help: 'a controller call still running after this many seconds gets its stack in host.log (php-fpm request_slowlog_timeout); 0 = off',
    group: 'host',
  }),
  postMaxSize: setting({
    flag: 'post-max-size',
    env: 'EXTQS_POST_MAX_SIZE',
    deprecatedEnv: 'POST_MAX_SIZE',
    default: '8m',
    parse: size,
    roles: ['host'],
    placeholder: 'SIZE',
    help: 'a form body (urlencoded or multipart) larger than this fills no post or files, with a warning in host.log (PHP post_max_size); 0 = no limit',
    group: 'input',
  }),
  outputBuffering: setting({
    flag: 'output-buffering',
    env: 'EXTQS_OUTPUT_BUFFERING',
    default: '4096',
    parse: size,
    roles: ['host'],
    placeholder: 'SIZE',
    help: "a controller's streamed answer is held up to this many bytes before its status goes out, so a failure within them answers 500 with what was written (PHP output_buffering); 0 = stream at once",
    group: 'host',
  }),
  uploadMaxFilesize: setting({
    flag: 'upload-max-filesize',
    env: 'EXTQS_UPLOAD_MAX_FILESIZE',
    deprecatedEnv: 'UPLOAD_MAX_FILESIZE',
    default: '2m',
    parse: size,
    roles: ['host'],
    placeholder: 'SIZE',
    help: 'an uploaded file larger than this is not kept: error 1, UPLOAD_ERR_INI_SIZE (PHP upload_max_filesize); 0 = no limit',
    group: 'input',
  }),
  maxFileUploads: setting({
    flag: 'max-file-uploads',
    env: 'EXTQS_MAX_FILE_UPLOADS',
    deprecatedEnv: 'MAX_FILE_UPLOADS',
    default: '20',
    parse: integer(0, 100_000),
    roles: ['host'],
    placeholder: 'N',
    help: 'files kept from one request; the rest are skipped with a warning (PHP max_file_uploads)',
    group: 'input',
  }),
  upstreamTimeout: setting({
    flag: 'upstream-timeout',
    env: 'EXTQS_UPSTREAM_TIMEOUT',
    deprecatedEnv: 'UPSTREAM_TIMEOUT',
    // The proxy waits exactly as long as a controller may run.
    default: (value) => String(value('maxExecutionTime')),
    defaultText: 'max-execution-time',
    parse: seconds(86_400),
    roles: ['proxy'],
    placeholder: 'SECONDS',
    help: "seconds the proxy waits for the host's response headers, then 504; 0 = no limit",
    group: 'host',
  }),
  shutdownTimeout: setting({
    flag: 'shutdown-timeout',
    env: 'EXTQS_SHUTDOWN_TIMEOUT',
    deprecatedEnv: 'SHUTDOWN_TIMEOUT',
    // A stop lets every controller run out its limit, and 5 s to answer.
    default: (value) => String((Number(value('maxExecutionTime')) || 30) + 5),
    defaultText: 'max-execution-time + 5',
    parse: seconds(86_400),
    roles: ['proxy', 'host'],
    placeholder: 'SECONDS',
    help: 'seconds a stop waits for requests in flight, then cuts them',
    group: 'host',
  }),
  forwarder: setting({
    flag: 'forwarder',
    env: 'EXTQS_FORWARDER',
    deprecatedEnv: 'FORWARDER',
    // The builtin client costs a relayed request less than http-proxy, and less memory (docs/benchmarks.md,
    // Forwarding engine).
    default: 'builtin',
    parse: oneOf(FORWARDERS),
    roles: ['proxy'],
    placeholder: 'ENGINE',
    help: "the proxy's forwarding engine: builtin or http-proxy",
    group: 'host',
  }),
  statusAllow: setting({
    flag: 'status-allow',
    env: 'EXTQS_STATUS_ALLOW',
    deprecatedEnv: 'STATUS_ALLOW',
    // Loopback only, as Apache's `Require local`.
    default: '127.0.0.0/8,::1',
    parse: allowList,
    format: (list) => JSON.stringify(formatAllowList(list)),
    roles: ['proxy'],
    placeholder: 'LIST',
    help: 'addresses and CIDR subnets allowed /server-status and /metrics',
    group: 'service',
  }),
  metricsPort: setting({
    flag: 'metrics-port',
    env: 'EXTQS_METRICS_PORT',
    default: '',
    defaultText: 'none',
    parse: optionalPort,
    // One listener per port: the cluster shares each, and a second bind of the public one would fail later.
    relation: (value, other, fail) => {
      const taken = [other('port'), other('tlsCert') === undefined ? undefined : other('tlsPort')];
      if (value !== undefined && value !== 0 && taken.includes(value)) fail('a port other than --port and --tls-port, or none');
    },
    roles: ['proxy'],
    placeholder: 'PORT',
    help: "a port of its own serving /metrics alone, to any client (a cluster's Prometheus; /server-status stays on --status-allow); 0 picks a free one (error.log says which)",
    group: 'service',
  }),
  compression: setting({
    flag: 'compression',
    env: 'EXTQS_COMPRESSION',
    deprecatedEnv: 'COMPRESSION',
    default: CONTENT_CODINGS.join(','),
    parse: setOf(CONTENT_CODINGS),
    format: (codings: readonly ContentCoding[]) => JSON.stringify(codings.length === 0 ? 'off' : codings.join(',')),
    roles: ['proxy'],
    // Only the next answers are concerned: nothing to reopen or restart.
    live: true,
    placeholder: 'CODINGS',
    help: 'codings the proxy may answer text with, chosen by Accept-Encoding: gzip, br, both (gzip,br) or off',
    group: 'service',
  }),
  errorDocuments: setting({
    flag: 'error-document',
    env: 'EXTQS_ERROR_DOCUMENT',
    default: '',
    defaultText: "none (Apache's pages)",
    // The statuses a visitor meets when the service, not the request, is at fault, and the missing page.
    parse: errorDocuments([404, 500, 502, 503, 504]),
    format: (documents) =>
      documents.length === 0 ? 'none' : JSON.stringify(documents.map(({ status, file }) => `${status}=${file}`).join(',')),
    roles: ['proxy'],
    live: true,
    repeatable: true,
    placeholder: 'CODE=FILE',
    help: 'a page of your own for 404, 500, 502, 503 or 504 (Apache ErrorDocument), e.g. 503=www/maintenance.html; repeat for several; read at start and on SIGHUP',
    group: 'service',
  }),
  upstreams: setting({
    flag: 'upstream',
    env: 'EXTQS_UPSTREAM',
    default: '',
    defaultText: 'none',
    parse: upstreamList,
    format: (list) => (list.length === 0 ? 'none' : JSON.stringify(list.map(formatUpstream).join(','))),
    relation: (list, other, fail) => {
      const secure = list.find((upstream) => upstream.kind === 'tcp' && upstream.tls);
      if (secure && other('mtlsKey') === undefined)
        fail(`http:// or unix: upstreams without --mtls-cert, --mtls-key and --mtls-ca (${formatUpstream(secure)} needs them)`);
    },
    roles: ['proxy'],
    setByLauncher: 'the launcher connects the proxy to the host it starts',
    repeatable: true,
    placeholder: 'URL',
    help: 'a host to forward /External to: unix:/path, http://host:port, or https://host:port (mutual TLS, --mtls-*); repeat for several, tried in turn',
    group: 'upstreams',
  }),
  upstreamMaxFails: setting({
    flag: 'upstream-max-fails',
    env: 'EXTQS_UPSTREAM_MAX_FAILS',
    deprecatedEnv: 'UPSTREAM_MAX_FAILS',
    default: '1',
    parse: integer(1, 1000),
    roles: ['proxy'],
    placeholder: 'N',
    help: 'failed connects in a row that take a host out of the rotation (nginx max_fails)',
    group: 'upstreams',
  }),
  upstreamFailTimeout: setting({
    flag: 'upstream-fail-timeout',
    env: 'EXTQS_UPSTREAM_FAIL_TIMEOUT',
    deprecatedEnv: 'UPSTREAM_FAIL_TIMEOUT',
    default: '10',
    parse: seconds(86_400),
    roles: ['proxy'],
    placeholder: 'SECONDS',
    help: 'seconds a host stays out of the rotation (nginx fail_timeout)',
    group: 'upstreams',
  }),
  socket: setting({
    flag: 'socket',
    env: 'EXTQS_SOCKET',
    default: '',
    defaultText: 'none',
    parse: optionalPath,
    roles: ['host'],
    setByLauncher: 'the launcher gives its host a private unix socket',
    placeholder: 'PATH',
    help: 'unix socket the host listens on (made 0600); without it the host listens on --host-listen:--host-port',
    group: 'upstreams',
  }),
  hostListen: setting({
    flag: 'host-listen',
    env: 'EXTQS_HOST_LISTEN',
    default: '127.0.0.1',
    parse: address,
    roles: ['host'],
    setByLauncher: 'the launcher gives its host a private unix socket',
    placeholder: 'ADDR',
    help: 'address the host listens on without --socket; loopback unless proxies on other machines use it',
    group: 'upstreams',
  }),
  hostPort: setting({
    flag: 'host-port',
    env: 'EXTQS_HOST_PORT',
    default: '0',
    parse: port,
    roles: ['host'],
    setByLauncher: 'the launcher gives its host a private unix socket',
    placeholder: 'PORT',
    help: 'port the host listens on without --socket; 0 picks a free one',
    group: 'upstreams',
  }),
  mtlsCa: setting({
    flag: 'mtls-ca',
    env: 'EXTQS_MTLS_CA',
    default: '',
    defaultText: 'none',
    parse: pemFile('CA certificates'),
    roles: ['proxy', 'host'],
    setByLauncher: MTLS_UNDER_LAUNCHER,
    placeholder: 'FILE',
    help: "mutual TLS between proxy and host: the CA the other side's certificate must come from (the host's clients', the proxy's hosts')",
    group: 'upstreams',
  }),
  mtlsCert: setting({
    flag: 'mtls-cert',
    env: 'EXTQS_MTLS_CERT',
    default: '',
    defaultText: 'none',
    parse: pemFile('a certificate, then its chain'),
    roles: ['proxy', 'host'],
    setByLauncher: MTLS_UNDER_LAUNCHER,
    placeholder: 'FILE',
    help: "mutual TLS: this process's certificate (the host's server certificate, the proxy's client certificate), from a CA the other side trusts",
    group: 'upstreams',
  }),
  mtlsKey: setting({
    flag: 'mtls-key',
    env: 'EXTQS_MTLS_KEY',
    default: '',
    defaultText: 'none',
    parse: pemFile('a private key'),
    // Half a configuration would fail every handshake; say so at start instead.
    relation: (key, other, fail) => {
      const cert = other('mtlsCert') as string | undefined;
      const ca = other('mtlsCa') as string | undefined;
      const given = [key, cert, ca].filter((file) => file !== undefined).length;
      if (given !== 0 && given !== 3) fail('given with --mtls-cert (EXTQS_MTLS_CERT) and --mtls-ca (EXTQS_MTLS_CA), or none of the three');
      const problem = cert !== undefined && key !== undefined ? tlsPairProblem(cert, key) : undefined;
      if (problem) fail(`the private key of the certificate in --mtls-cert (${problem})`);
    },
    roles: ['proxy', 'host'],
    setByLauncher: MTLS_UNDER_LAUNCHER,
    placeholder: 'FILE',
    help: 'mutual TLS: the private key of --mtls-cert',
    group: 'upstreams',
  }),
  hostAllow: setting({
    flag: 'host-allow',
    env: 'EXTQS_HOST_ALLOW',
    default: '',
    defaultText: 'none (any client that reaches the port)',
    parse: allowList,
    format: (list) => (list.length === 0 ? 'none' : JSON.stringify(formatAllowList(list))),
    // php-fpm's listen.allowed_clients: a host on a network must know its proxies (docs/design.md §12).
    relation: (list, other, fail) => {
      const listen = other('hostListen') as string;
      if (other('socket') !== undefined || isLoopbackAddress(listen) || list.length > 0 || other('mtlsKey') !== undefined) return;
      fail(
        `the proxies' addresses or subnets, or mutual TLS given (--mtls-cert, --mtls-key, --mtls-ca), when --host-listen (EXTQS_HOST_LISTEN) ${JSON.stringify(listen)} is not a loopback address`,
      );
    },
    roles: ['host'],
    setByLauncher: MTLS_UNDER_LAUNCHER,
    placeholder: 'LIST',
    help: "addresses and CIDR subnets of the proxies a TCP host admits (php-fpm's listen.allowed_clients); others are disconnected",
    group: 'upstreams',
  }),
  logLevel: setting({
    flag: 'log-level',
    env: 'EXTQS_LOG_LEVEL',
    deprecatedEnv: 'LOG_LEVEL',
    // The favicon miss is a [core:info] line and must show by default.
    default: 'info',
    parse: oneOf(LOG_LEVELS),
    roles: ['proxy', 'host'],
    live: true,
    placeholder: 'LEVEL',
    help: "Apache's level for error.log and host.log: emerg … debug, trace1-8; notice lines always show",
    group: 'logs',
  }),
  logFormat: setting({
    flag: 'log-format',
    env: 'EXTQS_LOG_FORMAT',
    deprecatedEnv: 'LOG_FORMAT',
    default: 'combined',
    parse: logFormat(LOG_FORMATS, compileAccessFormat),
    roles: ['proxy', 'host'],
    live: true,
    placeholder: 'FORMAT',
    help: 'combined (Apache\'s text layouts), json (one object a line), or an Apache LogFormat string for access.log (%h %t "%r" %>s %b %D %T %{User-Agent}i …; the other logs stay text)',
    group: 'logs',
  }),
  logMaxSize: setting({
    flag: 'log-max-size',
    env: 'EXTQS_LOG_MAX_SIZE',
    deprecatedEnv: 'LOG_MAX_SIZE',
    default: '0',
    defaultText: '0 (never)',
    parse: size,
    roles: ['proxy', 'host'],
    live: true,
    placeholder: 'SIZE',
    help: 'rotate a log file past this size: bytes, or 512k, 100m, 1g',
    group: 'logs',
  }),
  logMaxFiles: setting({
    flag: 'log-max-files',
    env: 'EXTQS_LOG_MAX_FILES',
    deprecatedEnv: 'LOG_MAX_FILES',
    default: '5',
    parse: integer(1, 1000),
    roles: ['proxy', 'host'],
    live: true,
    placeholder: 'N',
    help: 'rotated files kept per log: access.log.1 (newest) … access.log.N',
    group: 'logs',
  }),
  headerTimeout: setting({
    flag: 'header-timeout',
    env: 'EXTQS_HEADER_TIMEOUT',
    deprecatedEnv: 'HEADER_TIMEOUT',
    default: '20',
    parse: integer(1, 3_600),
    roles: ['proxy'],
    placeholder: 'SECONDS',
    help: 'seconds a client has to send the request head, then 408 (Apache RequestReadTimeout header=20)',
    group: 'limits',
  }),
  requestTimeout: setting({
    flag: 'request-timeout',
    env: 'EXTQS_REQUEST_TIMEOUT',
    deprecatedEnv: 'REQUEST_TIMEOUT',
    default: '60',
    parse: integer(1, 86_400),
    // Node refuses a head deadline later than the whole request's, and it would mean nothing.
    relation: (value, other, fail) => {
      if (value < Number(other('headerTimeout'))) fail(`at least --header-timeout (${String(other('headerTimeout'))})`);
    },
    roles: ['proxy'],
    placeholder: 'SECONDS',
    help: 'seconds a client has to send the whole request, body included, then 408 (Apache Timeout 60)',
    group: 'limits',
  }),
  keepAliveTimeout: setting({
    flag: 'keep-alive-timeout',
    env: 'EXTQS_KEEP_ALIVE_TIMEOUT',
    deprecatedEnv: 'KEEP_ALIVE_TIMEOUT',
    default: '5',
    parse: integer(0, MAX_KEEP_ALIVE_TIMEOUT),
    roles: ['proxy'],
    placeholder: 'SECONDS',
    help: 'seconds an idle client connection is kept, at most 60; 0 = no keep-alive (Apache KeepAliveTimeout 5)',
    group: 'limits',
  }),
  maxHeaderSize: setting({
    flag: 'max-header-size',
    env: 'EXTQS_MAX_HEADER_SIZE',
    deprecatedEnv: 'MAX_HEADER_SIZE',
    default: '16384',
    // The host's own limit is set above what this lets through (HOST_MAX_HEADER_SIZE).
    parse: integer(1_024, MAX_HEADER_SIZE_CEILING),
    roles: ['proxy'],
    placeholder: 'BYTES',
    help: 'bytes of request line and header fields together, then 431',
    group: 'limits',
  }),
  maxHeaderFields: setting({
    flag: 'max-header-fields',
    env: 'EXTQS_MAX_HEADER_FIELDS',
    deprecatedEnv: 'MAX_HEADER_FIELDS',
    default: '100',
    parse: integer(1, MAX_HEADER_FIELDS),
    roles: ['proxy'],
    placeholder: 'N',
    help: 'header fields in one request, then 400 (Apache LimitRequestFields 100)',
    group: 'limits',
  }),
  limitRequestFieldSize: setting({
    flag: 'limit-request-field-size',
    env: 'EXTQS_LIMIT_REQUEST_FIELD_SIZE',
    default: '8190',
    // A field longer than the whole head may be is refused by --max-header-size first (431).
    parse: integer(1, MAX_HEADER_SIZE_CEILING),
    roles: ['proxy'],
    placeholder: 'BYTES',
    help: 'bytes of one header field (`Name: value`), then 400 (Apache LimitRequestFieldSize 8190)',
    group: 'limits',
  }),
  limitRequestBody: setting({
    flag: 'limit-request-body',
    env: 'EXTQS_LIMIT_REQUEST_BODY',
    deprecatedEnv: 'LIMIT_REQUEST_BODY',
    default: '1g',
    parse: size,
    roles: ['proxy'],
    placeholder: 'SIZE',
    help: 'bytes of a request body, then 413 and the connection closed (Apache LimitRequestBody 1 GiB); 0 = no limit',
    group: 'limits',
  }),
  maxConnections: setting({
    flag: 'max-connections',
    env: 'EXTQS_MAX_CONNECTIONS',
    deprecatedEnv: 'MAX_CONNECTIONS',
    default: '0',
    defaultText: '0 (no cap)',
    parse: integer(0, 1_000_000),
    roles: ['proxy'],
    placeholder: 'N',
    help: 'client connections open at once; new ones past it are closed at once',
    group: 'limits',
  }),
};

type Settings = typeof SETTINGS;
export type SettingKey = keyof Settings;
type LiveKeys = { [K in SettingKey]: NonNullable<Settings[K]['live']> extends true ? K : never }[SettingKey];

/** Every setting, validated. */
export type Config = { readonly [K in SettingKey]: ReturnType<Settings[K]['parse']> };
type KeysOf<R extends Role> = { [K in SettingKey]: R extends Settings[K]['roles'][number] ? K : never }[SettingKey];
/**
 * Decided by the command, not a setting: only `extqs dev` sets it, for the processes it starts, so no flag,
 * variable or file line can turn a developer's error page on in `extqs start`, `proxy` or `host`.
 */
export interface CommandMode {
  /** `extqs dev`: logs also on the terminal, and the error page for loopback clients (docs/design.md §7). */
  readonly dev?: boolean;
  /** `extqs dev`, the host: the file where the launcher's type check keeps the errors as they stand (common/typeErrors.ts). */
  readonly typeErrors?: string;
}
export type ProxyConfig = Pick<Config, KeysOf<'proxy'>> & CommandMode;
export type HostConfig = Pick<Config, KeysOf<'host'>> & CommandMode;
/** The settings a SIGHUP applies without a restart. */
export type LiveSettings = Pick<Config, LiveKeys>;
/** The live settings every process takes: how its log files are written. */
export type LogSettings = Pick<Config, LiveKeys & KeysOf<'proxy'> & KeysOf<'host'>>;

export const SETTING_KEYS = Object.keys(SETTINGS) as SettingKey[];

/** The declaration of a setting, without its value type (for code that walks the table). */
export type AnySetting = SettingSpec<unknown, readonly Role[], boolean>;
export function specOf(key: SettingKey): AnySetting {
  return SETTINGS[key] as AnySetting;
}

/** `--port (PORT)`: how every message names a setting. */
export function labelOf(key: SettingKey): string {
  return `--${specOf(key).flag} (${specOf(key).env})`;
}

export const LIVE_KEYS = SETTING_KEYS.filter((key) => specOf(key).live) as LiveKeys[];
export const LOG_KEYS = LIVE_KEYS.filter((key) => specOf(key).roles.length === 2) as (keyof LogSettings)[];
