// Test servers the way users run them: real processes on port 0 with temp www/ and logs/, readiness
// read from the process's own ready line, and every child killed and awaited in teardown.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseReadyUrls } from '../../common/ready.ts';
import type { Sandbox } from '../../tools/sandbox.ts';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const READY_TIMEOUT_MS = 30_000;

export { makeSandbox, type Sandbox } from '../../tools/sandbox.ts';

export interface Running {
  child: ChildProcess;
  /** The URL of the ready line. */
  url: string;
  /** The HTTPS listener's URL, when the ready line names one. */
  tlsUrl?: string;
  stdout(): string;
  stderr(): string;
  /** SIGTERM, then the exit code (signal name if killed). */
  stop(): Promise<number | string>;
}

/** Spawns `args` with node and resolves at its ready line; rejects with its stderr if it exits first. */
export function spawnReady(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Running> {
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (chunk) => (err += chunk));
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  const running = ([url, tlsUrl]: string[]): Running => ({
    child,
    url,
    tlsUrl,
    stdout: () => out,
    stderr: () => err,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const [code, signal] = await exited;
      return code ?? signal ?? -1;
    },
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no ready line within ${READY_TIMEOUT_MS} ms; stderr: ${err}`));
    }, READY_TIMEOUT_MS);
    createInterface({ input: child.stdout }).on('line', (line) => {
      out += `${line}\n`;
      const urls = parseReadyUrls(line);
      if (urls !== undefined) {
        clearTimeout(timer);
        resolve(running(urls));
      }
    });
    void exited.then(([code, signal]) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code ?? signal} before its ready line; stderr: ${err}`));
    });
  });
}

