// The host primary's dispatcher, php-fpm's model: the primary owns the public socket and relays each
// request to one idle worker over that worker's private socket, one request per worker at a time (busy
// from the request's start to its controller's end, async controllers included). With no worker idle the
// request waits in one FIFO queue (php-fpm's listen queue) bounded by --listen-backlog; past it the host
// answers 503 with POOL_FULL_FIELD. So a request never waits behind a busy worker while another is idle.
// The relay moves bytes only: heads as raw field lists, bodies piped both ways, trailers, and a
// worker's reset or close passed on as a reset or close. A request for a controller with no file is
// answered by the primary itself (missingController.ts), taking no worker.
import { Agent, request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { POOL_FULL_FIELD } from '../common/protocol.ts';

/** One worker as the dispatcher sees it. */
export class WorkerSlot {
  /** One keep-alive connection to the worker: it runs one request at a time. */
  readonly agent = new Agent({ keepAlive: true, maxSockets: 1 });
  /** `GET /External/Name` while it runs a request, for the lines of requests that waited. */
  running: string | undefined;
  /** When it last became idle (ondemand stops one idle past --worker-idle-timeout). */
  idleSince = performance.now();
  /** False once it is to retire or stop: it finishes what it runs and is sent nothing more. */
  accepting = true;

  constructor(
    readonly pid: number,
    readonly socketPath: string,
  ) {}
}

interface Waiting {
  req: IncomingMessage;
  res: ServerResponse;
  body: ReadBody | undefined;
  queuedAt: number;
}

export interface DispatcherEvents {
  /**
   * Answers `req` without a worker when it can (a controller with no file): true when it did. Asked once
   * the body is read (or streaming), before a worker is taken, so such a request never waits in the queue.
   */
  answerWithoutWorker(req: IncomingMessage, res: ServerResponse): boolean;
  /** A request found no idle worker (it is queued, or refused when the queue is full). */
  noIdleWorker(): void;
  /** The queue held --listen-backlog requests: this one is answered 503. */
  queueFull(req: IncomingMessage, bound: number): void;
  /** A queued request's client left before a worker took it; `running` is what every worker ran then. */
  leftQueue(req: IncomingMessage, waitedMs: number, running: string[]): void;
  /**
   * A request ended without its answer completing (the proxy left, the worker failed): resolves once the
   * worker's controller has ended, so it is sent nothing while it still runs one.
   */
  whenIdle(slot: WorkerSlot): Promise<void>;
}

/**
 * A body whose Content-Length is at most this is read whole before a worker is taken (mod_fcgid's
 * FcgidMaxRequestInMem; nginx buffers a body before php-fpm sees it): a client sending it slowly holds a
 * connection, not a worker. A longer or chunked body is streamed to its worker as it arrives, holding it.
 */
const BODY_READ_FIRST = 64 * 1024;

/** A body read whole before its worker was chosen. */
type ReadBody = Buffer[];

/** Fields about this hop's connection: each hop has its own. */
const HOP_FIELDS = new Set(['connection', 'keep-alive']);

function endToEnd(raw: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) if (!HOP_FIELDS.has(raw[i].toLowerCase())) out.push(raw[i], raw[i + 1]);
  return out;
}

/** `[name, value]` pairs from a raw list, as addTrailers() takes them. */
function pairsOf(raw: string[]): [string, string][] {
  const pairs: [string, string][] = [];
  for (let i = 0; i < raw.length; i += 2) pairs.push([raw[i], raw[i + 1]]);
  return pairs;
}

/** A connection ended as the worker's did: a reset when the worker's was reset, a close otherwise. */
function endLike(socket: Socket | null, err: NodeJS.ErrnoException | undefined): void {
  if (!socket || socket.destroyed) return;
  // A unix socket has no reset: the proxy reads its close before headers as one (proxy/forwardUndici.ts).
  if ((err?.code === 'ECONNRESET' || err?.code === 'EPIPE') && socket.remoteAddress !== undefined) socket.resetAndDestroy();
  else socket.destroy();
}

export class Dispatcher {
  /** Idle workers, the one idle longest first (ondemand stops the last ones to be used). */
  private readonly idle: WorkerSlot[] = [];
  private readonly busy = new Set<WorkerSlot>();
  private readonly queue: Waiting[] = [];
  /** php-fpm's "max listen queue" and "max active processes", since the pool started. */
  maxQueued = 0;
  maxActive = 0;

  constructor(
    /** --listen-backlog: requests that may wait; a SIGHUP may change it. */
    public bound: number,
    private readonly events: DispatcherEvents,
  ) {}

  get queued(): number {
    return this.queue.length;
  }

  get idleCount(): number {
    return this.idle.length;
  }

  get activeCount(): number {
    return this.busy.size;
  }

  /** Idle workers, for the maintenance of dynamic and ondemand pools. */
  idleWorkers(): readonly WorkerSlot[] {
    return this.idle;
  }

  /** A worker that listens: it takes the first queued request, or waits. */
  add(slot: WorkerSlot): void {
    this.makeIdle(slot);
  }

