// What the host answers a request Node's parser refused (a proxy's head is within its limit: not from a
// proxy, or a bug): a bare status, without fastify's JSON; the proxy answers its page (P6). The pool's
// dispatcher parses every request first; a worker's own server keeps the same answer.
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { statusOfParserError } from '../../common/protocol.ts';
import type { HostLog } from '../wire/hostLog.ts';

export function refuseUnreadable(log: Pick<HostLog, 'error'>): (err: NodeJS.ErrnoException, socket: Socket) => void {
  return (err, socket) => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    // The proxy cut its request mid-body (its client left, or it refused the body): nothing was misread.
    // The request reads its body as ended early, as PHP does (requestInput.ts).
    if (err.code === 'HPE_INVALID_EOF_STATE') return void socket.destroy();
    const status = statusOfParserError(err.code);
    log.error(`Refused a request Node's parser could not read: ${err.code ?? ''} ${err.message}`);
    // Not while an answer is going out on the connection: the status would read as part of it.
    if (socket.writable && !(socket as Socket & { _httpMessage?: unknown })._httpMessage)
      socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
    socket.destroy();
  };
}
