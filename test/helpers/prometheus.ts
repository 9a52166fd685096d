// Debian's prometheus, run for a test: it scrapes one target every second, its data in the test's sandbox.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../../tools/ports.ts';
import { get } from './http.ts';
import { eventually } from './stack.ts';

export interface Prometheus {
  process: ChildProcess;
  /** Its HTTP API. */
  api: string;
  log: () => string;
  stop(): Promise<void>;
}

/** Debian's prometheus scraping `target` (host:port) every second, its data in the sandbox; resolves once it is ready. */
export async function startPrometheus(sandbox: { dir: string }, target: string): Promise<Prometheus> {
  const port = await freePort();
  const config = join(sandbox.dir, 'prometheus.yml');
  writeFileSync(
    config,
    [
      'global:',
      '  scrape_interval: 1s',
      '  scrape_timeout: 1s',
      'scrape_configs:',
      '  - job_name: extqs',
      '    metrics_path: /metrics',
      '    static_configs:',
      `      - targets: ['${target}']`,
      '',
    ].join('\n'),
  );
  let log = '';
  const child = spawn(
    'prometheus',
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(sandbox.dir, 'prometheus-data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout.on('data', (chunk) => (log += chunk));
  child.stderr.on('data', (chunk) => (log += chunk));
  const prometheus: Prometheus = {
    process: child,
    api: `http://127.0.0.1:${port}`,
    log: () => log,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    },
  };
  try {
    await eventually(
      async () => {
        if (child.exitCode !== null) throw new Error(`prometheus exited: ${log}`);
        return (await get(prometheus.api, '/-/ready').catch(() => undefined))?.status === 200 ? true : undefined;
      },
      20_000,
      "Prometheus's readiness",
    );
  } catch (err) {
    await prometheus.stop();
    throw err;
  }
  return prometheus;
}

/** The value of a query that selects one series, as Prometheus's API answers it now; undefined when none. */
export async function queried(prometheus: Prometheus, query: string): Promise<number | undefined> {
  const res = await get(prometheus.api, `/api/v1/query?query=${encodeURIComponent(query)}`);
  const result = JSON.parse(res.body).data?.result as { value: [number, string] }[] | undefined;
  return result?.length === 1 ? Number(result[0].value[1]) : undefined;
}
