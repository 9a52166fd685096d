// Runs one child process (host or proxy) the way a service manager would: hand it its settings over
// IPC and read its ready line; common/supervisor.ts restarts it with back-off when it dies and stops it.
import { spawn, type ChildProcess } from 'node:child_process';
import { NOTIFY_SOCKET } from '../common/serviceManager.ts';
import { createInterface } from 'node:readline';
import { siblingFile } from '../common/entryFile.ts';
import { childEndpoint, IpcChannel } from '../common/ipc.ts';
import type { ChildSays, LauncherSays, ReloadNotice } from '../common/launcherProtocol.ts';
import { parseReadyUrls } from '../common/ready.ts';
import { LAUNCHER_PACE } from '../common/restartPace.ts';
import type { HostConfig, ProxyConfig, Role } from '../common/settings.ts';
import { Supervisor as CommonSupervisor, type Launched } from '../common/supervisor.ts';

/** What every child runs: it asks for its settings over IPC (launcher/child.ts). */
const CHILD_ENTRY = siblingFile(import.meta.url, 'child');

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

type Running = { child: ChildProcess; channel: IpcChannel<LauncherSays, ChildSays> };

export class Supervisor {
  private readonly children: CommonSupervisor<Running, string>;

  constructor(private readonly spec: ChildSpec) {
    this.children = new CommonSupervisor({
      launch: () => this.launch(),
      pace: LAUNCHER_PACE,
      events: {
        exited: ({ child }, how, delay) => spec.onEvent(`${spec.role} (pid ${child.pid}) exited with ${how}; restarting in ${delay} ms`),
        restartFailed: (err) => spec.onEvent(`${spec.role} restart failed: ${err.message}`),
      },
    });
  }

  /** Starts the child; resolves with its ready URL, rejects if it exits before it is ready. */
  async start(): Promise<string> {
    const [url] = await this.children.start(1);
    return url;
  }

  private launch(): Launched<Running, string> {
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
    const channel = new IpcChannel<LauncherSays, ChildSays>(childEndpoint(child));
    channel.answer('config', () => this.spec.config());
    const ready = new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const urls = parseReadyUrls(line);
        if (urls === undefined) {
          process.stdout.write(`${line}\n`);
          return;
        }
        this.spec.onReady(urls);
        resolve(urls[0]);
      });
      child.once('error', reject);
      child.once('exit', (code, signal) =>
        reject(new ChildStartError(`${this.spec.role} exited with ${signal ? `signal ${signal}` : `code ${code}`} before it was ready`)),
      );
    });
    return { handle: { child, channel }, process: child, ready };
  }

  /** Tells the running child of a reload (dropped when none runs: a restart asks for the settings anew). */
  reload(notice: ReloadNotice): void {
    for (const { channel } of this.children.handles) channel.notify('reload', notice);
  }

  /** SIGTERM, then waits for the exit (SIGKILL after a timeout). No restart follows. */
  stop(): Promise<void> {
    return this.children.stop('SIGTERM', this.spec.stopTimeoutMs);
  }
}
