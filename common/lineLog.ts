// A log file written through winston: callers hand over finished lines (see logFormat.ts), winston does
// the ordered writing to the file, and drain() waits until every line is on disk.
//
// Lines written in one turn of the event loop go to winston as one message: under load that is one
// trip through winston's streams for dozens of lines instead of one each (the favicon path spent more
// time in winston's per-call stream machinery than in answering the request).
import { once } from 'node:events';
import { join } from 'node:path';
import winston from 'winston';

export interface LineLog {
  write(line: string): void;
  /** Ends the log and resolves when every line written so far has reached the file. */
  drain(): Promise<void>;
}

const messageOnly = winston.format.printf((info) => String(info.message));

export function openLineLog(dir: string, file: string): LineLog {
  const transport = new winston.transports.File({ filename: join(dir, file) });
  // The format belongs on the logger: without one, winston's default json() stringifies every message
  // before the transport formats it again.
  const logger = winston.createLogger({ level: 'info', format: messageOnly, transports: [transport], exitOnError: false });
  let pending: string[] = [];
  let draining: Promise<void> | undefined;
  // Messages handed to winston, and those its transport has written ('logged'). winston's logger.end()
  // ends the transport from the logger's _final while messages can still sit in the logger's readable
  // buffer under backpressure; they then fail with "write after end" (seen with bursts of lines). So
  // drain() first waits until every message has reached the transport.
  let sent = 0;
  let logged = 0;
  let allLogged: (() => void) | undefined;
  transport.on('logged', () => {
    logged += 1;
    if (logged === sent) allLogged?.();
  });

  function flush(): void {
    if (pending.length === 0) return;
    const lines = pending;
    pending = [];
    sent += 1;
    logger.info(lines.join('\n'));
  }

  return {
    write(line) {
      // After drain() the file is closing: a late line goes to stderr rather than nowhere.
      if (draining) {
        process.stderr.write(`${file}: ${line}\n`);
        return;
      }
      if (pending.length === 0) setImmediate(flush);
      pending.push(line);
    },
    drain() {
      // winston 3.19's File transport defers 'finish' until its file stream has flushed (_final).
      draining ??= (async () => {
        flush();
        if (logged < sent) await new Promise<void>((resolve) => (allLogged = resolve));
        const finished = once(transport, 'finish');
        logger.end();
        await finished;
      })();
      return draining;
    },
  };
}
