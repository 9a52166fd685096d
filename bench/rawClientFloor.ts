// The Node floor with its client half written by hand: node:http takes the request, and a few lines of
// HTTP/1.1 over kept-alive unix-socket connections carry it to the host, in place of undici. What undici
// costs a relayed request is the difference from nodeFloor.ts (bench/frontCost.ts measures both).
// It reads only what node:http's answers to the stack scenarios hold (a head, then a Content-Length body);
// a yardstick, not a client. `rawClientFloor.ts <host socket>` prints a ready line like extqs's.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { readyLine } from '../common/ready.ts';

const [socketPath] = process.argv.slice(2);
const HEAD_END = Buffer.from('\r\n\r\n');
/** The host's fields that are about its connection to this front, not the answer. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding']);
const idle: HostConnection[] = [];

/** One kept-alive connection to the host, carrying one request at a time. */
class HostConnection {
  private readonly socket: Socket;
  private res: ServerResponse | undefined;
  private pending: Buffer | undefined;

  constructor() {
    this.socket = connect(socketPath);
    this.socket.on('data', (chunk: Buffer) => this.received(chunk));
    this.socket.on('error', (err) => this.res?.destroy(err));
  }

  send(url: string, res: ServerResponse): void {
    this.res = res;
    this.socket.write(`GET ${url} HTTP/1.1\r\nhost: localhost\r\n\r\n`, 'latin1');
  }

  private received(chunk: Buffer): void {
    const data = this.pending ? Buffer.concat([this.pending, chunk]) : chunk;
    const headEnd = data.indexOf(HEAD_END);
    if (headEnd === -1) return void (this.pending = data);
    const lines = data.toString('latin1', 0, headEnd).split('\r\n');
    const fields: string[] = [];
    let length = 0;
    for (let i = 1; i < lines.length; i++) {
      const colon = lines[i].indexOf(':');
      const name = lines[i].slice(0, colon);
      const value = lines[i].slice(colon + 1).trim();
      const lower = name.toLowerCase();
      if (lower === 'content-length') length = Number(value);
      if (!HOP_BY_HOP.has(lower)) fields.push(name, value);
    }
    const bodyStart = headEnd + HEAD_END.length;
    if (data.length < bodyStart + length) return void (this.pending = data);
    this.pending = undefined;
    const res = this.res!;
    this.res = undefined;
    res.writeHead(Number(lines[0].slice(9, 12)), fields);
    res.end(data.subarray(bodyStart, bodyStart + length));
    idle.push(this);
  }
}

function relay(req: IncomingMessage, res: ServerResponse): void {
  const url = req.url ?? '/';
  if (!url.startsWith('/External/')) return void res.writeHead(404, { 'content-length': 0 }).end();
  (idle.pop() ?? new HostConnection()).send(url, res);
}

const server = createServer(relay);
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${readyLine(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
