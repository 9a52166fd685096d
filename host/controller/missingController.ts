// A request for a controller with no file (every request of the observed deployment), named, answered and
// logged alike by a worker (app.ts) and by the pool's primary, which answers it without taking a worker
// (docs/design.md §4.3), so it never waits in the listen queue.
import { statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { CONTROLLER_PREFIX, encodeStderr, ENDED_WITHOUT_HEADERS_FIELD, HOST_STDERR_FIELD } from '../../common/protocol.ts';
import type { HostLog } from '../wire/hostLog.ts';
import { requestIdOrNew } from '../../common/requestId.ts';
import { routeController } from './controllerRoute.ts';

/** The files that may hold controller `name`, the first preferred when both exist. */
export function controllerFiles(dir: string, name: string): readonly [ts: string, js: string] {
  return [join(dir, `${name}.ts`), join(dir, `${name}.js`)];
}

/** PHP's words for a script that is not there (ControllerMissingError's message). */
export function missingControllerMessage(dir: string, name: string): string {
  return `Failed opening controller script ${controllerFiles(dir, name)[0]}: No such file or directory (nor ${name}.js)`;
}

/**
 * The fields of an answer that ended without headers, in the order and with the content type a worker's
 * fastify writes them (`reply.code(500).header(…).header(…).send('')`); test/unit/missingController.test.ts
 * compares the bytes of both.
 */
export function endedWithoutHeadersFields(fatal: string): string[] {
  return [
    ENDED_WITHOUT_HEADERS_FIELD,
    '1',
    HOST_STDERR_FIELD,
    encodeStderr(`PHP Fatal error:  ${fatal}`),
    'content-type',
    'text/plain; charset=utf-8',
    'content-length',
    '0',
  ];
}

/**
 * The primary's answer for a controller with no file: true when it answered `req`. The files are looked at
 * now, as a worker's registry looks at a name it has not loaded, so a controller added a moment ago is
 * served; anything but "no such file" (an invalid name, a file that exists, EACCES) is left to a worker,
 * which answers it as before.
 */
export function answerMissingController(dir: string, log: HostLog, counted: () => void) {
  return (req: IncomingMessage, res: ServerResponse): boolean => {
    const url = req.url ?? '';
    if (!url.startsWith(CONTROLLER_PREFIX)) return false;
    const route = routeController(url);
    if (route.kind !== 'controller') return false;
    try {
      for (const file of controllerFiles(dir, route.name)) if (statSync(file, { throwIfNoEntry: false })) return false;
    } catch {
      return false;
    }
    const message = `${missingControllerMessage(dir, route.name)} in ${req.method} ${url}`;
    log.error(message, requestIdOrNew(req.headers));
    counted();
    res.writeHead(500, endedWithoutHeadersFields(message));
    res.end();
    return true;
  };
}
