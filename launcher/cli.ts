// The `extqs` command: `start`, `proxy`, `host`, `dev` and `check`, each with --help, and --version. The
// settings each command takes are read here, once; a bad one stops with exit status 2.
import { COMMANDS, type Command } from '../common/commands.ts';
import { readConfig } from '../common/config.ts';
import { UsageError } from '../common/configError.ts';
import { VERSION } from '../common/version.ts';
import { reloadOnSighup } from '../common/reload.ts';
import { commandHelp, mainHelp } from './help.ts';
import { exitWith, runRole } from './roles.ts';
import { DEV_DEFAULTS, start } from './start.ts';

function isCommand(word: string | undefined): word is Command {
  return (COMMANDS as readonly (string | undefined)[]).includes(word);
}

/** The deprecation line, once at start (the children of `extqs start` get their settings from it, not the environment). */
const warn = (line: string) => process.stderr.write(`${line}\n`);

async function main(args: string[]): Promise<void> {
  const [word, ...argv] = args;
  if (word === undefined) {
    // No command is a mistake, not a request for help: a script that forgot its command must not succeed.
    process.stderr.write(mainHelp());
    throw new UsageError(`a command is required: ${COMMANDS.join(', ')}`);
  }
  if (word === '--help' || word === '-h' || word === 'help') {
    process.stdout.write(mainHelp());
    return;
  }
  if (word === '--version' || word === '-v' || word === 'version') {
    process.stdout.write(`extqs ${VERSION} (Node.js ${process.version})\n`);
    return;
  }
  if (!isCommand(word)) {
    process.stderr.write(mainHelp());
    throw new UsageError(`unknown command ${JSON.stringify(word)}; the commands are ${COMMANDS.join(', ')}`);
  }
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(commandHelp(word));
    return;
  }
  if (word === 'check') {
    // Loaded here only: it brings esbuild, 10 MB of the launcher's resident memory otherwise.
    const { check } = await import('./check.ts');
    const lines: string[] = [];
    const status = await check(readConfig('check', argv, process.env, process.cwd(), warn), (line) => lines.push(line));
    process.stdout.write(`${lines.join('\n')}\n`);
    // A controller's module body may have left timers or sockets open: the check is over all the same.
    process.exit(status);
  }
  if (word === 'start') {
    await start(argv, readConfig('start', argv, process.env, process.cwd(), warn));
    return;
  }
  if (word === 'dev') {
    const devArgv = [...DEV_DEFAULTS, ...argv];
    await start(devArgv, readConfig('dev', devArgv, process.env, process.cwd(), warn), true);
    return;
  }
  const config = readConfig(word, argv, process.env, process.cwd(), warn);
  await runRole(word, config, reloadOnSighup(word, argv, config));
}

const args = process.argv.slice(2);
main(args).catch((err: unknown) => exitWith(isCommand(args[0]) ? args[0] : '', err));
