// One autocannon run, in a process of its own so the load generator never shares an event loop with
// what it measures.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const AUTOCANNON = fileURLToPath(new URL('../node_modules/autocannon/autocannon.js', import.meta.url));

export interface LoadResult {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  total: number;
  /** Responses with the status the scenario expects. */
  expected: number;
  /** Responses with any other status. */
  unexpected: number;
  errors: number;
  timeouts: number;
}

export function runLoad(url: string, expectedStatus: number, seconds: number, connections = 50): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [AUTOCANNON, '-c', String(connections), '-d', String(seconds), '-j', '-n', url],
      { maxBuffer: 64 * 1024 * 1024 },
      (err, stdout) => {
        if (err) return reject(new Error(`autocannon failed: ${err.message}`, { cause: err }));
        const r = JSON.parse(stdout);
        const byStatus: Record<string, { count: number }> = r.statusCodeStats ?? {};
        const total = Object.values(byStatus).reduce((sum, s) => sum + s.count, 0);
        const expected = byStatus[String(expectedStatus)]?.count ?? 0;
        resolve({
          requestsPerSecond: r.requests.average,
          p50: r.latency.p50,
          p99: r.latency.p99,
          total,
          expected,
          unexpected: total - expected,
          errors: r.errors,
          timeouts: r.timeouts,
        });
      },
    );
  });
}
