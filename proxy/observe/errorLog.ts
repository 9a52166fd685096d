// logs/error.log, in Apache 2.4's default layout (docs/design.md §10) or JSON (--log-format json); lines below
// --log-level are not written.
import type { LogSettings } from '../../common/settings.ts';
import { openLineLog, rotationOf } from '../../common/lineLog.ts';
import { errorJson, errorLine, levelEnabled, nowMicros, type ErrorEntry, type LogFormat } from '../../common/logFormat.ts';
import type { LogRelay } from '../../common/logRelay.ts';
import type { TerminalEntry } from '../../common/terminal.ts';
import { repeatsTheHost } from '../core/hostFailureLines.ts';
import type { ProxyLogEntries, WireErrorEntry } from './workerMessages.ts';

export interface ErrorLog {
  write(event: ErrorEntry): void;
  /** Opens the file again by name (SIGHUP) with these settings; false if it could not be opened. */
  reopen(settings: LogSettings): boolean;
  drain(): Promise<void>;
}

/** Where an event that passed --log-level goes, with its time and process: error.log itself, or the primary that writes it. */
export interface ErrorSink {
  write(entry: WireErrorEntry): void;
  /** Opens the file again by name (SIGHUP) with these settings; false if it could not be opened. */
  reopen(settings: LogSettings): boolean;
  drain(): Promise<void>;
}

const errorFormatter = (logFormat: LogFormat) => (logFormat === 'json' ? errorJson : errorLine);

/** error.log itself, each entry formatted with --log-format. */
export function errorFile(dir: string, settings: LogSettings): ErrorSink {
  const log = openLineLog(dir, 'error.log', rotationOf(settings));
  let format = errorFormatter(settings.logFormat);
  return {
    write: (entry) => log.write(format(entry, entry.micros, entry.pid)),
    reopen(next) {
      format = errorFormatter(next.logFormat);
      return log.reopen(rotationOf(next));
    },
    drain: () => log.drain(),
  };
}

/** A worker's error log (--proxy-workers > 1): entries go to the primary, which formats and writes them. */
export function relayedErrors(relay: LogRelay<ProxyLogEntries>, settings: LogSettings): ErrorSink {
  let format = errorFormatter(settings.logFormat);
  const send = relay.to('error.log', (entry) => format(entry, entry.micros, entry.pid));
  return {
    write: send,
    reopen(next) {
      format = errorFormatter(next.logFormat);
      return true; // the primary opens the file again
    },
    drain: () => relay.drain(),
  };
}

/**
 * With `terminal` (`extqs dev`) each event also goes there, from the process where it happened, but for the
 * lines that relay a failure the host's terminal line shows already (hostFailureLines.ts).
 */
export function openErrorLog(settings: LogSettings, sink: ErrorSink, terminal?: (entry: TerminalEntry) => void): ErrorLog {
  let threshold = settings.logLevel;
  return {
    write(event) {
      if (!levelEnabled(event.level, threshold)) return;
      // Field by field, not a spread: this runs for every missing file and failed forward.
      const { module, level, status, client, message, referer, requestId } = event;
      sink.write({ module, level, status, client, message, referer, requestId, micros: nowMicros(), pid: process.pid });
      if (terminal && !repeatsTheHost(event)) terminal({ ...event, time: new Date(), source: event.module });
    },
    reopen(next) {
      threshold = next.logLevel;
      return sink.reopen(next);
    },
    drain: () => sink.drain(),
  };
}
