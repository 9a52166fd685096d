// What the pool does with a worker's death and a quarantine's end (quarantine.ts decides): host.log's lines, and
// every worker, spares too, told which controller is held or runs again.
import { controllersRelayed, deathLine, type Death } from './deathLine.ts';
import { everyWorker, type PoolState } from './poolState.ts';
import { QUARANTINE_DEATHS, QUARANTINE_WITHIN_MS } from './quarantine.ts';

/** A worker died unasked: its line, then its quarantine. */
export function workerDied(pool: PoolState, death: Death): void {
  const { log, quarantine } = pool;
  log.error(deathLine(death), death.cause?.requestId);
  const held = quarantine.death(Date.now(), {
    controller: death.cause?.controller,
    inFlight: controllersRelayed(death.relayed),
    files: death.cause?.files,
  });
  if (!held) return;
  log.error(
    `Controller ${held.controller} is quarantined: ${QUARANTINE_DEATHS} worker deaths within ${QUARANTINE_WITHIN_MS / 1000} s ${held.reason === 'attributed' ? 'caused by its calls' : 'with it alone in flight'}; ` +
      `its requests are answered 503 without running until its file or one of its imports changes, or for ${Math.round((held.until - Date.now()) / 1000)} s`,
  );
  const hold = { controller: held.controller, until: held.until, ...(held.files && { files: held.files }) };
  for (const live of everyWorker(pool)) live.channel.notify('quarantine', hold);
}

/** A worker saw a quarantined controller's files change: every worker runs it again. */
export function quarantineLifted(pool: PoolState, controller: string): void {
  if (!pool.quarantine.lift(controller)) return;
  pool.log.notice(`Controller ${controller} is out of quarantine: its files changed`);
  for (const live of everyWorker(pool)) live.channel.notify('quarantine-lifted', { controller });
}
