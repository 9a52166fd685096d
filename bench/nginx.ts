// nginx for the bench, from a configuration template in bench/ whose __NAMES__ are filled in, one worker,
// started in the foreground and ready once its port accepts connections.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { accepts } from '../tools/ports.ts';
import { freePort } from './measure.ts';
import { ROOT } from './processes.ts';

export function hasNginx(): boolean {
  try {
    execFileSync('nginx', ['-v'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** nginx with `bench/<template>` in `dir`, `__DIR__` and `__PORT__` filled in, then `names`. */
export async function startNginx(
  template: string,
  dir: string,
  names: Record<string, string>,
): Promise<{ port: number; child: ChildProcess }> {
  const port = await freePort();
  mkdirSync(join(dir, 'tmp'), { recursive: true });
  let conf = readFileSync(join(ROOT, 'bench', template), 'utf8')
    .replaceAll('__DIR__', dir)
    .replaceAll('__PORT__', String(port));
  for (const [name, value] of Object.entries(names)) conf = conf.replaceAll(`__${name}__`, value);
  writeFileSync(join(dir, 'nginx.conf'), conf);
  const child = spawn('nginx', ['-c', join(dir, 'nginx.conf'), '-p', dir], { stdio: 'inherit' });
  for (let i = 0; i < 100; i++) {
    if (await accepts(port)) return { port, child };
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('nginx did not start');
}

/** nginx's graceful stop (SIGQUIT: its workers finish their connections), awaited. */
export async function stopNginx(child: ChildProcess): Promise<void> {
  child.kill('SIGQUIT');
  await once(child, 'exit');
}
