// The host primary's dispatcher: the primary owns the host socket and relays a request to one of its
// workers over that worker's private socket: the least busy among those not blocked and below
// --worker-concurrency (common/leastBusy.ts, Passenger's router). A worker runs many requests at once
// (0, the default, is no limit; 1 is php-fpm's one request per worker). With none able to take it the request
// waits in one FIFO queue (php-fpm's listen queue) bounded by --listen-backlog; past it the host answers 503
// with POOL_FULL_FIELD. A proxy on the same machine sends most requests straight to the workers
// (WORKERS_PATH): those that reach the primary are the ones it could not place, and every request when the
// concurrency is bounded, since only one router can keep a bound.
// The relay moves bytes only: heads as raw field lists, bodies piped both ways, trailers, and a
// worker's reset or close passed on as a reset or close. A request for a controller with no file is
// answered by the primary itself (missingController.ts), taking no worker.
import type { Agent, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { createReadStream, createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { HostTarget } from '../../common/hostTarget.ts';
import { route, type RouteCandidate } from '../../common/leastBusy.ts';
import { POOL_FULL_FIELD } from '../../common/protocol.ts';
import { requestIdOf } from '../../common/requestId.ts';
import { sendAgainAfterLoss, type WorkerEnd } from '../../common/workerLoss.ts';

/** A request relayed to a worker that runs. */
export interface Relayed {
  /** `GET /External/Name`: what the lines of requests that waited name. */
  label: string;
  requestId: string | undefined;
  /** A GET or HEAD without a body: it may go to another worker if its worker dies (common/workerLoss.ts). */
  resendable: boolean;
}

/** One worker as the dispatcher sees it. */
export class WorkerSlot implements RouteCandidate {
  /** The worker's socket, as every client of a host process is reached. */
  readonly target: HostTarget;
  /** Keep-alive connections to the worker, one per request it runs through the primary. */
  readonly agent: Agent;
  /** Requests relayed to it and not yet ended (those a proxy sends it directly are not counted here). */
  inFlight = 0;
  /** Each request relayed to it that runs. */
  readonly running: Relayed[] = [];
  /** Its event loop has not turned for a while (its watchdog says so): it is sent nothing new. */
  blocked = false;
  /** While blocked: the request ids of the calls it runs (the watchdog's table). */
  blockedRunning: string[] = [];
  /** When it last had nothing in flight (ondemand stops one idle past --worker-idle-timeout). */
  idleSince = performance.now();
  /** False once it is to retire or stop: it finishes what it runs and is sent nothing more. */
  accepting = true;

  constructor(
    readonly pid: number,
    readonly socketPath: string,
  ) {
    this.target = new HostTarget({ kind: 'unix', path: socketPath });
    this.agent = this.target.agent({ keepAlive: true });
  }
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
  /** A request found no worker able to take it (it is queued, or refused when the queue is full). */
  noIdleWorker(): void;
  /** The queue held --listen-backlog requests: this one is answered 503. */
  queueFull(req: IncomingMessage, bound: number): void;
  /** A queued request's client left before a worker took it; `running` is what the workers ran for the primary then. */
  leftQueue(req: IncomingMessage, waitedMs: number, running: string[]): void;
  /**
   * A request ended without its answer completing (the proxy left, the worker failed): resolves once the
   * worker's controller has ended, so it is sent nothing while it still runs one.
   */
  whenIdle(slot: WorkerSlot): Promise<void>;
  /** A body could not be written to the spool directory: the request is cut. */
  spoolFailed(req: IncomingMessage, err: Error): void;
  /** A body to spool declared a length past --spool-max-size (`bound`) by itself: answered 413 without reading it. */
  spoolTooLarge(req: IncomingMessage, length: number, bound: number): void;
  /** The spooled bodies passed --spool-max-size (`bound`) while this one arrived: its file is gone, answered 503. */
  spoolFull(req: IncomingMessage, bound: number): void;
  /** Once its exit is handled, what became of a worker whose connection failed before an answer (undefined: it lives). */
  fateOf(slot: WorkerSlot): Promise<WorkerEnd>;
}

/** What a body refused for want of spool room tells its client: others' bodies go to their workers meanwhile. */
export const SPOOL_RETRY_AFTER_S = 5;

/**
 * A body whose Content-Length is at most this is read whole into memory before a worker is taken (mod_fcgid's
 * FcgidMaxRequestInMem; nginx buffers a body before php-fpm sees it): a client sending it slowly holds a
 * connection, not a worker. A longer or chunked one is written to a file first when the workers' concurrency is
 * bounded (mod_fcgid spools it so; a slow sender would hold one of few places), and streamed to its worker as it
 * arrives when it is not (a worker takes other requests meanwhile, and a controller can answer before it ends).
 */
const BODY_READ_FIRST = 64 * 1024;

/** A body read whole before its worker was chosen: in memory, or spooled to a file. */
type ReadBody = Buffer[] | { file: string };

/** What connecting to a worker's socket says when nobody listens there any more. */
const NOT_LISTENING = new Set(['ECONNREFUSED', 'ENOENT']);

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

/** How long a refused body is still read and dropped after its answer, at most (Apache's lingering close: 2 s). */
const LINGER_MS = 2_000;

/**
 * Answers `status` to a request whose body is not kept. The answer is whole in its head (no body) and goes at once;
 * the rest of the body is read and dropped until it ends or LINGER_MS have passed, then the connection closes: cut
 * at once, it would be reset under the sender's writes, which may then never read the answer.
 */
function refuseUnread(req: IncomingMessage, res: ServerResponse, status: 413 | 503): void {
  req.unpipe();
  const headers: OutgoingHttpHeaders = { 'content-length': 0, connection: 'close' };
  if (status === 503) headers['retry-after'] = String(SPOOL_RETRY_AFTER_S);
  res.writeHead(status, headers);
  res.flushHeaders();
  req.resume();
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    clearTimeout(linger);
    res.end();
  };
  const linger = setTimeout(close, LINGER_MS);
  req.once('end', close);
  req.once('close', close);
}

/** A connection ended as the worker's did: a reset when the worker's was reset, a close otherwise. */
function endLike(socket: Socket | null, err: NodeJS.ErrnoException | undefined): void {
  if (!socket || socket.destroyed) return;
  // A unix socket has no reset: the proxy reads its close before headers as one.
  if ((err?.code === 'ECONNRESET' || err?.code === 'EPIPE') && socket.remoteAddress !== undefined) socket.resetAndDestroy();
  else socket.destroy();
}

export class Dispatcher {
  /** Workers that listen, in the order they came. */
  private readonly workers: WorkerSlot[] = [];
  private readonly queue: Waiting[] = [];
  /** Bodies spooled since start: each file's name. */
  private spooled = 0;
  /** Bytes in the spool directory now, every body's together: what --spool-max-size bounds. */
  spooledBytes = 0;
  /** Requests sent again after their worker died: a second death fails them. */
  private readonly resent = new WeakSet<IncomingMessage>();
  /** php-fpm's "max listen queue" and "max active processes", since the pool started. */
  maxQueued = 0;
  maxActive = 0;

  constructor(
    /** --listen-backlog: requests that may wait; a SIGHUP may change it. */
    public bound: number,
    /** --worker-concurrency; a SIGHUP may change it (setConcurrency). */
    private concurrency: number,
    /** A private directory for bodies read before their worker is chosen. */
    private readonly spoolDir: string,
    /** --spool-max-size: the bytes that directory may hold (0 = no bound); a SIGHUP may change it. */
    public spoolMax: number,
    private readonly events: DispatcherEvents,
  ) {}

  get queued(): number {
    return this.queue.length;
  }

  /** Workers with a request relayed to them in flight. */
  get activeCount(): number {
    return this.workers.filter((slot) => slot.inFlight > 0).length;
  }

  /** The workers that take requests, for the pool's maintenance and the table it publishes. */
  serving(): readonly WorkerSlot[] {
    return this.workers;
  }

  /** A new --worker-concurrency: a higher one lets queued requests go at once. */
  setConcurrency(concurrency: number): void {
    this.concurrency = concurrency;
    this.drain();
  }

  /** A worker that listens: it takes queued requests, or waits. */
  add(slot: WorkerSlot): void {
    this.workers.push(slot);
    this.drain();
  }

  /** Its event loop stopped or started turning again. */
  setBlocked(slot: WorkerSlot, blocked: boolean): void {
    slot.blocked = blocked;
    if (!blocked) this.drain();
  }

  /** A worker that is to take no more requests (retiring, stopping, gone). */
  remove(slot: WorkerSlot): void {
    slot.accepting = false;
    const at = this.workers.indexOf(slot);
    if (at >= 0) this.workers.splice(at, 1);
    // Its connections are closed once its requests (if any) end.
    if (slot.inFlight === 0) slot.agent.destroy();
  }

  /** Forgets a worker that exited; what it ran has failed with its connection. */
  gone(slot: WorkerSlot): void {
    this.remove(slot);
    slot.inFlight = 0;
    slot.running.length = 0;
    slot.agent.destroy();
  }

  handle(req: IncomingMessage, res: ServerResponse): void {
    const length = req.headers['transfer-encoding'] === undefined ? Number(req.headers['content-length'] ?? 0) : Infinity;
    if (length === 0) return this.dispatch(req, res, undefined);
    if (!(length <= BODY_READ_FIRST)) {
      if (this.concurrency === 0) return this.dispatch(req, res, undefined);
      if (this.spoolMax > 0 && length !== Infinity && length > this.spoolMax) {
        this.events.spoolTooLarge(req, length, this.spoolMax);
        return refuseUnread(req, res, 413);
      }
      return this.spool(req, res);
    }
    const body: Buffer[] = [];
    const read = (chunk: Buffer) => body.push(chunk);
    // A client that leaves meanwhile ends nothing: no 'end', and no worker was taken.
    req.on('data', read);
    req.once('end', () => {
      req.off('data', read);
      this.dispatch(req, res, body);
    });
  }

  /**
   * Writes the body to a file of the spool directory, then dispatches it; a client that leaves takes it away. Each
   * chunk is counted against --spool-max-size before it is written: one that would pass it ends the body's file
   * and the request is answered 503.
   */
  private spool(req: IncomingMessage, res: ServerResponse): void {
    const file = join(this.spoolDir, `body-${++this.spooled}`);
    const out = createWriteStream(file, { flags: 'wx', mode: 0o600 });
    let held = 0;
    let full = false;
    const drop = () => {
      this.spooledBytes -= held;
      held = 0;
      void rm(file, { force: true });
    };
    res.once('close', drop);
    const meter = new Transform({
      transform: (chunk: Buffer, _encoding, done) => {
        if (this.spoolMax > 0 && this.spooledBytes + chunk.length > this.spoolMax) {
          full = true;
          return done(new Error('--spool-max-size reached'));
        }
        this.spooledBytes += chunk.length;
        held += chunk.length;
        done(null, chunk);
      },
    });
    // Not pipeline(req, …): its failure would destroy the request and with it the connection the 503 goes back on.
    req.pipe(meter);
    req.once('close', () => {
      if (!req.complete) meter.destroy(new Error('the client left'));
    });
    pipeline(meter, out).then(
      () => this.dispatch(req, res, { file }),
      (err: Error) => {
        if (full) {
          this.events.spoolFull(req, this.spoolMax);
          drop();
          return refuseUnread(req, res, 503);
        }
        // The client left mid-body, or the disk refused it (then the proxy answers its 500 page).
        if (!res.destroyed && !req.destroyed) this.events.spoolFailed(req, err);
        res.destroy();
      },
    );
  }

  private dispatch(req: IncomingMessage, res: ServerResponse, body: ReadBody | undefined): void {
    if (this.events.answerWithoutWorker(req, res)) return;
    const decision = route(this.workers, this.concurrency, this.queue.length, this.bound);
    if ('send' in decision) return this.relay(decision.send, req, res, body);
    this.events.noIdleWorker();
    if ('refuse' in decision) {
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
        this.workers.flatMap((slot) => slot.running.map(({ label }) => label)),
      );
    });
  }

  /** Sends queued requests to workers with room, first come first served. */
  private drain(): void {
    while (this.queue.length > 0) {
      const slot = route(this.workers, this.concurrency, 0, this.bound);
      if (!('send' in slot)) return;
      const next = this.queue.shift()!;
      this.relay(slot.send, next.req, next.res, next.body);
    }
  }

  private release(slot: WorkerSlot, relayed: Relayed): void {
    const at = slot.running.indexOf(relayed);
    if (at < 0) return; // gone meanwhile
    slot.running.splice(at, 1);
    slot.inFlight -= 1;
    if (slot.inFlight === 0) {
      slot.idleSince = performance.now();
      if (!slot.accepting) slot.agent.destroy();
    }
    this.drain();
  }

  private relay(slot: WorkerSlot, req: IncomingMessage, res: ServerResponse, body: ReadBody | undefined): void {
    const withoutBody = req.headers['transfer-encoding'] === undefined && Number(req.headers['content-length'] ?? 0) === 0;
    const relayed: Relayed = {
      label: `${req.method} ${req.url}`,
      requestId: requestIdOf(req.headers),
      resendable: (req.method === 'GET' || req.method === 'HEAD') && withoutBody,
    };
    const sentAt = performance.now();
    slot.inFlight += 1;
    slot.running.push(relayed);
    const active = this.activeCount;
    if (active > this.maxActive) this.maxActive = active;
    let clean = false;
    let early = false;
    const upstream = slot.target.request({
      agent: slot.agent,
      method: req.method,
      path: req.url,
      headers: endToEnd(req.rawHeaders),
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
    upstream.on('error', (err: NodeJS.ErrnoException) => {
      // Nothing reached a worker that is gone (it exited a moment ago, and its exit is not handled yet): another takes
      // the request, if its body can be sent again (it has none, or it was read before a worker was chosen).
      const resendable = body !== undefined || withoutBody;
      if (NOT_LISTENING.has(err.code ?? '') && resendable && !res.headersSent && !res.destroyed) {
        this.remove(slot);
        return this.dispatch(req, res, body);
      }
      // Its worker died with it: a GET or HEAD that did not cause the death goes once to another worker, as the
      // proxies do with what they send a worker directly.
      if (relayed.resendable && !res.headersSent && !res.destroyed && !this.resent.has(req)) {
        const lost = { requestId: relayed.requestId ?? '', resendable: true, resent: false, sentMs: performance.now() - sentAt };
        this.events.fateOf(slot).then(
          (end) => {
            if (res.headersSent || res.destroyed || !sendAgainAfterLoss(lost, end)) return endLike(req.socket, err);
            this.resent.add(req);
            this.dispatch(req, res, undefined);
          },
          () => endLike(req.socket, err),
        );
        return;
      }
      endLike(req.socket, err);
    });
    upstream.on('close', () => {
      // At one request a worker, one whose answer did not complete may still run its controller (the proxy
      // left mid-request): it stays busy until it ends, as php-fpm's child. A worker that runs many needs no wait.
      if ((clean && !early) || this.concurrency !== 1) return this.release(slot, relayed);
      this.events.whenIdle(slot).then(
        () => this.release(slot, relayed),
        () => undefined,
      );
    });
    // The proxy left (its client did, or its timer fired): the worker sees its client close, as before.
    res.once('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    if (Array.isArray(body)) {
      for (const chunk of body) upstream.write(chunk);
      upstream.end();
    } else if (body) createReadStream(body.file).pipe(upstream);
    else req.pipe(upstream);
  }
}
