// What a worker says to the pool, on its channel and its watchdog pipe: the settings it asks for, its log lines,
// its final counters, that it listens, that it asks to be recycled, that its event loop stopped or turns again.
import { deliver } from '../../common/logRelay.ts';
import { BLOCKED_AFTER_MS, type WireHostEntry } from '../wire/poolMessages.ts';
import { addDeparted } from '../wire/stats.ts';
import type { PrimaryHostLog } from './hostLogFile.ts';
import type { PoolState } from './poolState.ts';
import { poolStatus } from './poolStatus.ts';
import { readWatchdogPipe, type PoolWorker } from './poolWorker.ts';
import { quarantineLifted } from './quarantineNotices.ts';
import { recycle } from './workerRetire.ts';

/** Answers and follows what `record`'s worker says. */
export function listenTo(pool: PoolState, record: PoolWorker): void {
  const { worker, channel } = record;
  const { log, quarantine, departed } = pool;
  channel.answer('config', () => ({
    config: pool.settings.current,
    socket: record.slot.socketPath,
    quarantined: quarantine.active(Date.now()),
  }));
  channel.on('files-changed', ({ controller }) => quarantineLifted(pool, controller));
  channel.on('log', (batch) => deliver(batch, { 'host.log': (entry) => writeWireEntry(log, entry) }));
  channel.answer('flush', (batch) => {
    deliver(batch, { 'host.log': (entry) => writeWireEntry(log, entry) });
    return null;
  });
  // It comes before the worker's last log flush is answered, so before its exit.
  channel.on('final-stats', ({ snapshot }) => {
    record.lastReported = undefined;
    record.handedOver = true;
    addDeparted(departed, snapshot);
  });
  channel.answer('status', ({ full }) => poolStatus(pool, full));
  channel.on('listening', () => workerListens(pool, record));
  channel.on('retire-me', ({ reason, now }) => {
    if (now && !pool.workers.stopped) {
      pool.dispatcher.remove(record.slot);
      pool.feed.publish();
    }
    recycle(pool, worker, reason);
  });
  readWatchdogPipe(record, {
    blockedChanged: (blocked, running) => blockedChanged(pool, record, blocked, running),
    entry: (entry) => writeWireEntry(log, entry),
    unreadable: (line) => log.error(`Unreadable line from the watchdog of worker ${worker.process.pid}: ${line}`),
  });
}

/** A worker's line, written as the worker wrote it. */
function writeWireEntry(log: PrimaryHostLog, entry: WireHostEntry): void {
  log.write({ ...entry, time: new Date(entry.time) });
}

/** A worker listens: a spare waits, any other takes requests, and its start is over. */
function workerListens(pool: PoolState, record: PoolWorker): void {
  record.up = true;
  if (pool.spares.has(record)) return void pool.spares.listens(record);
  // One retired while it started (the pool was made smaller) takes no request.
  if (!pool.workers.isRetiring(record.worker)) {
    pool.dispatcher.add(record.slot);
    pool.feed.publish();
  }
  record.listened?.();
}

/** A worker's event loop stopped turning while it ran calls, or turns again: it is routed around meanwhile. */
function blockedChanged(pool: PoolState, record: PoolWorker, blocked: boolean, running: string[]): void {
  const { slot } = record;
  if (!slot.accepting) return;
  slot.blockedRunning = running;
  if (blocked)
    pool.log.warn(
      `Worker ${record.pid} is blocked (its event loop has not turned for ${BLOCKED_AFTER_MS} ms): it is sent no new request until it turns again`,
    );
  else pool.log.info(`Worker ${record.pid} turns again: it takes requests`);
  pool.dispatcher.setBlocked(slot, blocked);
  pool.feed.publish();
}
