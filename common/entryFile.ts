// The file of a sibling module, with this build's extension: `.js` when running the compiled build,
// `.ts` when running the sources (tests and development, under tsx). For what is started by path: a
// child process, a cluster worker, a worker thread.
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';

export function siblingFile(moduleUrl: string, name: string): string {
  return fileURLToPath(new URL(`./${name}${extname(fileURLToPath(moduleUrl))}`, moduleUrl));
}

/** Whether `moduleUrl` is a TypeScript source (the process runs under tsx). */
export function runsFromSource(moduleUrl: string): boolean {
  return moduleUrl.endsWith('.ts');
}
