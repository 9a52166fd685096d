// A scratch install for a test or a bench run: a temp directory holding an empty www/public,
// www/controllers and logs/, as the default install has them.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Sandbox {
  dir: string;
  www: string;
  logs: string;
  controllers: string;
  publicDir: string;
  remove(): void;
}

/** A temp directory holding an empty www/public, www/controllers and logs/: the default install. */
export function makeSandbox(): Sandbox {
  const dir = mkdtempSync(join(tmpdir(), 'extqs-test-'));
  const www = join(dir, 'www');
  const controllers = join(www, 'controllers');
  const publicDir = join(www, 'public');
  const logs = join(dir, 'logs');
  for (const d of [controllers, publicDir, logs]) mkdirSync(d, { recursive: true });
  return { dir, www, logs, controllers, publicDir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
