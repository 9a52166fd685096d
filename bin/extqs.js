#!/usr/bin/env node
// The `extqs` command. It runs the compiled JavaScript in build/, which `npm ci` (the prepare script)
// and `npm run build` make from the TypeScript sources.
import { existsSync } from 'node:fs';
import process from 'node:process';
import { URL } from 'node:url';

const cli = new URL('../build/launcher/cli.js', import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write('extqs: build/ is missing: run `npm run build` (npm ci runs it too)\n');
  process.exit(1);
}
await import(cli.href);
