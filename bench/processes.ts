// The bench's own processes: the built `extqs` command in a scratch tree, ready when it prints its ready
// line. (The test suites have richer helpers; the bench does not depend on them.)
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseReadyLine } from '../common/ready.ts';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface BenchTree {
  dir: string;
  www: string;
  logs: string;
  controllers: string;
  publicDir: string;
  remove(): void;
}

/** A temp directory with an empty www/public, www/controllers and logs/. */
export function makeBenchTree(): BenchTree {
  const dir = mkdtempSync(join(tmpdir(), 'extqs-bench-'));
  const www = join(dir, 'www');
  const tree = { dir, www, logs: join(dir, 'logs'), controllers: join(www, 'controllers'), publicDir: join(www, 'public') };
  for (const d of [tree.controllers, tree.publicDir, tree.logs]) mkdirSync(d, { recursive: true });
  return { ...tree, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export interface Running {
  child: ChildProcess;
  url: string;
  stop(): Promise<void>;
}

/** `extqs <command> <args>` from build/, resolved at its ready line. */
export function startCommand(command: 'proxy' | 'host', args: string[]): Promise<Running> {
  const child = spawn(process.execPath, [join(ROOT, 'bin/extqs.js'), command, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = once(child, 'exit');
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const url = parseReadyLine(line);
      if (url === undefined) return;
      resolve({
        child,
        url,
        async stop() {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
          await exited;
        },
      });
    });
    void exited.then(([code, signal]) => reject(new Error(`extqs ${command} exited with ${code ?? signal} before its ready line`)));
  });
}
