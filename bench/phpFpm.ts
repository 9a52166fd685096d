// php-fpm for the bench's nginx + php-fpm stack: pm static with one child per CPU, as `npm start` runs one
// host worker per CPU, from a configuration written into the bench's directory, listening on a unix socket
// there, in the foreground, ready once the socket accepts connections; stopped by its PID.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { accepts } from '../tools/ports.ts';

export const PHP_FPM = 'php-fpm8.2';

export function hasPhpFpm(): boolean {
  try {
    execFileSync(PHP_FPM, ['-v'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** php-fpm with `children` static children in `dir`, listening on `<dir>/php-fpm.sock`. */
export async function startPhpFpm(dir: string, children: number): Promise<{ socket: string; child: ChildProcess }> {
  const socket = join(dir, 'php-fpm.sock');
  // As root (a container), php-fpm wants its pool's user named and `--allow-to-run-as-root`; otherwise it runs as its caller.
  const asRoot = process.getuid?.() === 0;
  const conf = [
    '[global]',
    `pid = ${join(dir, 'php-fpm.pid')}`,
    `error_log = ${join(dir, 'php-fpm.log')}`,
    'daemonize = no',
    '[bench]',
    ...(asRoot ? ['user = root', 'group = root'] : []),
    `listen = ${socket}`,
    'pm = static',
    `pm.max_children = ${children}`,
  ].join('\n');
  writeFileSync(join(dir, 'php-fpm.conf'), `${conf}\n`);
  const child = spawn(
    PHP_FPM,
    ['--nodaemonize', '--fpm-config', join(dir, 'php-fpm.conf'), ...(asRoot ? ['--allow-to-run-as-root'] : [])],
    {
      stdio: 'inherit',
    },
  );
  const exited = once(child, 'exit');
  for (let i = 0; i < 100; i++) {
    if (child.exitCode !== null) break;
    if (await accepts(socket)) return { socket, child };
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGTERM');
  await exited;
  throw new Error(`${PHP_FPM} did not start: see ${join(dir, 'php-fpm.log')}`);
}

/** php-fpm's graceful stop (SIGQUIT: its children finish their requests), awaited. */
export async function stopPhpFpm(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGQUIT');
  await exited;
}