  /** A worker that is to take no more requests (retiring, stopping, gone). */
  remove(slot: WorkerSlot): void {
    slot.accepting = false;
    const at = this.idle.indexOf(slot);
    if (at >= 0) this.idle.splice(at, 1);
    // Its connection is closed once its request (if any) ends.
    if (!this.busy.has(slot)) slot.agent.destroy();
  }

  /** Forgets a worker that exited; what it ran has failed with its connection. */
  gone(slot: WorkerSlot): void {
    this.remove(slot);
    this.busy.delete(slot);
    slot.agent.destroy();
  }

  handle(req: IncomingMessage, res: ServerResponse): void {
    // Read first: only a body of a known length that fits. A longer or chunked one is streamed at once, so a
    // controller can still answer before it arrives (post_max_size, a 413).
    const length = req.headers['transfer-encoding'] === undefined ? Number(req.headers['content-length'] ?? 0) : Infinity;
    if (length === 0 || !(length <= BODY_READ_FIRST)) return this.dispatch(req, res, undefined);
    const body: ReadBody = [];
    const read = (chunk: Buffer) => body.push(chunk);
    // A client that leaves meanwhile ends nothing: no 'end', and no worker was taken.
    req.on('data', read);
    req.once('end', () => {
      req.off('data', read);
      this.dispatch(req, res, body);
    });
  }

  private dispatch(req: IncomingMessage, res: ServerResponse, body: ReadBody | undefined): void {
    if (this.events.answerWithoutWorker(req, res)) return;
    const slot = this.idle.pop();
    if (slot) return this.relay(slot, req, res, body);
    this.events.noIdleWorker();
    if (this.queue.length >= this.bound) {
      this.events.queueFull(req, this.bound);
      res.writeHead(503, { [POOL_FULL_FIELD]: '1', 'content-length': 0 });
      res.end();
      return;
    }
    const waiting: Waiting = { req, res, body, queuedAt: performance.now() };
    this.queue.push(waiting);
    if (this.queue.length > this.maxQueued) this.maxQueued = this.queue.length;
    res.once('close', () => {
      const at = this.queue.indexOf(waiting);
      if (at < 0) return;
      this.queue.splice(at, 1);
      this.events.leftQueue(
        req,
        performance.now() - waiting.queuedAt,
        [...this.busy].map((s) => s.running ?? '?'),
      );
    });
  }

  private makeIdle(slot: WorkerSlot): void {
    if (!slot.accepting) return void slot.agent.destroy();
    const next = this.queue.shift();
    if (next) return this.relay(slot, next.req, next.res, next.body);
    slot.running = undefined;
    slot.idleSince = performance.now();
    this.idle.push(slot);
  }

  private release(slot: WorkerSlot): void {
    if (!this.busy.delete(slot)) return; // gone meanwhile
    this.makeIdle(slot);
  }

  private relay(slot: WorkerSlot, req: IncomingMessage, res: ServerResponse, body: ReadBody | undefined): void {
    this.busy.add(slot);
    if (this.busy.size > this.maxActive) this.maxActive = this.busy.size;
    slot.running = `${req.method} ${req.url}`;
    let clean = false;
    let early = false;
    const upstream = httpRequest({
      socketPath: slot.socketPath,
      agent: slot.agent,
      method: req.method,
      path: req.url,
      headers: endToEnd(req.rawHeaders) as unknown as OutgoingHttpHeaders,
    });
    upstream.on('response', (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.statusMessage, endToEnd(answer.rawHeaders));
      answer.on('data', (chunk: Buffer) => {
        if (!res.write(chunk)) {
          answer.pause();
          res.once('drain', () => answer.resume());
        }
      });
      answer.on('end', () => {
        if (answer.rawTrailers.length > 0) res.addTrailers(pairsOf(answer.rawTrailers));
        res.end();
        clean = true;
        // An early answer (the worker did not take the whole body): the request has ended for the worker, and
        // the proxy may never send the rest. The rest is read and dropped here; the worker's connection, which
        // still expects it, is closed.
        if (!upstream.writableFinished) {
          early = true;
          req.unpipe(upstream);
          req.resume();
          upstream.destroy();
        }
      });
      answer.on('error', (err: NodeJS.ErrnoException) => endLike(res.socket, err));
      answer.on('close', () => {
        if (!answer.complete) endLike(res.socket, undefined);
      });
    });
    upstream.on('error', (err: NodeJS.ErrnoException) => endLike(req.socket, err));
    upstream.on('close', () => {
      if (clean && !early) return this.release(slot);
      // The worker may still run the controller (the proxy left mid-request): it is busy until it ends.
      this.events.whenIdle(slot).then(
        () => this.release(slot),
        () => undefined,
      );
    });
    // The proxy left (its client did, or its timer fired): the worker sees its client close, as before.
    res.once('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    if (body) {
      for (const chunk of body) upstream.write(chunk);
      upstream.end();
    } else req.pipe(upstream);
  }
}
