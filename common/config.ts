// Reading the configuration: for one command, each setting it takes comes from its flag, else its
// environment name, else the --config file, else its default (common/settings.ts declares them all).
// Every bad value is reported, each naming the setting, the value and what is allowed; the result is
// frozen. A flag the command does not take is refused, naming the commands that do.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { COMMANDS, type Command } from './commands.ts';
import { ConfigError, ConfigErrors, UsageError } from './configError.ts';
import { didYouMean } from './didYouMean.ts';
import {
  labelOf,
  LOG_KEYS,
  SETTING_KEYS,
  specOf,
  type Config,
  type HostConfig,
  type LogSettings,
  type ProxyConfig,
  type Role,
  type SettingKey,
} from './settings.ts';

/** What each command reads: `proxy` and `host` their own settings, `check` every one. */
export type ConfigOf<C extends Command> = C extends 'proxy' ? ProxyConfig : C extends 'host' ? HostConfig : Config;

/** Whether `extqs <command>` takes the setting as a flag (and reads it from the environment and file). */
export function takes(command: Command, key: SettingKey): boolean {
  const spec = specOf(key);
  if (command === 'proxy' || command === 'host') return spec.roles.includes(command);
  // `dev` is `start` with a developer's defaults (launcher/cli.ts): the same settings.
  if (command === 'start' || command === 'dev') return spec.setByLauncher === undefined;
  return true;
}

/** The commands that take a setting, as an operator would type them. */
function commandsTaking(key: SettingKey): string[] {
  return COMMANDS.filter((command) => takes(command, key)).map((command) => `extqs ${command}`);
}

const KEY_BY_FLAG = new Map(SETTING_KEYS.map((key) => [specOf(key).flag, key]));
const KEY_BY_ENV = new Map(SETTING_KEYS.map((key) => [specOf(key).env, key]));
const KEY_BY_DEPRECATED_ENV = new Map(
  SETTING_KEYS.flatMap((key) => (specOf(key).deprecatedEnv === undefined ? [] : [[specOf(key).deprecatedEnv!, key] as const])),
);

const ENV_PREFIX = 'EXTQS_';
/** Compared without the prefix every name shares, `LOGLEVEL` is one letter from `EXTQS_LOG_LEVEL`. */
const unprefixed = (name: string) => name.replace(/^EXTQS_/, '');

/** The names a --config file may set: every environment name but the file's own. */
const CONFIG_FILE_NAMES: readonly string[] = [...KEY_BY_ENV.keys()].filter((name) => name !== specOf('configFile').env);

interface ConfigFile {
  values: Map<SettingKey, string>;
  /** The settings whose value comes from a deprecated name, for the deprecation line. */
  deprecated: Map<SettingKey, string>;
  problems: ConfigError[];
}

/** Reads every line of a settings file, collecting each bad line's problem rather than stopping at the first. */
function scanConfigFile(text: string, file: string): ConfigFile {
  const result: ConfigFile = { values: new Map(), deprecated: new Map(), problems: [] };
  // A prefixed name wins over its deprecated one wherever each is written, as in the environment.
  const byPrefixed = new Set<SettingKey>();
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const match = /^([A-Z_][A-Z0-9_]*)\s*=\s*(.*)$/.exec(line);
    const where = `${file}:${index + 1}`;
    if (!match) {
      result.problems.push(new ConfigError(where, line, 'NAME=value'));
      return;
    }
    const [, name, value] = match;
    const prefixed = KEY_BY_ENV.get(name);
    const key = prefixed ?? KEY_BY_DEPRECATED_ENV.get(name);
    if (key === undefined || key === 'configFile') {
      result.problems.push(
        new ConfigError(
          where,
          name,
          `one of ${CONFIG_FILE_NAMES.join(', ')}`,
          didYouMean(unprefixed(name), CONFIG_FILE_NAMES.map(unprefixed), ENV_PREFIX),
        ),
      );
      return;
    }
    if (prefixed === undefined) {
      if (byPrefixed.has(key)) return;
      result.deprecated.set(key, name);
    } else {
      byPrefixed.add(key);
      result.deprecated.delete(key);
    }
    result.values.set(key, value.replace(/^"(.*)"$/, '$1'));
  });
  return result;
}

/**
 * The settings file: `NAME=value` lines with the environment names (`EXTQS_LOG_LEVEL=debug`), `#`
 * comments and blank lines. A name of a setting the command does not take is allowed (one file may
 * serve the proxy and the host) and ignored. Every bad line is reported, as file:line.
 */
