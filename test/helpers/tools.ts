// Real tools a test drives (.ci/run installs them): a machine without one skips the test, CI fails it, since a
// skip there would let the run pass with the check never made.
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { Context } from 'mocha';

/** Where `tool` is on PATH, if it is. */
export function onPath(tool: string): string | undefined {
  return (process.env.PATH ?? '')
    .split(delimiter)
    .map((dir) => join(dir, tool))
    .find((path) => existsSync(path));
}

/** The path of `tool`; without it the test fails under CI and is skipped elsewhere. */
export function requireTool(test: Context, tool: string): string {
  const path = onPath(tool);
  if (path !== undefined) return path;
  if (process.env.CI) throw new Error(`${tool} is not on PATH; .ci/run should have installed it`);
  return test.skip();
}
