// Turns a controller's source into its handler: esbuild transpiles TypeScript to CommonJS, then
// vm.Script runs it with its own require/module. Nothing is registered in a module cache, so when
// the registry drops a version, the garbage collector frees it; import(url + '?v=n') and
// require.cache tricks keep every version alive for the life of the process.
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import vm from 'node:vm';
import { transform } from 'esbuild';
import type { Controller } from '../common/controller.ts';
import { ControllerLoadError } from './errors.ts';

export interface CompiledController {
  handler: Controller;
  /** Called when this version is replaced or removed (a controller's optional `dispose` export). */
  dispose: (() => unknown) | undefined;
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
  try {
    const result = await transform(source, {
      loader: file.endsWith('.ts') ? 'ts' : 'js',
      format: 'cjs',
      platform: 'node',
      target: 'node20',
      sourcefile: file,
      sourcemap: 'inline',
    });
    code = result.code;
  } catch (err) {
    throw new ControllerLoadError(`Parse error in controller script ${describeTransformError(file, err)}`, file, { cause: err });
  }

  const module = { exports: {} as Record<string, unknown> };
  try {
    const wrapper = new vm.Script(`(function (exports, require, module, __filename, __dirname) {${code}\n})`, {
      filename: file,
    });
    const init = wrapper.runInThisContext() as (...args: unknown[]) => void;
    init(module.exports, createRequire(file), module, file, dirname(file));
  } catch (err) {
    const reason = err instanceof Error ? err.stack ?? err.message : String(err);
    throw new ControllerLoadError(`Controller script ${file} threw while loading: ${reason}`, file, { cause: err });
  }

  const exported = module.exports;
  const handler = typeof exported === 'function' ? exported : exported.default;
  if (typeof handler !== 'function') {
    throw new ControllerLoadError(`Controller script ${file} has no default export function`, file);
  }
  const dispose = typeof exported.dispose === 'function' ? (exported.dispose as () => unknown) : undefined;
  return { handler: handler as Controller, dispose };
}