export function parseConfigFile(text: string, file: string): Map<SettingKey, string> {
  const { values, problems } = scanConfigFile(text, file);
  throwProblems(problems);
  return values;
}

function throwProblems(problems: readonly (ConfigError | UsageError)[]): void {
  if (problems.length === 1) throw problems[0];
  if (problems.length > 1) throw new ConfigErrors(problems);
}

/**
 * The flags given, by setting; a repeatable flag's values joined as its environment variable lists them.
 * Every flag takes a value, so the word after it is its value whatever it starts with: `--workers -1` is
 * a bad value of --workers, reported like any other (node's parseArgs would call it ambiguous).
 */
function flagsOf(command: Command, argv: readonly string[], problems: (ConfigError | UsageError)[]): Map<SettingKey, string> {
  const see = `see extqs ${command} --help`;
  const known = SETTING_KEYS.filter((key) => takes(command, key)).map((key) => specOf(key).flag);
  const given = new Map<SettingKey, string[]>();
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i];
    if (!word.startsWith('-') || word === '-' || word === '--') {
      problems.push(new UsageError(`unexpected argument ${JSON.stringify(word)}: options are written --name value; ${see}`));
      continue;
    }
    const [name, inline] = word.startsWith('--') ? splitOnce(word.slice(2)) : [word, undefined];
    const key = word.startsWith('--') ? KEY_BY_FLAG.get(name) : undefined;
    if (key === undefined) {
      problems.push(new UsageError(`unknown option ${JSON.stringify(word)}${didYouMean(name.replace(/^-+/, ''), known, '--')}; ${see}`));
      // Its value, if it looks like one, is not a second problem.
      if (inline === undefined && argv[i + 1] !== undefined && !argv[i + 1].startsWith('--')) i++;
      continue;
    }
    const value = inline ?? argv[++i];
    if (value === undefined) {
      problems.push(new UsageError(`option --${name} needs a value (${specOf(key).placeholder}); ${see}`));
      continue;
    }
    if (!takes(command, key)) {
      const reason = command === 'start' || command === 'dev' ? `: ${specOf(key).setByLauncher}` : '';
      problems.push(
        new UsageError(`--${name} is not an option of extqs ${command}${reason}; it is taken by ${commandsTaking(key).join(', ')}`),
      );
      continue;
    }
    // The last of a flag wins (extqs dev puts its defaults first), unless it may be repeated.
    given.set(key, specOf(key).repeatable ? [...(given.get(key) ?? []), value] : [value]);
  }
  return new Map([...given].map(([key, values]) => [key, values.join(',')]));
}

/** `name=value` → [name, value]; `name` → [name, undefined]. */
function splitOnce(text: string): [string, string | undefined] {
  const at = text.indexOf('=');
  return at === -1 ? [text, undefined] : [text.slice(0, at), text.slice(at + 1)];
}

/** The one line that names the deprecated environment names a start read, and their new names. */
export function deprecationLine(names: readonly string[]): string {
  const renamed = names.map((name) => `${name} -> ${specOf((KEY_BY_DEPRECATED_ENV.get(name) ?? KEY_BY_ENV.get(name))!).env}`);
  return `extqs: deprecated setting names read: ${renamed.join(', ')}; the names without ${ENV_PREFIX} are read until extqs 0.2`;
}

/** A dependency of a setting was refused already: the dependent one is not reported again. */
class DependencyRefused extends Error {}

/**
 * Reads the configuration of `command`. Throws the one problem (UsageError for the command line,
 * ConfigError for a value) or ConfigErrors holding every problem found, command line and values alike.
 */
