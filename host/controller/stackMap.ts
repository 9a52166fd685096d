// Maps positions in a controller's bundle (host/controller/compile.ts runs it as one vm.Script named after the
// controller's file) back to the files it came from, the controller's or a helper's. Used on the worker's
// thread for error stacks, and on the watchdog thread for the slowlog's frames.
import { SourceMap, type SourceMapPayload } from 'node:module';
import { dirname, resolve } from 'node:path';

/** The CommonJS wrapper the transpiled code runs in; it shares line 1 with the code. */
export const WRAPPER_HEAD = '(function (exports, require, module, __filename, __dirname) {';

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Node applies no source map to vm.Script code, even with --enable-source-maps (tried on 20.20), so stacks
 * are mapped here with Node's own SourceMap class and the map esbuild made: each frame of the bundle
 * (named `file`) goes back to the file it came from, the controller's or a helper's.
 */
export function stackMapper(file: string, map: string): (stack: string) => string {
  let sourceMap: SourceMap | undefined;
  const frame = new RegExp(`${escapeRegExp(file)}:(\\d+):(\\d+)`, 'g');
  return (stack) =>
    stack.replace(frame, (whole, line: string, column: string) => {
      sourceMap ??= new SourceMap(JSON.parse(map) as SourceMapPayload);
      const lineIndex = Number(line) - 1;
      const columnIndex = Number(column) - 1 - (lineIndex === 0 ? WRAPPER_HEAD.length : 0);
      const entry = sourceMap.findEntry(lineIndex, Math.max(columnIndex, 0)) as {
        originalSource?: string;
        originalLine?: number;
        originalColumn?: number;
      };
      if (entry.originalLine === undefined) return whole;
      const source = entry.originalSource ? resolve(dirname(file), entry.originalSource) : file;
      return `${source}:${entry.originalLine + 1}:${(entry.originalColumn ?? 0) + 1}`;
    });
}
