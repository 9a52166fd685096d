// `extqs dev`'s type check, in a thread of the launcher (launcher/devTypes.ts starts it): TypeScript's
// watch program over the controllers and helpers, rebuilt incrementally on each save (only what the save
// affects is checked again), with the options of `extqs check`. Serving never waits for it: the host and
// the proxy are other processes. After each check, what changed goes on the terminal once (new errors with
// their code frame, then what was fixed), and every error into the file the host's error page reads.
import { readdir } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { workerData } from 'node:worker_threads';
import { watch } from 'chokidar';
import type TS from 'typescript';
import { codeFrame, terminalLine, type TerminalEntry } from '../common/terminal.ts';
import { typeErrorText, writeTypeErrors, type TypeError } from '../common/typeErrors.ts';
import { CONTROLLER_NAME } from '../common/controllerName.ts';
import { checkOptions, formatDiagnostic, helperFiles } from './typeCheck.ts';

export interface TypeWatchData {
  www: string;
  /** Where the errors go after each check (common/typeErrors.ts). */
  reportFile: string;
  colour: boolean;
}

const { www, reportFile, colour } = workerData as TypeWatchData;
const controllersDir = join(www, 'controllers');
const say = (level: TerminalEntry['level'], message: string, frame = '') =>
  process.stderr.write(`${terminalLine({ time: new Date(), level, source: 'types', message }, colour)}\n${frame ? `${frame}\n` : ''}`);

/** The files a check covers: every top-level controller, and every helper, imported yet or not (as `extqs check`). */
async function rootFiles(): Promise<string[]> {
  const controllers = (await readdir(controllersDir, { withFileTypes: true }))
    .filter((entry) => entry.isFile() && /^\.(ts|js)$/.test(extname(entry.name)) && CONTROLLER_NAME.test(entry.name.slice(0, -3)))
    .map((entry) => join(controllersDir, entry.name));
  return [...controllers.sort(), ...(await helperFiles(controllersDir))];
}

/** The error, and its frame for the terminal (coloured when it is), both from the text TypeScript checked. */
function toTypeError(ts: typeof TS, diagnostic: TS.Diagnostic): { error: TypeError; terminalFrame: string } {
  const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n').replaceAll('\n', '\n    ');
  if (diagnostic.file === undefined || diagnostic.start === undefined) {
    return { error: { file: '', line: 0, column: 0, message, frame: '' }, terminalFrame: '' };
  }
  const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
  const at = { file: diagnostic.file.fileName, line: line + 1, column: character + 1, message };
  return {
    error: { ...at, frame: codeFrame(diagnostic.file.text, at.line, at.column) },
    terminalFrame: codeFrame(diagnostic.file.text, at.line, at.column, colour),
  };
}

const ts = (await import('typescript')).default;
const { checker, options, errors: configErrors } = checkOptions(ts, www);
if (options === undefined) {
  for (const d of configErrors) say('error', formatDiagnostic(ts, d));
} else {
  /** The errors on the terminal now, as `file:line:column message`. */
  let shown = new Set<string>();
  let first = true;
  const report = (builder: TS.SemanticDiagnosticsBuilderProgram) => {
    // A file that does not parse is the host's to report (its load fails), not again as TypeScript's.
    const unparsed = new Set(builder.getSyntacticDiagnostics().flatMap((d) => (d.file ? [d.file.fileName] : [])));
    const diagnostics = [
      ...configErrors,
      ...builder.getOptionsDiagnostics(),
      ...builder.getGlobalDiagnostics(),
      ...builder.getSemanticDiagnostics(),
    ];
    const found = diagnostics
      .filter((d) => d.category === ts.DiagnosticCategory.Error && !(d.file && unparsed.has(d.file.fileName)))
      .map((d) => toTypeError(ts, d));
    const errors = found.map(({ error }) => error);
    writeTypeErrors(reportFile, errors);
    const now = new Set(errors.map(typeErrorText));
    const fixed = [...shown].filter((text) => !now.has(text)).length;
    for (const { error, terminalFrame } of found) {
      if (!shown.has(typeErrorText(error))) say('error', error.file ? typeErrorText(error) : error.message, terminalFrame);
    }
    const count = `${errors.length} type error${errors.length === 1 ? '' : 's'}`;
    if (first) say(errors.length === 0 ? 'info' : 'warn', `${count} (${checker}); checked again on every save`);
    else if (fixed > 0) say(errors.length === 0 ? 'info' : 'warn', `${fixed} fixed, ${errors.length === 0 ? 'no type error' : count} left`);
    first = false;
    shown = now;
  };

  const host = ts.createWatchCompilerHost(
    await rootFiles(),
    options,
    ts.sys,
    ts.createSemanticDiagnosticsBuilderProgram,
    () => {},
    () => {},
  );
  host.afterProgramCreate = report;
  const program = ts.createWatchProgram(host);
  // The watch program follows the files it has; a controller or helper added or removed changes the roots.
  const roots = watch(controllersDir, { ignoreInitial: true, ignored: (path) => path.includes('node_modules') });
  const rescan = () =>
    void rootFiles()
      .then((files) => program.updateRootFileNames(files))
      .catch((err: Error) => say('error', `could not list ${controllersDir}: ${err.message}`));
  roots.on('add', rescan).on('unlink', rescan).on('addDir', rescan).on('unlinkDir', rescan);
}