/** The real launcher, as `npm start` runs it, with `env` added to the test's environment. */
export function startStack(sandbox: Sandbox, extraArgs: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<Running> {
  return spawnReady(
    ['bin/extqs.js', 'start', '--port', '0', '--listen', '127.0.0.1', '--www', sandbox.www, '--logs', sandbox.logs, ...extraArgs],
    env,
  );
}

/** `extqs proxy` on its own for `sandbox`, on a free loopback port, with `args` (its --upstream among them). */
export function startProxy(sandbox: Sandbox, args: string[], env: NodeJS.ProcessEnv = {}): Promise<Running> {
  return startProcess('proxy', ['--port', '0', '--listen', '127.0.0.1', '--www', sandbox.www, '--logs', sandbox.logs, ...args], env);
}

/**
 * A host on loopback TCP with two workers and a proxy in front of it, which does not follow a TCP host's workers:
 * every request goes through the host primary's relay. Returned proxy first; a proxy that fails to start stops the host.
 */
export async function startTcpHostStack(sandbox: Sandbox): Promise<Running[]> {
  const host = await startProcess('host', ['--www', sandbox.www, '--logs', sandbox.logs, '--workers', '2', '--host-listen', '127.0.0.1']);
  try {
    return [await startProxy(sandbox, ['--upstream', host.url, '--proxy-workers', '1']), host];
  } catch (err) {
    await host.stop();
    throw err;
  }
}

/** One role on its own, as an operator runs it on a machine of its own: `extqs proxy …` or `extqs host …`. */
export function startProcess(command: 'proxy' | 'host', args: string[], env: NodeJS.ProcessEnv = {}): Promise<Running> {
  return spawnReady(['bin/extqs.js', command, ...args], env);
}

/** Every process under `pid`, depth first, from /proc (Linux). */
export function descendants(pid: number): number[] {
  const children = procText(pid, `task/${pid}/children`).trim().split(/\s+/).filter(Boolean).map(Number);
  return children.flatMap((child) => [child, ...descendants(child)]);
}

/** The extqs role a process runs, from its command line; 'exited' once it is gone. */
export function roleOf(pid: number): 'proxy worker' | 'host worker' | 'proxy' | 'host' | 'other' | 'exited' {
  const cmdline = procText(pid, 'cmdline').split('\0').join(' ');
  if (cmdline === '') return 'exited';
  if (cmdline.includes('proxy/roles/workerMain')) return 'proxy worker';
  if (cmdline.includes('host/worker/workerMain')) return 'host worker';
  if (/child\.js proxy\b/.test(cmdline)) return 'proxy';
  if (/child\.js host\b/.test(cmdline)) return 'host';
  return 'other';
}

/** A file of /proc/<pid>, empty once the process has exited: workers come and go while a test lists them. */
function procText(pid: number, file: string): string {
  try {
    return readFileSync(`/proc/${pid}/${file}`, 'utf8');
  } catch {
    return '';
  }
}

export function readLog(sandbox: Sandbox, file: 'access.log' | 'error.log' | 'host.log'): string[] {
  try {
    const text = readFileSync(join(sandbox.logs, file), 'utf8');
    // Only whole lines: a read can see part of a write still under way (a long line across a page).
    return text
      .slice(0, text.lastIndexOf('\n') + 1)
      .split('\n')
      .filter(Boolean);
  } catch {
    return [];
  }
}

/** host.log events: a line plus the indented continuation lines of a multi-line message (a stack). */
export function readHostEvents(sandbox: Sandbox): string[] {
  const events: string[] = [];
  for (const line of readLog(sandbox, 'host.log')) {
    if (line.startsWith('    ') && events.length > 0) events[events.length - 1] += `\n${line}`;
    else events.push(line);
  }
  return events;
}

/** What a check may return once its condition holds. A false or null would end the wait before it holds. */
type Found<T> = T extends false | null ? never : T;

/**
 * Polls `check` until it returns a value other than undefined, or fails after `timeoutMs`. "Not yet" is undefined
 * only: `() => lines.includes(x)` does not type-check, since its false would end the wait at once.
 */
export async function eventually<T>(
  check: () => Found<T> | undefined | Promise<Found<T> | undefined>,
  timeoutMs = 3000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * The text a controller wrote to `file`, once it is there. writeFileSync creates the file before it writes, so a
 * reader can find it empty; empty counts as not yet written.
 */
export function writtenText(file: string): string | undefined {
  return (existsSync(file) && readFileSync(file, 'utf8')) || undefined;
}

/**
 * Writes controller `name`, which marks its call (callMarker) and answers 'done slowly' after `ms`: a request
 * in flight for a stop or a restart to meet. Resolves once a request reaches it.
 */
export function slowController(sandbox: Sandbox, name: string, ms: number): Pick<ReturnType<typeof callMarker>, 'reached'> {
  const called = callMarker(sandbox, name);
  writeFileSync(
    join(sandbox.controllers, `${name}.ts`),
    `export default async () => { ${called.statement} await new Promise((r) => setTimeout(r, ${ms})); return 'done slowly'; };\n`,
  );
  return called;
}

/**
 * Proof that requests reached a controller: the controller runs `statement` first thing, `calls()` counts
 * the runs and `reached()` waits for `count` of them. ("Loaded controller X" is no such proof: the watcher
 * loads an added file by itself.)
 */
export function callMarker(
  sandbox: Sandbox,
  name: string,
): { statement: string; calls(): number; reached(timeoutMs?: number, count?: number): Promise<true> } {
  const file = join(sandbox.dir, `${name}.called`);
  // One byte a call: appends from several workers do not interleave.
  const calls = () => statSync(file, { throwIfNoEntry: false })?.size ?? 0;
  return {
    statement: `require('node:fs').appendFileSync(${JSON.stringify(file)}, '.');`,
    calls,
    reached: (timeoutMs = 3000, count = 1) =>
      eventually(() => (calls() >= count ? true : undefined), timeoutMs, `${count} request(s) to reach controller ${name}`),
  };
}

/** Writes controller `name`, which awaits until `release()` is called (a file appears), then answers: a request held in flight. */
export function holdController(sandbox: Sandbox, name: string) {
  const marker = callMarker(sandbox, name);
  const file = join(sandbox.dir, `${name}.release`);
  writeFileSync(
    join(sandbox.controllers, `${name}.ts`),
    `import { existsSync } from 'node:fs';\n` +
      `export default async () => { ${marker.statement} while (!existsSync(${JSON.stringify(file)})) await new Promise((r) => setTimeout(r, 20)); return 'released'; };\n`,
  );
  return { ...marker, release: () => writeFileSync(file, '') };
}
