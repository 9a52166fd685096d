// A request's context (proxy/core/requestContext.ts) around a hand-made request, for unit tests of the passes and
// forwarding's pure parts; error.log lines are kept in `lines`.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorEntry } from '../../common/logFormat.ts';
import type { ErrorLog } from '../../proxy/observe/errorLog.ts';
import { ErrorPages } from '../../proxy/core/errorPages.ts';
import { RequestContext } from '../../proxy/core/requestContext.ts';

export function contextFor(req: IncomingMessage, id = 'id', res = {} as ServerResponse): RequestContext & { lines: ErrorEntry[] } {
  const lines: ErrorEntry[] = [];
  const errorLog: ErrorLog = { write: (entry) => void lines.push(entry), reopen: () => true, drain: async () => {} };
  return Object.assign(new RequestContext(req, res, id, errorLog, new ErrorPages()), { lines });
}
