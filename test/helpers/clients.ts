// The real clients an operator points at an HTTPS server (curl, openssl s_client, nghttp, h2load), run
// as child processes without blocking the test's event loop.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface CurlReply {
  status: number;
  /** `2` or `1.1`, as curl negotiated it. */
  httpVersion: string;
  headers: Record<string, string>;
  body: Buffer;
}

/** curl `args` (`--http2`, `-H …`) against `url`, trusting `caFile` or, without one, any certificate. */
export async function curl(url: string, args: string[] = [], caFile?: string): Promise<CurlReply> {
  const dir = mkdtempSync(join(tmpdir(), 'extqs-curl-'));
  try {
    const trust = caFile ? ['--cacert', caFile] : ['--insecure'];
    const { stdout } = await run('curl', [
      '--silent',
      '--show-error',
      ...trust,
      '--dump-header',
      join(dir, 'head'),
      '--output',
      join(dir, 'body'),
      '--write-out',
      '%{http_code} %{http_version}',
      ...args,
      url,
    ]);
    const [status, httpVersion] = stdout.trim().split(' ');
    const headers: Record<string, string> = {};
    for (const line of readFileSync(join(dir, 'head'), 'latin1').split('\r\n').slice(1)) {
      const colon = line.indexOf(':');
      if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    // curl writes no body file for an answer without a body (304, HEAD).
    const body = existsSync(join(dir, 'body')) ? readFileSync(join(dir, 'body')) : Buffer.alloc(0);
    return { status: Number(status), httpVersion, headers, body };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `openssl s_client` to `port` with `args`, its stdin `input`; stdout and stderr together (it never fails). */
export async function sClient(port: number, args: string[], input = ''): Promise<string> {
  return new Promise((resolve) => {
    const child = execFile(
      'openssl',
      ['s_client', '-connect', `127.0.0.1:${port}`, '-servername', 'localhost', ...args],
      { timeout: 10_000 },
      (_err, stdout, stderr) => resolve(`${stdout}\n${stderr}`),
    );
    child.stdin?.end(input);
  });
}

/** A tool's stdout and stderr, whatever its exit status. */
export async function output(command: string, args: string[], timeoutMs = 60_000): Promise<string> {
  try {
    const { stdout, stderr } = await run(command, args, { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
    return `${stdout}\n${stderr}`;
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: string; stderr?: string };
    return `${stdout ?? ''}\n${stderr ?? ''}`;
  }
}
