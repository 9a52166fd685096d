// Turns a controller's source into its handler: esbuild bundles it with the local modules it imports
// (files under www/controllers; packages stay `require`s resolved from the controller's folder) into one
// CommonJS script, then vm.Script runs it with its own require/module. Nothing is registered in a module
// cache, so when the registry drops a version, the garbage collector frees it, helpers included;
// import(url + '?v=n') and require.cache tricks keep every version alive for the life of the process.
import { realpathSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, extname, isAbsolute, relative, resolve, sep } from 'node:path';
import vm from 'node:vm';
import type { Loader, Plugin } from 'esbuild';
import type { Controller } from '../../common/controller.ts';
import { loadOutsideAnyCall } from './controllerCall.ts';
import { ControllerLoadError } from './errors.ts';
import { withEsbuild } from './esbuildService.ts';
import { stackMapper, WRAPPER_HEAD } from './stackMap.ts';

export interface CompiledController {
  handler: Controller;
  /** Rewrites `file:line:column` in a stack from the transpiled code to the controller's own source. */
  mapStack: (stack: string) => string;
  /** esbuild's source map of the bundle, for the watchdog thread's own mapper (host/worker/slowlog.ts). */
  sourceMap: string;
  /** Called when this version is replaced or removed (a controller's optional `dispose` export). */
  dispose: (() => unknown) | undefined;
  /** The local modules bundled in, absolute paths, the controller's own file not included. */
  dependencies: string[];
  /** What esbuild read of each local module it loaded itself: the version is the hash of what was built. */
  dependencySources: ReadonlyMap<string, string>;
}

/** esbuild's first error as `file:line:column: text`, the file being the controller or the helper at fault. */
function describeBuildError(file: string, err: unknown): string {
  const first = (err as { errors?: { text: string; location?: { file: string; line: number; column: number } | null }[] }).errors?.[0];
  if (!first) return `${file}: ${(err as Error).message}`;
  const at = first.location;
  return at ? `${resolve(dirname(file), at.file)}:${at.line}:${at.column + 1}: ${first.text}` : `${file}: ${first.text}`;
}

const LOADERS: Readonly<Record<string, Loader>> = {
  '.ts': 'ts',
  '.mts': 'ts',
  '.cts': 'ts',
  '.tsx': 'tsx',
  '.js': 'js',
  '.mjs': 'js',
  '.cjs': 'js',
  '.jsx': 'jsx',
  '.json': 'json',
};

/**
 * Loads each local module as esbuild would and keeps its text in `into`: a save landing between the build
 * and a later read would otherwise give the version the hash of code that was not built.
 */
function recordSources(into: Map<string, string>): Plugin {
  return {
    name: 'extqs-record-sources',
    setup(build) {
      build.onLoad({ filter: /\.[cm]?[jt]sx?$|\.json$/ }, async ({ path, namespace }) => {
        const loader = LOADERS[extname(path)];
        if (namespace !== 'file' || !loader) return undefined;
        const contents = await readFile(path, 'utf8');
        into.set(path, contents);
        return { contents, loader };
      });
    },
  };
}

/** Whether `path` lies inside `dir` (both absolute). */
function isInside(dir: string, path: string): boolean {
  const rel = relative(dir, path);
  return rel !== '' && !rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel);
}

/**
 * `source` is `file`'s content as the registry read it (its version); the local modules it imports are
 * read by esbuild. Every one of them must lie under `root` (www/controllers).
 */
export async function compileController(file: string, source: string, root = dirname(file)): Promise<CompiledController> {
  let code: string;
  let map: string;
  let inputs: string[];
  const dependencySources = new Map<string, string>();
  try {
    const result = await withEsbuild(({ build }) =>
      build({
        stdin: { contents: source, sourcefile: file, resolveDir: dirname(file), loader: file.endsWith('.ts') ? 'ts' : 'js' },
        bundle: true,
        packages: 'external',
        format: 'cjs',
        platform: 'node',
        target: 'node20',
        write: false,
        // Not written: it names the map's sources relative to the controller's folder.
        outfile: resolve(dirname(file), 'bundle.js'),
        absWorkingDir: dirname(file),
        sourcemap: 'external',
        sourcesContent: false,
        metafile: true,
        // A helper caught half-written (empty) by a save would bundle as "no such export", an undefined
        // that fails every request: as an error, the previous version keeps serving until the next event.
        logOverride: { 'import-is-undefined': 'error' },
        logLevel: 'silent',
        plugins: [recordSources(dependencySources)],
      }),
    );
    code = result.outputFiles.find((out) => out.path.endsWith('.js'))!.text;
    map = result.outputFiles.find((out) => out.path.endsWith('.map'))!.text;
    inputs = Object.keys(result.metafile.inputs).map((input) => resolve(dirname(file), input));
  } catch (err) {
    throw new ControllerLoadError(`Parse error in controller script ${describeBuildError(file, err)}`, file, { cause: err });
  }
  const dependencies = inputs.filter((input) => input !== file);
  // esbuild names each module by its real path (links resolved), so the root is compared as one too.
  const realRoot = realpathSync(root);
  const outside = dependencies.find((input) => !isInside(realRoot, input));
  if (outside) {
    throw new ControllerLoadError(
      `Controller script ${file} imports ${outside}, outside ${root}: a controller's local modules live under its folder (packages come from node_modules)`,
      file,
    );
  }

  const mapStack = stackMapper(file, map);
  const module = { exports: {} as Record<string, unknown> };
  try {
    const wrapper = new vm.Script(`${WRAPPER_HEAD}${code}\n})`, {
      filename: file,
    });
    const init = wrapper.runInThisContext() as (...args: unknown[]) => void;
    loadOutsideAnyCall(() => init(module.exports, createRequire(file), module, file, dirname(file)));
  } catch (err) {
    const reason = err instanceof Error ? mapStack(err.stack ?? err.message) : String(err);
    throw new ControllerLoadError(`Controller script ${file} threw while loading: ${reason}`, file, { cause: err });
  }

  const exported = module.exports;
  const handler = typeof exported === 'function' ? exported : exported.default;
  if (typeof handler !== 'function') {
    throw new ControllerLoadError(`Controller script ${file} has no default export function`, file);
  }
  const dispose = typeof exported.dispose === 'function' ? (exported.dispose as () => unknown) : undefined;
  return { handler: handler as Controller, mapStack, sourceMap: map, dispose, dependencies, dependencySources };
}
