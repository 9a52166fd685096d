// Turns a controller's source into its handler: esbuild transpiles TypeScript to CommonJS, then
// vm.Script runs it with its own require/module. Nothing is registered in a module cache, so when
// the registry drops a version, the garbage collector frees it; import(url + '?v=n') and
// require.cache tricks keep every version alive for the life of the process.
import { createRequire, SourceMap, type SourceMapPayload } from 'node:module';
import { dirname } from 'node:path';
import vm from 'node:vm';
import type { Controller } from '../common/controller.ts';
import { ControllerLoadError } from './errors.ts';

export interface CompiledController {
  handler: Controller;
  /** Rewrites `file:line:column` in a stack from the transpiled code to the controller's own source. */
  mapStack: (stack: string) => string;
  /** Called when this version is replaced or removed (a controller's optional `dispose` export). */
  dispose: (() => unknown) | undefined;
}

/** The CommonJS wrapper the transpiled code runs in; it shares line 1 with the code. */
const WRAPPER_HEAD = '(function (exports, require, module, __filename, __dirname) {';

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Node applies no source map to vm.Script code, even with --enable-source-maps (tried on 20.20), so stacks
 * are mapped here with Node's own SourceMap class and the map esbuild made.
 */
function stackMapper(file: string, map: string): (stack: string) => string {
  let sourceMap: SourceMap | undefined;
  const frame = new RegExp(`${escapeRegExp(file)}:(\\d+):(\\d+)`, 'g');
  return (stack) =>
    stack.replace(frame, (whole, line: string, column: string) => {
      sourceMap ??= new SourceMap(JSON.parse(map) as SourceMapPayload);
      const lineIndex = Number(line) - 1;
      const columnIndex = Number(column) - 1 - (lineIndex === 0 ? WRAPPER_HEAD.length : 0);
      const entry = sourceMap.findEntry(lineIndex, Math.max(columnIndex, 0)) as { originalLine?: number; originalColumn?: number };
      return entry.originalLine === undefined ? whole : `${file}:${entry.originalLine + 1}:${(entry.originalColumn ?? 0) + 1}`;
    });
}

/** esbuild's first error as `file:line:column: text`. */
function describeTransformError(file: string, err: unknown): string {
  const first = (err as { errors?: { text: string; location?: { line: number; column: number } }[] }).errors?.[0];
  if (!first) return `${file}: ${(err as Error).message}`;
  const where = first.location ? `${file}:${first.location.line}:${first.location.column + 1}` : file;
  return `${where}: ${first.text}`;
}

export async function compileController(file: string, source: string): Promise<CompiledController> {
  let code: string;
  let map: string;
  try {
    // Loaded with the first controller: a host with none (the default install) keeps its 10 MB.
    const { transform } = await import('esbuild');
    const result = await transform(source, {
      loader: file.endsWith('.ts') ? 'ts' : 'js',
      format: 'cjs',
      platform: 'node',
      target: 'node20',
      sourcefile: file,
      sourcemap: 'external',
    });
    code = result.code;
    map = result.map;
  } catch (err) {
    throw new ControllerLoadError(`Parse error in controller script ${describeTransformError(file, err)}`, file, { cause: err });
  }

  const mapStack = stackMapper(file, map);
  const module = { exports: {} as Record<string, unknown> };
  try {
    const wrapper = new vm.Script(`${WRAPPER_HEAD}${code}\n})`, {
      filename: file,
    });
    const init = wrapper.runInThisContext() as (...args: unknown[]) => void;
    init(module.exports, createRequire(file), module, file, dirname(file));
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
  return { handler: handler as Controller, mapStack, dispose };
}
