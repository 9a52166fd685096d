// Runs one server role in this process, loading only that role's code (the proxy never loads fastify,
// the host never loads the proxy's forwarding engine), and turns a start-up failure into a message and an exit code.
import { isConfigError, UsageError } from '../common/configError.ts';
import type { Reloads } from '../common/reload.ts';
import type { HostConfig, ProxyConfig, Role } from '../common/settings.ts';

export async function runRole(role: Role, config: ProxyConfig | HostConfig, reloads: Reloads<ProxyConfig | HostConfig>): Promise<void> {
  if (role === 'proxy') {
    const { runProxy } = await import('../proxy/roles/run.ts');
    await runProxy(config as ProxyConfig, reloads as Reloads<ProxyConfig>);
  } else {
    const { runPool } = await import('../host/pool/pool.ts');
    await runPool(config as HostConfig, reloads as Reloads<HostConfig>);
  }
}

/** Exit status 2 for what the operator must fix in the command line or the settings, 1 for anything else. */
function exitCodeOf(err: unknown): number {
  return err instanceof UsageError || isConfigError(err) ? 2 : 1;
}

/** The message for the operator: the setting's problem as it is, a taken port in one line, else the stack. */
function describeFailure(err: unknown): string {
  // Our own errors say all there is to say; a stack would only hide the message.
  if (err instanceof Error && /^EXTQS_/.test(String((err as NodeJS.ErrnoException).code))) return err.message;
  if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') return `cannot listen: ${(err as Error).message}`;
  return (err as Error).stack ?? String(err);
}

/** Writes `extqs <who>: <message>` (or `extqs: <message>`) to stderr and exits with the failure's status. */
export function exitWith(who: string, err: unknown): never {
  process.stderr.write(`extqs${who ? ` ${who}` : ''}: ${describeFailure(err)}\n`);
  process.exit(exitCodeOf(err));
}
