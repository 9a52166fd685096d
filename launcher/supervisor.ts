// Runs one child process (host or proxy) the way a service manager would: start it, wait for its ready
// line, restart it with back-off when it dies, stop it with SIGTERM and wait for it to exit.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { CONFIG_ENV_NAMES } from '../common/config.ts';
import { parseReadyLine } from '../common/ready.ts';

/** The TypeScript loader, by absolute URL so children start from any working directory. */
const TSX = import.meta.resolve('tsx');

const FIRST_RESTART_DELAY_MS = 100;
const MAX_RESTART_DELAY_MS = 5_000;
/** A child that stayed up this long is healthy again: its next crash restarts it without delay growth. */
const STABLE_AFTER_MS = 10_000;

/**
 * The launcher has read PORT, LISTEN and the rest and passes each child the flags meant for it; the
 * variables themselves must not reach the children, where they would be read again (PORT=abc with
 * --port 0 would stop the host, which has no port).
 */
function childEnvironment(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of CONFIG_ENV_NAMES) delete env[name];
  return env;
}

export interface ChildSpec {
  name: string;
  /** Entry script, relative to the project root. */
  script: string;
  /** The child's flags, read at every start (a restart may need different ones). */
  args: () => string[];
  /** Called with the URL of every ready line (first start and restarts). */
  onReady(url: string): void;
  /** Called with what went wrong when a running child exited or could not be restarted. */
  onEvent(message: string): void;
  /** How long stop() waits after SIGTERM before SIGKILL: longer than the child's own graceful stop. */
  stopTimeoutMs: number;
}

export class Supervisor {
  private child: ChildProcess | undefined;
  private stopping = false;
  private restarts = 0;
  private restartTimer: NodeJS.Timeout | undefined;

  constructor(private readonly spec: ChildSpec) {}

  /** Starts the child; resolves with its ready URL, rejects if it exits before it is ready. */
  start(): Promise<string> {
    return new Promise((resolve, reject) => {
      const startedAt = Date.now();
      const child = spawn(process.execPath, ['--import', TSX, fileURLToPath(new URL(`../${this.spec.script}`, import.meta.url)), ...this.spec.args()], {
        // Own process group: a terminal's Ctrl-C reaches the launcher only, which stops children in
        // order (proxy first, so requests in flight still reach the host). The IPC channel lets a
        // child notice the launcher is gone and stop by itself.
        detached: true,
        stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
        env: childEnvironment(),
      });
      this.child = child;
      let ready = false;
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const url = parseReadyLine(line);
        if (url === undefined) {
          process.stdout.write(`${line}\n`);
          return;
        }
        ready = true;
        this.spec.onReady(url);
        resolve(url);
      });
      child.once('error', (err) => {
        if (!ready) reject(err);
      });
      child.once('exit', (code, signal) => {
        this.child = undefined;
        const how = signal ? `signal ${signal}` : `code ${code}`;
        if (!ready) {
          reject(new Error(`${this.spec.name} exited with ${how} before it was ready`));
          return;
        }
        if (this.stopping) return;
        if (Date.now() - startedAt > STABLE_AFTER_MS) this.restarts = 0;
        const delay = Math.min(FIRST_RESTART_DELAY_MS * 2 ** this.restarts, MAX_RESTART_DELAY_MS);
        this.restarts += 1;
        this.spec.onEvent(`${this.spec.name} (pid ${child.pid}) exited with ${how}; restarting in ${delay} ms`);
        this.restartTimer = setTimeout(() => this.restart(), delay);
      });
    });
  }

  private restart(): void {
    this.restartTimer = undefined;
    if (this.stopping) return;
    this.start().catch((err: Error) => {
      // Not ready this time either: the exit handler did not schedule anything, so try again later.
      this.spec.onEvent(`${this.spec.name} restart failed: ${err.message}`);
      const delay = Math.min(FIRST_RESTART_DELAY_MS * 2 ** this.restarts, MAX_RESTART_DELAY_MS);
      this.restarts += 1;
      if (!this.stopping) this.restartTimer = setTimeout(() => this.restart(), delay);
    });
  }

  /** A message to the running child over its IPC channel (dropped when none runs). */
  send(message: object): void {
    if (this.child?.connected) this.child.send(message);
  }

  /** SIGTERM, then waits for the exit (SIGKILL after a timeout). No restart follows. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), this.spec.stopTimeoutMs);
    await exited;
    clearTimeout(killer);
  }
}
