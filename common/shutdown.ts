// Graceful stop for the proxy and the host: SIGTERM and SIGINT, or the launcher's IPC channel closing
// (the launcher died), run the process's own shutdown once, then exit. A second signal exits at once.
export function onShutdownSignal(shutdown: (reason: string) => Promise<void>): void {
  let stopping = false;
  const stop = (reason: string) => {
    if (stopping) {
      process.exit(1);
    }
    stopping = true;
    shutdown(reason).then(
      () => process.exit(0),
      (err) => {
        process.stderr.write(`shutdown failed: ${(err as Error).stack ?? String(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  if (process.send) process.on('disconnect', () => stop('launcher gone'));
}

/**
 * Seconds a process may take to stop past --shutdown-timeout before it is killed: the proxy only drains
 * its logs then; the host pool kills a hung worker 5 s after the timeout (host/pool/poolStop.ts), then drains.
 * The launcher stops the proxy, then the host, so it needs both; a service manager's stop timeout too.
 */
export const STOP_MARGIN_S = { proxy: 5, host: 10 } as const;
