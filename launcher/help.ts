// The text of `extqs --help` and `extqs <command> --help`, made from the commands' descriptions and
// the settings table, so no option is ever listed for a command that refuses it, or missing.
import { COMMANDS, type Command } from '../common/commands.ts';
import { takes } from '../common/config.ts';
import { SETTING_KEYS, specOf, type AnySetting, type SettingKey } from '../common/settings.ts';

const COMMAND_SUMMARIES: Readonly<Record<Command, string>> = {
  start: 'run the service: the host, then the proxy in front of it (what npm start runs)',
  proxy: 'run the proxy alone (web-server role), in front of the hosts given by --upstream',
  host: 'run the host alone (application role), for proxies on other machines or sockets',
  dev: "run the service on a developer's machine: start with one host worker, one proxy process, logs on the terminal",
  check: 'read the settings and www/, load and type-check every controller, print what would run and every problem',
};

const COMMAND_NOTES: Readonly<Record<Command, string>> = {
  start:
    'Prints "listening on http://ADDR:PORT" (then " https://ADDR:PORT" with --tls-cert) when the proxy is ready.\n' +
    'SIGTERM or SIGINT stops the proxy, then the host; SIGHUP reopens every log and applies the live settings read\n' +
    'again (log settings, the TLS certificate). The host listens on a private unix socket.',
  proxy:
    'Prints "listening on http://ADDR:PORT" (then " https://ADDR:PORT" with --tls-cert) when ready. SIGTERM or SIGINT\n' +
    'stops; SIGHUP reopens the logs and reads the settings again, the TLS certificate and key included.',
  host:
    'Prints "listening on unix:PATH" or "listening on http://ADDR:PORT" when ready. Serves /External/<Name> from\n' +
    'www/controllers, and /status and /ping to whoever reaches its socket: let only the proxies reach it.',
  dev:
    'As start, with --workers 1 --proxy-workers 1 --log-level debug unless given. Every error.log and host.log line\n' +
    "is also written to stderr (in colour on a terminal; NO_COLOR, FORCE_COLOR), a controller's failure once, with the\n" +
    'lines of its source. Controllers and helpers are type-checked in the background on every save, each error\n' +
    "printed once. A controller that throws or cannot be loaded is shown with its stack and its files' type errors\n" +
    'to loopback clients only.',
  check:
    'Takes every option of the other commands. Loads each controller as the host would (its module body runs once),\n' +
    'then type-checks those that load and the helpers in controllers/lib/ and controllers/_*/ with the TypeScript\n' +
    "compiler, with www/tsconfig.json's options if there is one: one line file:line:column message per error.\n" +
    'Exit status: 0 when nothing is wrong, 1 when a controller or directory has a problem, 2 for a bad setting.',
};

/**
 * The default as help shows it. One that follows another setting names it where the command takes
 * that setting, and shows the value it comes to where the command does not (there it is fixed).
 */
function defaultOf(command: Command, spec: AnySetting): string {
  if (typeof spec.default === 'string') return spec.defaultText ?? spec.default;
  const read: SettingKey[] = [];
  const computed = spec.default((key) => {
    read.push(key as SettingKey);
    const other = specOf(key as SettingKey).default;
    return typeof other === 'string' ? other : '';
  }, command);
  return read.every((key) => takes(command, key)) ? (spec.defaultText ?? computed) : computed;
}

function optionLines(command: Command): string[] {
  const rows = SETTING_KEYS.filter((key) => takes(command, key)).map((key) => {
    const spec = specOf(key);
    const repeat = spec.repeatable ? ' (repeatable; the variable lists the values with commas)' : '';
    return {
      flag: `--${spec.flag} ${spec.placeholder}`,
      where: `${spec.env}, default ${defaultOf(command, spec)}`,
      help: `${spec.help}${repeat}`,
    };
  });
  const width = Math.max(...rows.map((row) => row.flag.length));
  return rows.flatMap(({ flag, where, help }) => [`  ${flag.padEnd(width)}  ${where}`, `      ${help}`]);
}

const capitalized = (text: string) => `${text[0].toUpperCase()}${text.slice(1)}`;

export function commandHelp(command: Command): string {
  return [
    `usage: extqs ${command} [options]`,
    '',
    `${capitalized(COMMAND_SUMMARIES[command])}.`,
    COMMAND_NOTES[command],
    '',
    'Options, with the environment variable that sets each when the flag is absent (then the --config file):',
    ...optionLines(command),
    '  --help, -h  this text',
    '',
  ].join('\n');
}

export function mainHelp(): string {
  const width = Math.max(...COMMANDS.map((command) => command.length));
  return [
    'usage: extqs <command> [options]',
    '',
    'The External Query Service: an Apache-like front proxy and a hot-reloading controller host.',
    '',
    'Commands:',
    ...COMMANDS.map((command) => `  ${command.padEnd(width)}  ${COMMAND_SUMMARIES[command]}`),
    '',
    '`extqs <command> --help` lists the options of a command; `extqs --version` prints the version.',
    '',
  ].join('\n');
}
