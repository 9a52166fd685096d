// Reading the configuration: for one command, each setting it takes comes from its flag, else its
// environment name, else the --config file, else its default (common/settings.ts declares them all).
// Every bad value is reported, each naming the setting, the value and what is allowed; the result is
// frozen. A flag the command does not take is refused, naming the commands that do.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, ConfigErrors, UsageError } from './configError.ts';
import {
  labelOf,
  LIVE_KEYS,
  LOG_KEYS,
  SETTING_KEYS,
  specOf,
  type Config,
  type HostConfig,
  type LiveSettings,
  type LogSettings,
  type ProxyConfig,
  type Role,
  type SettingKey,
} from './settings.ts';

export type { Config, HostConfig, LiveSettings, LogSettings, ProxyConfig, Role, SettingKey } from './settings.ts';

/** The commands of `extqs`: both processes, one of them, both for a developer, or a check of what would run. */
export const COMMANDS = ['start', 'proxy', 'host', 'dev', 'check'] as const;
export type Command = (typeof COMMANDS)[number];

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

/** The environment names the configuration reads (and the --config file may set). */
const CONFIG_ENV_NAMES: readonly string[] = [...KEY_BY_ENV.keys()];

/**
 * The settings file: `NAME=value` lines with the environment names (`LOG_LEVEL=debug`), `#` comments
 * and blank lines. A name of a setting the command does not take is allowed (one file may serve the
 * proxy and the host) and ignored.
 */
export function parseConfigFile(text: string, file: string): Map<SettingKey, string> {
  const values = new Map<SettingKey, string>();
  const allowed = CONFIG_ENV_NAMES.filter((name) => name !== specOf('configFile').env);
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const match = /^([A-Z_][A-Z0-9_]*)\s*=\s*(.*)$/.exec(line);
    const where = `${file}:${index + 1}`;
    if (!match) throw new ConfigError(where, line, 'NAME=value');
    const key = KEY_BY_ENV.get(match[1]);
    if (key === undefined || key === 'configFile') throw new ConfigError(where, match[1], `one of ${allowed.join(', ')}`);
    values.set(key, match[2].replace(/^"(.*)"$/, '$1'));
  });
  return values;
}

/** The flags given, by setting; a repeatable flag's values joined as its environment variable lists them. */
function flagsOf(command: Command, argv: readonly string[]): Map<SettingKey, string> {
  const options = Object.fromEntries(
    SETTING_KEYS.map((key) => [specOf(key).flag, { type: 'string' as const, multiple: specOf(key).repeatable === true }]),
  );
  let parsed: Record<string, string | string[] | undefined>;
  try {
    parsed = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false }).values;
  } catch (err) {
    throw new UsageError(`${(err as Error).message}; see extqs ${command} --help`);
  }
  const given = new Map<SettingKey, string>();
  for (const [flag, value] of Object.entries(parsed)) {
    const key = KEY_BY_FLAG.get(flag);
    if (key === undefined || value === undefined) continue;
    if (!takes(command, key)) {
      const reason = command === 'start' || command === 'dev' ? `: ${specOf(key).setByLauncher}` : '';
      throw new UsageError(`--${flag} is not an option of extqs ${command}${reason}; it is taken by ${commandsTaking(key).join(', ')}`);
    }
    given.set(key, Array.isArray(value) ? value.join(',') : value);
  }
  return given;
}

/** A dependency of a setting was refused already: the dependent one is not reported again. */
class DependencyRefused extends Error {}

/**
 * Reads the configuration of `command`. Throws UsageError for a flag the command does not take, and
 * ConfigError (one bad value) or ConfigErrors (several) for bad values.
 */
export function readConfig<C extends Command>(
  command: C,
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  cwd = process.cwd(),
): ConfigOf<C> {
  const flags = flagsOf(command, argv);
  const problems: ConfigError[] = [];
  const values = new Map<SettingKey, unknown>();
  const refused = new Set<SettingKey>();

  const file = ((): { path: string; values: Map<SettingKey, string> } | undefined => {
    const raw = flags.get('configFile') ?? env[specOf('configFile').env] ?? '';
    if (raw === '') return undefined;
    const path = resolve(cwd, raw);
    try {
      return { path, values: parseConfigFile(readFileSync(path, 'utf8'), path) };
    } catch (err) {
      problems.push(
        err instanceof ConfigError
          ? err
          : new ConfigError(labelOf('configFile'), raw, `a readable file of NAME=value lines (${(err as Error).message})`),
      );
      return undefined;
    }
  })();

  /** The value of a setting, read once; a setting the command does not take has its default. */
  const value = (key: SettingKey): unknown => {
    if (values.has(key)) return values.get(key);
    if (refused.has(key)) throw new DependencyRefused();
    const spec = specOf(key);
    const fromSources = takes(command, key) ? (flags.get(key) ?? env[spec.env] ?? file?.values.get(key)) : undefined;
    const other = (name: string) => value(name as SettingKey);
    let raw = '';
    try {
      raw = fromSources ?? (typeof spec.default === 'function' ? spec.default(other) : spec.default);
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
  if (problems.length === 1) throw problems[0];
  if (problems.length > 1) throw new ConfigErrors(problems);
  return Object.freeze(config) as ConfigOf<C>;
}

/** The settings one process uses, from a configuration holding them (what the launcher hands a child). */
export function sliceFor<R extends Role>(role: R, config: Partial<Config>): R extends 'proxy' ? ProxyConfig : HostConfig {
  const slice = Object.fromEntries(SETTING_KEYS.filter((key) => specOf(key).roles.includes(role)).map((key) => [key, config[key]]));
  return Object.freeze(slice) as unknown as R extends 'proxy' ? ProxyConfig : HostConfig;
}

/** The live settings a configuration holds (a host's has no --compression): what a SIGHUP replaces. */
export function liveSettingsOf(config: Partial<Config>): Partial<LiveSettings> {
  return Object.fromEntries(LIVE_KEYS.filter((key) => key in config).map((key) => [key, config[key]]));
}

export function logSettingsOf(config: LogSettings): LogSettings {
  return Object.fromEntries(LOG_KEYS.map((key) => [key, config[key]])) as unknown as LogSettings;
}

function shown(key: SettingKey, value: unknown): string {
  const format = specOf(key).format;
  return format ? format(value) : String(JSON.stringify(value));
}

/** What a configuration read again (SIGHUP) changes, by flag: live settings are applied, the others need a restart. */
export function configChanges(running: Partial<Config>, fresh: Partial<Config>): { live: string[]; restart: string[] } {
  const live: string[] = [];
  const restart: string[] = [];
  for (const key of SETTING_KEYS) {
    if (!(key in running) || !(key in fresh)) continue;
    const before = shown(key, running[key]);
    const after = shown(key, fresh[key]);
    if (before === after) continue;
    (specOf(key).live ? live : restart).push(`--${specOf(key).flag} ${before} -> ${after}`);
  }
  return { live, restart };
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
    .map((key) => `--${specOf(key).flag} ${shown(key, config[key])}`)
    .join(' ');
}
