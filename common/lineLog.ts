// A log file written through winston: callers hand over finished lines (see logFormat.ts),
// winston does the buffered, ordered writing, and drain() waits until every line is on disk.
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
  const transport = new winston.transports.File({ filename: join(dir, file), format: messageOnly });
  const logger = winston.createLogger({ level: 'info', transports: [transport], exitOnError: false });
  let draining: Promise<void> | undefined;
  return {
    write(line) {
      // After drain() the file is closing: a late line goes to stderr rather than nowhere.
      if (draining) process.stderr.write(`${file}: ${line}\n`);
      else logger.info(line);
    },
    drain() {
      // winston 3.19's File transport defers 'finish' until its file stream has flushed (_final).
      draining ??= (async () => {
        const finished = once(transport, 'finish');
        logger.end();
        await finished;
      })();
      return draining;
    },
  };
}
