// A steady load for tests that change something under it (a reload, new workers): keep-alive connections,
// each sending its next request shortly after its answer, every answer or error kept with its request.
import { Agent, request } from 'node:http';

export interface LoadSample {
  /** The request's number, in the order they were sent. */
  n: number;
  startedAt: number;
  /** 0 when no answer came (the error says why). */
  status: number;
  body: string;
  error?: string;
}

export interface SteadyLoad {
  samples: LoadSample[];
  /** Resolves once `count` answers (or errors) are in. */
  answers(count: number, timeoutMs?: number): Promise<void>;
  /** Lets every connection finish its request, then closes them. */
  stop(): Promise<void>;
}

/** `connections` loops against `url`, request `n` to `pathOf(n)`, each waiting `pauseMs` after an answer. */
export function steadyLoad(url: string, connections: number, pathOf: (n: number) => string, pauseMs: number): SteadyLoad {
  const { hostname, port } = new URL(url);
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const samples: LoadSample[] = [];
  const waiting = new Set<() => void>();
  let next = 0;
  let running = true;
  const keep = (sample: LoadSample) => {
    samples.push(sample);
    for (const check of waiting) check();
  };
  const once = () =>
    new Promise<void>((resolve) => {
      const n = next++;
      const startedAt = Date.now();
      const req = request({ host: hostname, port, path: pathOf(n), agent }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (body += chunk));
        res.on('end', () => {
          keep({ n, startedAt, status: res.statusCode ?? 0, body });
          resolve();
        });
      });
      req.on('error', (err) => {
        keep({ n, startedAt, status: 0, body: '', error: err.message });
        resolve();
      });
      req.end();
    });
  const loops = Array.from({ length: connections }, async () => {
    while (running) {
      await once();
      await new Promise((r) => setTimeout(r, pauseMs));
    }
  });
  return {
    samples,
    answers: (count, timeoutMs = 30_000) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiting.delete(check);
          reject(new Error(`${samples.length} answers after ${timeoutMs} ms, waiting for ${count}`));
        }, timeoutMs);
        const check = () => {
          if (samples.length < count) return;
          clearTimeout(timer);
          waiting.delete(check);
          resolve();
        };
        waiting.add(check);
        check();
      }),
    async stop() {
      running = false;
      await Promise.all(loops);
      agent.destroy();
    },
  };
}
