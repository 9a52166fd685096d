// extqs's own package.json and the directory holding it, found above this module: common/ownPackage.ts
// in the sources, build/common/ownPackage.js when built.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface OwnPackage {
  /** The package's directory, with a trailing separator. */
  root: string;
  version?: string;
  exports?: Record<string, { types?: string; default?: string }>;
}

function findOwnPackage(): OwnPackage | undefined {
  for (const up of ['../', '../../']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(`${up}package.json`, import.meta.url), 'utf8')) as { name?: string } & OwnPackage;
      if (pkg.name === 'extqs') return { root: fileURLToPath(new URL(up, import.meta.url)), version: pkg.version, exports: pkg.exports };
    } catch {
      // Not at this level: try the next one up.
    }
  }
  return undefined;
}

export const OWN_PACKAGE = findOwnPackage();
