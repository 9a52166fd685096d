// extqs's version, from package.json: found above this module, which is common/version.ts in the
// sources and build/common/version.js when built.
import { readFileSync } from 'node:fs';

function readVersion(): string {
  for (const path of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(path, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'extqs' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // Not at this level: try the next one up.
    }
  }
  return 'unknown';
}

export const VERSION = readVersion();