export function readConfig<C extends Command>(
  command: C,
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  cwd = process.cwd(),
  /** Told the deprecation line when a deprecated name was read: at start, not on every SIGHUP. */
  onDeprecated?: (line: string) => void,
): ConfigOf<C> {
  const problems: (ConfigError | UsageError)[] = [];
  const flags = flagsOf(command, argv, problems);
  const values = new Map<SettingKey, unknown>();
  const refused = new Set<SettingKey>();
  const deprecated = new Set<string>();

  const file = ((): (ConfigFile & { path: string }) | undefined => {
    const raw = flags.get('configFile') ?? env[specOf('configFile').env] ?? '';
    if (raw === '') return undefined;
    const path = resolve(cwd, raw);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      problems.push(new ConfigError(labelOf('configFile'), raw, `a readable file of NAME=value lines (${(err as Error).message})`));
      return undefined;
    }
    const scanned = scanConfigFile(text, path);
    problems.push(...scanned.problems);
    return { path, ...scanned };
  })();

  /** A setting's text from its flag, its environment name, its deprecated name, or the file, in that order. */
  const given = (key: SettingKey): string | undefined => {
    const spec = specOf(key);
    const text = flags.get(key) ?? env[spec.env];
    if (text !== undefined) return text;
    const old = spec.deprecatedEnv === undefined ? undefined : env[spec.deprecatedEnv];
    if (old !== undefined) {
      deprecated.add(spec.deprecatedEnv!);
      return old;
    }
    const oldInFile = file?.deprecated.get(key);
    if (oldInFile !== undefined) deprecated.add(oldInFile);
    return file?.values.get(key);
  };

  /** The value of a setting, read once; a setting the command does not take has its default. */
  const value = (key: SettingKey): unknown => {
    if (values.has(key)) return values.get(key);
    if (refused.has(key)) throw new DependencyRefused();
    const spec = specOf(key);
    const fromSources = takes(command, key) ? given(key) : undefined;
    const other = (name: string) => value(name as SettingKey);
    let raw = '';
    try {
      raw = fromSources ?? (typeof spec.default === 'function' ? spec.default(other, command) : spec.default);
      const fail = (allowed: string): never => {
        throw new ConfigError(labelOf(key), raw, allowed);
      };
      const parsed = key === 'configFile' ? file?.path : spec.parse(raw, { cwd, fail });
      spec.relation?.(parsed, other, fail);
      values.set(key, parsed);
      return parsed;
    } catch (err) {
      refused.add(key);
      if (err instanceof ConfigError) problems.push(err);
      else if (!(err instanceof DependencyRefused)) throw err;
      throw new DependencyRefused();
    }
  };

  const wanted = SETTING_KEYS.filter((key) => command === 'start' || command === 'dev' || command === 'check' || takes(command, key));
  const config: Record<string, unknown> = {};
  for (const key of wanted) {
    try {
      config[key] = value(key);
    } catch (err) {
      if (!(err instanceof DependencyRefused)) throw err;
    }
  }
  throwProblems(problems);
  if (deprecated.size > 0) onDeprecated?.(deprecationLine([...deprecated]));
  return Object.freeze(config) as ConfigOf<C>;
}

/** The settings one process uses, from a configuration holding them (what the launcher hands a child). */
export function sliceFor<R extends Role>(role: R, config: Partial<Config>): R extends 'proxy' ? ProxyConfig : HostConfig {
  const slice = Object.fromEntries(SETTING_KEYS.filter((key) => specOf(key).roles.includes(role)).map((key) => [key, config[key]]));
  return Object.freeze(slice) as unknown as R extends 'proxy' ? ProxyConfig : HostConfig;
}

export function logSettingsOf(config: LogSettings): LogSettings {
  return Object.fromEntries(LOG_KEYS.map((key) => [key, config[key]])) as unknown as LogSettings;
}

/** A setting's value as its flag would be written: `none` for a setting not given (no --tls-cert). */
export function flagValue(key: SettingKey, value: unknown): string {
  if (value === undefined) return 'none';
  const format = specOf(key).format;
  return format ? format(value) : JSON.stringify(value);
}

/** One setting's value from its text, checked as a flag would be (its relations to others aside). */
export function parseSetting<K extends SettingKey>(key: K, raw: string, cwd = process.cwd()): Config[K] {
  const fail = (allowed: string): never => {
    throw new ConfigError(labelOf(key), raw, allowed);
  };
  return specOf(key).parse(raw, { cwd, fail }) as Config[K];
}

/** The settings a process runs with, as flags an operator could type: its start-up line in the log. */
export function describeSettings(config: Partial<Config>): string {
  return SETTING_KEYS.filter((key) => key in config)
    .map((key) => `--${specOf(key).flag} ${flagValue(key, config[key])}`)
    .join(' ');
}

type ProcessManagerKeys = 'pm' | 'workers' | 'startWorkers' | 'minSpareWorkers' | 'maxSpareWorkers' | 'workerIdleTimeout' | 'listenBacklog';

/** The host's process manager settings that apply in its mode (`--pm "dynamic" --workers 4 --start-workers 2 …`). */
export function describeProcessManager(config: Pick<Config, ProcessManagerKeys>): string {
  const { pm, workers, startWorkers, minSpareWorkers, maxSpareWorkers, workerIdleTimeout, listenBacklog } = config;
  if (pm === 'dynamic') return describeSettings({ pm, workers, startWorkers, minSpareWorkers, maxSpareWorkers, listenBacklog });
  if (pm === 'ondemand') return describeSettings({ pm, workers, workerIdleTimeout, listenBacklog });
  return describeSettings({ pm, workers, listenBacklog });
}
