// What a SIGHUP does with each setting, decided here and nowhere else, beside the table that declares
// them (settings.ts): for every setting, and for each process that reads its settings again (the
// launcher, `extqs proxy` alone or as the primary of workers, `extqs host`'s pool), whether a changed
// value is applied now or needs a restart (its running value is kept until then), and the words of the
// SIGHUP line each of them writes. The processes only carry out what this decides.
import { isDeepStrictEqual } from 'node:util';
import type { Command } from './commands.ts';
import { flagValue } from './config.ts';
import { SETTING_KEYS, specOf, type Config, type SettingKey } from './settings.ts';

/** The process that read its settings again; the others are handed what it decided. */
export type Reader = 'launcher' | 'proxy' | 'proxy-primary' | 'host-pool';

export function readerOf(command: Command, config: Partial<Config>): Reader {
  if (command === 'host') return 'host-pool';
  if (command === 'proxy') return (config.proxyWorkers ?? 1) > 1 ? 'proxy-primary' : 'proxy';
  return 'launcher';
}

/**
 * What a SIGHUP does with a changed setting: `applied` in the running processes; `replaced`, applied by
 * workers started with it that take the old ones' place (nginx's reload: the old ones finish what they hold);
 * or `restart`, the running value kept until one.
 */
export type Outcome = 'applied' | 'replaced' | 'restart';

/** How the line names each outcome, in this order. */
const OUTCOME_WORDS: Record<Outcome, string> = {
  applied: 'applied',
  replaced: 'applied by starting new workers:',
  restart: 'need a restart to apply:',
};

type Values = Partial<Config>;

/** A setting's rule: what a SIGHUP does with it given the running and the fresh values, and how the README says it. */
interface Rule {
  decide: (running: Values, fresh: Values, reader: Reader) => Outcome;
  summary: string;
}

const byTable = (key: SettingKey): Rule => {
  const outcome: Outcome = specOf(key).live ? 'applied' : 'restart';
  return { decide: () => outcome, summary: outcome };
};

/** The certificate is read again for new handshakes; opening or closing the HTTPS listener needs a restart. */
const sameHttpsListener: Rule = {
  decide: (running, fresh) => ((running.tlsCert === undefined) === (fresh.tlsCert === undefined) ? 'applied' : 'restart'),
  summary: 'applied; restart to turn HTTPS on or off',
};

/**
 * Whether the proxy's workers can be replaced: a primary with two or more (the launcher's proxy child, or
 * `extqs proxy`) starts new ones with the new settings on the port the cluster shares, then retires the old.
 * A lone proxy process holds the port itself: nothing can take its place without dropping connections.
 */
function replacesProxyWorkers(reader: Reader, running: Values): boolean {
  return (reader === 'launcher' || reader === 'proxy-primary') && (running.proxyWorkers ?? 1) > 1;
}

/**
 * Read by the proxy's request path: new workers take it where there are two or more; a lone process builds a new
 * request path with it, which new requests take while those in flight end on the old (proxy/server/server.ts reload()).
 */
const byNewProxyWorkers: Rule = {
  decide: (running, _fresh, reader) => (replacesProxyWorkers(reader, running) ? 'replaced' : 'applied'),
  summary: 'applied by new workers at --proxy-workers 2 or more; by a new request path in one process',
};

/**
 * Workers are started or retired to the new count, 2 or more. Going to or from 1 needs a restart: one
 * process then holds the port without a primary, or a primary must take it over.
 */
const proxyWorkerCount: Rule = {
  decide: (running, fresh, reader) => (replacesProxyWorkers(reader, running) && (fresh.proxyWorkers ?? 1) > 1 ? 'replaced' : 'restart'),
  summary: 'applied by starting or retiring workers while it stays 2 or more; else restart',
};

/**
 * An https:// upstream goes with the mutual TLS pair the proxy runs with: added while --mtls-* change (a restart),
 * it waits for that restart too, or it would be sent with no pair, or the old one.
 */
const upstreamsWithTheirPair: Rule = {
  decide: (running, fresh, reader) => {
    const secure = (fresh.upstreams ?? []).some((upstream) => upstream.kind === 'tcp' && upstream.tls);
    const pairChanged = (['mtlsCert', 'mtlsKey', 'mtlsCa'] as const).some((key) => !isDeepStrictEqual(running[key], fresh[key]));
    return secure && pairChanged ? 'restart' : byNewProxyWorkers.decide(running, fresh, reader);
  },
  summary: `${byNewProxyWorkers.summary}; restart when an https:// upstream comes with new --mtls-* files`,
};

/** The settings the proxy's request path is built with (byNewProxyWorkers, upstreamsWithTheirPair). */
export const REQUEST_PATH_SETTINGS = [
  'h2MaxConcurrentStreams',
  'serverTokens',
  'upstreamTimeout',
  'forwarder',
  'statusAllow',
  'upstreams',
  'upstreamMaxFails',
  'upstreamFailTimeout',
  'headerTimeout',
  'requestTimeout',
  'keepAliveTimeout',
  'maxHeaderSize',
  'maxHeaderFields',
  'limitRequestFieldSize',
  'limitRequestBody',
  'maxConnections',
] as const satisfies readonly SettingKey[];

/**
 * Read by a host worker when it starts: the pool (always a primary with its workers) starts new ones with it,
 * each taking an old one's place once it listens, as after --max-requests.
 */
