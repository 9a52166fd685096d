// Typed requests (with a reply) and notices (without) over a Node IPC channel: a child process and its
// parent, a cluster worker and its primary. Each side declares what it says as a Conversation; a
// message that arrives before its handler is set waits for it instead of being dropped.

/** What one side may say: requests by kind (their body and the reply), and notices by kind. */
export interface Conversation {
  requests: Record<string, { body: unknown; reply: unknown }>;
  notices: Record<string, unknown>;
}

/** The three shapes on the wire; anything else on the channel is not ours and is ignored. */
type Wire =
  | { extqs: 'request'; kind: string; id: number; body: unknown }
  | { extqs: 'reply'; id: number; body?: unknown; error?: string }
  | { extqs: 'notice'; kind: string; body: unknown };

/** A ChildProcess, a cluster Worker, or `process` in a child: what the channel needs of each. */
export interface Endpoint {
  send(message: Wire, callback: (err: Error | null) => void): unknown;
  on(event: 'message', listener: (message: unknown) => void): unknown;
  on(event: 'disconnect', listener: () => void): unknown;
  connected(): boolean;
}

export function childEndpoint(child: {
  send?(message: unknown, callback: (err: Error | null) => void): unknown;
  on(event: string, listener: (...args: never[]) => void): unknown;
  readonly connected: boolean;
}): Endpoint {
  return {
    send: (message, callback) => child.send?.(message, callback),
    on: (event: string, listener: (...args: never[]) => void) => child.on(event, listener),
    connected: () => child.connected,
  };
}

/** This process's channel to its parent (the launcher, or the host's primary for a worker). */
export function parentEndpoint(): Endpoint {
  return childEndpoint(process);
}

const MAX_WAITING = 1_000;

export class IpcChannel<Mine extends Conversation, Theirs extends Conversation> {
  private nextId = 0;
  private readonly pending = new Map<number, { resolve(body: unknown): void; reject(err: Error): void }>();
  private readonly handlers = new Map<string, (wire: Extract<Wire, { kind: string }>) => void>();
  /** Messages for a kind with no handler yet, by kind. */
  private readonly waiting = new Map<string, Extract<Wire, { kind: string }>[]>();

  constructor(private readonly endpoint: Endpoint) {
    endpoint.on('message', (message) => this.receive(message));
    endpoint.on('disconnect', () => {
      for (const waiter of this.pending.values()) waiter.reject(new Error('the IPC channel closed before the answer'));
      this.pending.clear();
    });
  }

  /** Asks the other side; rejects when it answers with an error, after `timeoutMs`, or when the channel is closed. */
  request<K extends keyof Mine['requests'] & string>(
    kind: K,
    body: Mine['requests'][K]['body'],
    timeoutMs: number,
  ): Promise<Mine['requests'][K]['reply']> {
    return new Promise((resolve, reject) => {
      if (!this.endpoint.connected()) {
        reject(new Error(`cannot ask ${kind}: the IPC channel is closed`));
        return;
      }
      const id = this.nextId++;
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`no answer to ${kind} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, {
        resolve: (reply) => {
          clearTimeout(timer);
          resolve(reply);
        },
        reject: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      });
      // A send that failed rejects with its own error, code and all (EPIPE: the other side is dying).
      this.send({ extqs: 'request', kind, id, body }, (err) => this.fail(id, err));
    });
  }

  /** Tells the other side; false when the channel is closed (the notice is dropped). */
  notify<K extends keyof Mine['notices'] & string>(kind: K, body: Mine['notices'][K]): boolean {
    if (!this.endpoint.connected()) return false;
    this.send({ extqs: 'notice', kind, body }, () => {});
    return true;
  }

  /** Answers the other side's `kind` requests; what the handler throws goes back as the error. */
  answer<K extends keyof Theirs['requests'] & string>(
    kind: K,
    handler: (body: Theirs['requests'][K]['body']) => Theirs['requests'][K]['reply'] | Promise<Theirs['requests'][K]['reply']>,
  ): void {
    this.handle(kind, (wire) => {
      if (wire.extqs !== 'request') return;
      Promise.resolve()
        .then(() => handler(wire.body as Theirs['requests'][K]['body']))
        .then(
          (reply) => this.send({ extqs: 'reply', id: wire.id, body: reply }, () => {}),
          (err: unknown) => this.send({ extqs: 'reply', id: wire.id, error: err instanceof Error ? err.message : String(err) }, () => {}),
        );
    });
  }

  /** Calls `handler` for each of the other side's `kind` notices. */
  on<K extends keyof Theirs['notices'] & string>(kind: K, handler: (body: Theirs['notices'][K]) => void): void {
    this.handle(kind, (wire) => {
      if (wire.extqs === 'notice') handler(wire.body as Theirs['notices'][K]);
    });
  }

  private handle(kind: string, handler: (wire: Extract<Wire, { kind: string }>) => void): void {
    this.handlers.set(kind, handler);
    const queued = this.waiting.get(kind) ?? [];
    this.waiting.delete(kind);
    for (const wire of queued) handler(wire);
  }

  private receive(message: unknown): void {
    const wire = message as Partial<Wire> | null;
    if (wire === null || typeof wire !== 'object') return;
    if (wire.extqs === 'reply') {
      this.settle(wire.id!, wire.body, wire.error);
    } else if (wire.extqs === 'request' || wire.extqs === 'notice') {
      const known = wire as Extract<Wire, { kind: string }>;
      const handler = this.handlers.get(known.kind);
      if (handler) {
        handler(known);
        return;
      }
      const queued = this.waiting.get(known.kind) ?? [];
      if (queued.length < MAX_WAITING) queued.push(known);
      this.waiting.set(known.kind, queued);
    }
  }

  private settle(id: number, body: unknown, error: string | undefined): void {
    const waiter = this.pending.get(id);
    if (!waiter) return;
    this.pending.delete(id);
    if (error === undefined) waiter.resolve(body);
    else waiter.reject(new Error(error));
  }

  private fail(id: number, err: Error): void {
    const waiter = this.pending.get(id);
    if (!waiter) return;
    this.pending.delete(id);
    waiter.reject(err);
  }

  private send(message: Wire, onError: (err: Error) => void): void {
    try {
      this.endpoint.send(message, (err) => {
        if (err) onError(err);
      });
    } catch (err) {
      onError(err as Error);
    }
  }
}
