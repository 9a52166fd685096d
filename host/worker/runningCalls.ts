// The controller requests a worker is running, from the handler's start to its end (the answer may
// have gone long before: a controller that ignored its abort signal still runs). The pool sends a
// worker nothing new until there are none (host/pool/dispatcher.ts), as php-fpm counts a child busy; and a worker
// about to die of a known cause names each in its death line (selfKill.ts), as the primary knows only those it relayed.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { HeldRequest } from '../wire/poolMessages.ts';

export class RunningCalls {
  private readonly held = new Map<FastifyRequest, FastifyReply>();
  private waiters: (() => void)[] = [];

  begin(request: FastifyRequest, reply: FastifyReply): void {
    this.held.set(request, reply);
  }

  end(request: FastifyRequest): void {
    this.held.delete(request);
    if (this.held.size > 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }

  /** Resolves once no request runs. */
  whenNone(): Promise<void> {
    if (this.held.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Each request running now, and whether a proxy would send it again were the worker to die now. */
  list(): HeldRequest[] {
    return [...this.held].map(([request, reply]) => ({
      requestId: request.id,
      what: `${request.method} ${request.url}`,
      resendable: resendableAfterLoss(request, reply),
    }));
  }
}

/** A GET or HEAD without a body whose answer has not begun: nothing of it was consumed (common/workerLoss.ts). */
function resendableAfterLoss(request: FastifyRequest, reply: FastifyReply): boolean {
  const { headers } = request;
  const bodiless = headers['transfer-encoding'] === undefined && (headers['content-length'] ?? '0') === '0';
  return (request.method === 'GET' || request.method === 'HEAD') && bodiless && !reply.raw.headersSent;
}
