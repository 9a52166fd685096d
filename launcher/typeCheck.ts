// `extqs check`'s type check, and the options and files of `extqs dev`'s (launcher/typeWatch.ts): the
// TypeScript compiler over the controllers that load and the helpers beside them, with the options editors
// use (www/tsconfig.json, else the built-in tsconfig.controllers.json). Only those two import this module,
// and `check` imports `typescript` only when there is something to check: `extqs start` never loads the compiler.
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type TS from 'typescript';
import { OWN_PACKAGE } from '../common/ownPackage.ts';

type TypeScript = typeof TS;

export interface TypeCheckResult {
  /** What checked, with which options, e.g. `TypeScript 5.9.3, options of /srv/www/tsconfig.json`. */
  checker: string;
  /** One `file:line:column message` per error (a message of several lines indents the rest). */
  errors: string[];
  /** How many of those errors are in each file, by the file's path as given in `files`. */
  errorsByFile: Map<string, number>;
}

/** A diagnostic as `file:line:column message`, as tsc and esbuild place it; without a file, the message. */
export function formatDiagnostic(ts: TypeScript, diagnostic: TS.Diagnostic): string {
  const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n').replaceAll('\n', '\n    ');
  if (diagnostic.file === undefined || diagnostic.start === undefined) return message;
  const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
  return `${diagnostic.file.fileName}:${line + 1}:${character + 1} ${message}`;
}

/** The controller contract as this extqs declares it: the `types` of package.json's `exports['.']`. */
function contractTypes(): string | undefined {
  const types = OWN_PACKAGE?.exports?.['.']?.types;
  return OWN_PACKAGE && types ? join(OWN_PACKAGE.root, types) : undefined;
}

/** Folders under controllers/ that hold helpers the controllers import, not routes: `lib` and `_<anything>`. */
const isHelperFolder = (name: string) => name === 'lib' || name.startsWith('_');

/** The .ts and .js files in the helper folders, at any depth: type-checked even when no controller imports them yet. */
export async function helperFiles(dir: string): Promise<string[]> {
  const folders = (await readdir(dir, { withFileTypes: true })).filter((entry) => entry.isDirectory() && isHelperFolder(entry.name));
  const files: string[] = [];
  for (const folder of folders) {
    const entries = await readdir(join(dir, folder.name), { withFileTypes: true, recursive: true });
    for (const entry of entries) {
      if (entry.isFile() && /\.(ts|js)$/.test(entry.name)) files.push(join(entry.parentPath, entry.name));
    }
  }
  return files.sort();
}

export interface CheckOptions {
  /** What checks, with which options, e.g. `TypeScript 5.9.3, options of /srv/www/tsconfig.json`. */
  checker: string;
  /** undefined when the options file cannot be read: `errors` says why. */
  options: TS.CompilerOptions | undefined;
  /** What is wrong with the options file. */
  errors: TS.Diagnostic[];
}

/**
 * The options to check controllers with: those of `<www>/tsconfig.json` when there is one (what an editor
 * opening the controllers uses), else the package's own tsconfig.controllers.json. Whatever the file says,
 * nothing is written (noEmit), `extqs` is the contract of the extqs running the check (the one the host
 * will call the controllers with), and this package's Node types are found after any of the www's own.
 */
export function checkOptions(ts: TypeScript, www: string): CheckOptions {
  const own = join(www, 'tsconfig.json');
  const builtIn = OWN_PACKAGE && join(OWN_PACKAGE.root, 'tsconfig.controllers.json');
  const configFile = existsSync(own) || builtIn === undefined ? own : builtIn;
  const checker = `TypeScript ${ts.version}, options of ${configFile}`;
  const read = ts.readConfigFile(configFile, (path) => ts.sys.readFile(path));
  if (read.error) return { checker, options: undefined, errors: [read.error] };

  const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, dirname(configFile), undefined, configFile);
  // The check lists its own files (the controllers and helpers), so what `include` finds does not matter.
  const errors = parsed.errors.filter((d) => d.code !== 18002 && d.code !== 18003);
  const contract = contractTypes();
  // Node's types are looked for above the options' file, then above this package, which depends on them:
  // a www outside the package has its own node_modules or none.
  const typeRoots = [parsed.options, { configFilePath: builtIn }].flatMap((o) => ts.getEffectiveTypeRoots(o, ts.sys) ?? []);
  const options: TS.CompilerOptions = {
    ...parsed.options,
    noEmit: true,
    typeRoots: [...new Set(typeRoots)],
    ...(contract ? { paths: { ...parsed.options.paths, extqs: [contract] } } : {}),
  };
  return { checker, options, errors };
}

/** Type-checks `files` (absolute paths) as one program, with checkOptions(). */
export async function typeCheck(www: string, files: string[]): Promise<TypeCheckResult> {
  // Imported here only: the compiler is 9 MB of JavaScript that no other command needs.
  const ts = (await import('typescript')).default;
  const { checker, options, errors: configErrors } = checkOptions(ts, www);
  if (options === undefined) return { checker, errors: configErrors.map((d) => formatDiagnostic(ts, d)), errorsByFile: new Map() };
  const program = ts.createProgram({ rootNames: files, options, configFileParsingDiagnostics: configErrors });
  // Sorted by file, then position; the configuration's errors included.
  const diagnostics = ts.getPreEmitDiagnostics(program).filter((d) => d.category === ts.DiagnosticCategory.Error);

  const errorsByFile = new Map<string, number>();
  for (const d of diagnostics) {
    if (d.file) errorsByFile.set(d.file.fileName, (errorsByFile.get(d.file.fileName) ?? 0) + 1);
  }
  // TypeScript names files with forward slashes; give the counts back under the paths the caller used.
  const byCallerPath = new Map(files.map((file) => [file, errorsByFile.get(file.replaceAll('\\', '/')) ?? 0]));
  return { checker, errors: diagnostics.map((d) => formatDiagnostic(ts, d)), errorsByFile: byCallerPath };
}
