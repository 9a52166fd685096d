// Runs one child process (host or proxy) the way a service manager would: start it, hand it its
// settings, wait for its ready line, restart it with back-off when it dies, stop it with SIGTERM and
// wait for it to exit.
import { spawn, type ChildProcess } from 'node:child_process';
import { NOTIFY_SOCKET } from '../common/serviceManager.ts';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { siblingFile } from '../common/entryFile.ts';
import { childEndpoint, IpcChannel } from '../common/ipc.ts';
import type { ChildSays, LauncherSays, ReloadNotice } from '../common/launcherProtocol.ts';
import { parseReadyUrls } from '../common/ready.ts';
import type { HostConfig, ProxyConfig, Role } from '../common/settings.ts';

/** What every child runs: it asks for its settings over IPC (launcher/child.ts). */
const CHILD_ENTRY = siblingFile(import.meta.url, 'child');

const FIRST_RESTART_DELAY_MS = 100;
const MAX_RESTART_DELAY_MS = 5_000;
/** A child that stayed up this long is healthy again: its next crash restarts it without delay growth. */
const STABLE_AFTER_MS = 10_000;

/** A child that exited, or could not be started, before its ready line. */
export class ChildStartError extends Error {
  readonly code = 'EXTQS_CHILD_START';
}

export interface ChildSpec {
  role: Role;
  /** The child's settings, read at every start (a restart may need different ones). */
  config: () => ProxyConfig | HostConfig;
  /** Called with the URLs of every ready line (first start and restarts). */
  onReady(urls: string[]): void;
  /** Called with what went wrong when a running child exited or could not be restarted. */
  onEvent(message: string): void;
  /** How long stop() waits after SIGTERM before SIGKILL: longer than the child's own graceful stop. */
  stopTimeoutMs: number;
}

export class Supervisor {
  private child: ChildProcess | undefined;
  private channel: IpcChannel<LauncherSays, ChildSays> | undefined;
  private stopping = false;
  private restarts = 0;
  private restartTimer: NodeJS.Timeout | undefined;

  constructor(private readonly spec: ChildSpec) {}

  /** Starts the child; resolves with its ready URL, rejects if it exits before it is ready. */
  start(): Promise<string> {
    return new Promise((resolve, reject) => {
      const startedAt = Date.now();
      // The launcher's own Node options (tsx's loader when the tests run the sources) go to the child.
      const child = spawn(process.execPath, [...process.execArgv, CHILD_ENTRY, this.spec.role], {
        // Own process group: a terminal's Ctrl-C reaches the launcher only, which stops children in
        // order (proxy first, so requests in flight still reach the host). The IPC channel carries the
        // settings, and lets a child notice the launcher is gone and stop by itself.
        detached: true,
        stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
        // Only the launcher tells systemd it is ready: a host ready before the proxy would say so too early.
        env: { ...process.env, [NOTIFY_SOCKET]: undefined },
      });
      this.child = child;
      const channel = new IpcChannel<LauncherSays, ChildSays>(childEndpoint(child));
      channel.answer('config', () => this.spec.config());
      this.channel = channel;
      let ready = false;
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const urls = parseReadyUrls(line);
        if (urls === undefined) {
          process.stdout.write(`${line}\n`);
          return;
        }
        ready = true;
        this.spec.onReady(urls);
        resolve(urls[0]);
      });
      child.once('error', (err) => {
        if (!ready) reject(err);
      });
      child.once('exit', (code, signal) => {
        this.child = undefined;
        this.channel = undefined;
        const how = signal ? `signal ${signal}` : `code ${code}`;
        if (!ready) {
          reject(new ChildStartError(`${this.spec.role} exited with ${how} before it was ready`));
          return;
        }
        if (this.stopping) return;
        if (Date.now() - startedAt > STABLE_AFTER_MS) this.restarts = 0;
        const delay = Math.min(FIRST_RESTART_DELAY_MS * 2 ** this.restarts, MAX_RESTART_DELAY_MS);
        this.restarts += 1;
        this.spec.onEvent(`${this.spec.role} (pid ${child.pid}) exited with ${how}; restarting in ${delay} ms`);
        this.restartTimer = setTimeout(() => this.restart(), delay);
      });
    });
  }

  private restart(): void {
    this.restartTimer = undefined;
    if (this.stopping) return;
    this.start().catch((err: Error) => {
      // Not ready this time either: the exit handler did not schedule anything, so try again later.
      this.spec.onEvent(`${this.spec.role} restart failed: ${err.message}`);
      const delay = Math.min(FIRST_RESTART_DELAY_MS * 2 ** this.restarts, MAX_RESTART_DELAY_MS);
      this.restarts += 1;
      if (!this.stopping) this.restartTimer = setTimeout(() => this.restart(), delay);
    });
  }

  /** Tells the running child of a reload (dropped when none runs: a restart asks for the settings anew). */
  reload(notice: ReloadNotice): void {
    this.channel?.notify('reload', notice);
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
