// logs/host.log: the application's own log, one event a line (DESIGN.md §4).
import { openLineLog } from '../common/lineLog.ts';
import { hostLine, type HostEntry } from '../common/logFormat.ts';

export interface HostLog {
  error(message: string, requestId?: string): void;
  warn(message: string, requestId?: string): void;
  info(message: string, requestId?: string): void;
  drain(): Promise<void>;
}

export function openHostLog(dir: string): HostLog {
  const log = openLineLog(dir, 'host.log');
  const write = (level: HostEntry['level'], message: string, requestId?: string) =>
    log.write(hostLine({ time: new Date(), level, requestId, message }));
  return {
    error: (message, requestId) => write('error', message, requestId),
    warn: (message, requestId) => write('warn', message, requestId),
    info: (message, requestId) => write('info', message, requestId),
    drain: () => log.drain(),
  };
}