const byNewHostWorkers: Rule = {
  decide: (_running, _fresh, reader) => (reader === 'launcher' || reader === 'host-pool' ? 'replaced' : 'restart'),
  summary: 'applied by new host workers',
};

/**
 * Read by the host pool as it runs: it starts or stops workers to the new --workers (idle ones stopped first,
 * busy ones once their request ends), and its maintenance and listen queue use the new bounds. --start-workers
 * counts only when a pool starts; it is here because its default follows the spare bounds, which follow --workers.
 */
const byThePool: Rule = {
  decide: (_running, _fresh, reader) => (reader === 'launcher' || reader === 'host-pool' ? 'applied' : 'restart'),
  summary: 'applied by the host pool (workers started or stopped to the new bounds)',
};

/**
 * The settings whose outcome is not the table's `live` alone. Those both read (--www, --logs,
 * --shutdown-timeout, --follow-symlinks), the listeners (--port, --listen, --tls-port) and --pm need a
 * restart.
 */
const RULES: Partial<Record<SettingKey, Rule>> = {
  tlsCert: sameHttpsListener,
  tlsKey: sameHttpsListener,
  // Without HTTPS it can only be off (settings.ts), so it changes with the listener.
  tlsRedirect: sameHttpsListener,
  proxyWorkers: proxyWorkerCount,
  ...Object.fromEntries(
    (
      [
        'workers',
        'spareWorkers',
        'workerConcurrency',
        'spoolMaxSize',
        'startWorkers',
        'listenBacklog',
        'minSpareWorkers',
        'maxSpareWorkers',
        'workerIdleTimeout',
      ] as const
    ).map((key) => [key, byThePool]),
  ),
  ...Object.fromEntries(REQUEST_PATH_SETTINGS.map((key) => [key, key === 'upstreams' ? upstreamsWithTheirPair : byNewProxyWorkers])),
  ...Object.fromEntries(
    (
      [
        'maxRequests',
        'maxExecutionTime',
        'slowlogTimeout',
        'postMaxSize',
        'uploadMaxFilesize',
        'maxFileUploads',
        'outputBuffering',
      ] as const
    ).map((key) => [key, byNewHostWorkers]),
  ),
};

/** The rule of every setting (docs/design.md §9). */
export const RELOAD_RULES: Readonly<Record<SettingKey, Rule>> = Object.fromEntries(
  SETTING_KEYS.map((key) => [key, RULES[key] ?? byTable(key)]),
) as Record<SettingKey, Rule>;

/** One setting a configuration read again changes. */
export interface SettingChange {
  key: SettingKey;
  outcome: Outcome;
  /** The values as the flag would be written. */
  before: string;
  after: string;
}

/** What a SIGHUP does with each setting `fresh` changes, for the settings both hold. */
export function resolveReload(reader: Reader, running: Values, fresh: Values): SettingChange[] {
  return SETTING_KEYS.flatMap((key) => {
    if (!(key in running) || !(key in fresh)) return [];
    const before = flagValue(key, running[key]);
    const after = flagValue(key, fresh[key]);
    if (before === after) return [];
    return [{ key, outcome: RELOAD_RULES[key].decide(running, fresh, reader), before, after }];
  });
}

/**
 * The running configuration with every setting a SIGHUP applies taken from `fresh`, its text changed or not:
 * a page or a certificate read again from the same file is new too.
 */
export function reloadedConfig<C extends Values>(reader: Reader, running: C, fresh: C): C {
  const applied = SETTING_KEYS.filter((key) => key in fresh && RELOAD_RULES[key].decide(running, fresh, reader) !== 'restart');
  return Object.freeze({ ...running, ...Object.fromEntries(applied.map((key) => [key, fresh[key]])) });
}

/** Whether a primary's workers (the proxy's, the host pool's) must be replaced for `fresh`: a setting only new ones take changed. */
export function workersReplacedFor(reader: 'proxy-primary' | 'host-pool', running: Values, fresh: Values): boolean {
  return resolveReload(reader, running, fresh).some(({ key, outcome }) => outcome === 'replaced' && key !== 'proxyWorkers');
}

/** What the SIGHUP line says of the settings: `applied --log-level "warn" -> "info"; need a restart to apply: …`. */
export function reloadNote(changes: readonly SettingChange[]): string {
  const parts = (Object.keys(OUTCOME_WORDS) as Outcome[]).flatMap((outcome) => {
    const listed = changes.filter((change) => change.outcome === outcome);
    return listed.length === 0 ? [] : [`${OUTCOME_WORDS[outcome]} ${listed.map(describeChange).join(', ')}`];
  });
  if (changes.every((change) => change.outcome === 'restart')) parts.unshift('live settings unchanged');
  return parts.join('; ');
}

function describeChange({ key, before, after }: SettingChange): string {
  return `--${specOf(key).flag} ${before} -> ${after}`;
}

/** The line's note when the configuration could not be read: nothing changes. */
export function unreadNote(err: Error): string {
  return `configuration not read again, the running one is kept: ${err.message}`;
}

/** The line's note of a launcher's child sent SIGHUP directly. */
export const FROM_LAUNCHER_NOTE = 'settings unchanged: they come from the launcher, which reads them again on its SIGHUP';

/** The SIGHUP line of a process that writes log files: which it opened again, then the note. */
export function sighupLine(reopened: readonly (string | false)[], note: string): string {
  return `SIGHUP received: reopened ${reopened.filter(Boolean).join(', ') || 'no log file'}; ${note}`;
}
