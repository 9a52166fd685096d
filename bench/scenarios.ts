// The bench's scenarios: the four observed paths, compression's cost and the observed traffic, with the
// statuses each front must answer (a run with any other fails its row), and the site they are run against.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Sandbox } from '../tools/sandbox.ts';

export interface Scenario {
  name: string;
  /** Requested in turn on every connection. */
  paths: string[];
  /** Request fields sent with every request (Accept-Encoding for the compression scenarios). */
  headers?: Record<string, string>;
  /** The Node floor does not compress: it sits these out. */
  compressed?: true;
  /** Statuses each front is expected to answer (nginx passes on the host's empty 500 for a missing controller). */
  expected: { extqs: number[]; nginx: number[] };
  /** Its controllers all have no file: the host floor (hostFloor.ts) takes it too. */
  hostFloor?: true;
  /** Minimum req/s ratio to nginx, same run (docs/benchmarks.md). */
  target?: number;
}

const OBSERVED_PATHS: Scenario[] = [
  { name: 'controller JSON', paths: ['/External/Echo?sn=123&no=1'], expected: { extqs: [200], nginx: [200] }, target: 0.8 },
  {
    name: 'missing controller',
    paths: ['/External/Latest?sn=123&no='],
    hostFloor: true,
    expected: { extqs: [500], nginx: [500] },
    target: 1.5,
  },
  { name: 'missing favicon', paths: ['/favicon.ico'], expected: { extqs: [404], nginx: [404] }, target: 0.7 },
  { name: 'small static (1.4 KB)', paths: ['/index.html'], expected: { extqs: [200], nginx: [200] }, target: 0.8 },
];

// Compression's cost (nginx: gzip on, level 6; nginx-light has no brotli, so nginx answers br uncoded).
const COMPRESSION: Scenario[] = [
  { name: 'JSON 7 KB', paths: ['/External/Rows'], expected: { extqs: [200], nginx: [200] } },
  {
    name: 'JSON 7 KB gzip',
    paths: ['/External/Rows'],
    headers: { 'Accept-Encoding': 'gzip' },
    compressed: true,
    expected: { extqs: [200], nginx: [200] },
  },
  {
    name: 'JSON 7 KB br',
    paths: ['/External/Rows'],
    headers: { 'Accept-Encoding': 'br' },
    compressed: true,
    expected: { extqs: [200], nginx: [200] },
  },
  {
    name: 'static JS 20 KB gzip',
    paths: ['/app.js'],
    headers: { 'Accept-Encoding': 'gzip' },
    compressed: true,
    expected: { extqs: [200], nginx: [200] },
  },
];

// What the legacy deployment received: the seed's four requests, in turn.
const OBSERVED_TRAFFIC: Scenario = {
  name: 'observed traffic',
  paths: ['/External/Latest?sn=123&no=1', '/External/Latest?sn=123&no=', '/External/Alarm?all_alarm&all', '/favicon.ico'],
  hostFloor: true,
  expected: { extqs: [500, 404], nginx: [500, 404] },
};

export const SCENARIOS: Scenario[] = [...OBSERVED_PATHS, ...COMPRESSION, OBSERVED_TRAFFIC];
/** The observed paths and traffic alone (the HTTPS bench, which asks for gzip and br on every request). */
export const OBSERVED_SCENARIOS: Scenario[] = [...OBSERVED_PATHS, OBSERVED_TRAFFIC];

/** The controllers and files the scenarios ask for (the others are missing on purpose). */
export function writeSite(sandbox: Sandbox): void {
  writeFileSync(join(sandbox.controllers, 'Echo.ts'), `export default ({ query }: any) => ({ sn: query.sn, no: query.no, ok: true });\n`);
  // 7 KB of readings as JSON, and 20 KB of JavaScript: text worth compressing.
  writeFileSync(
    join(sandbox.controllers, 'Rows.ts'),
    `const rows = Array.from({ length: 120 }, (_, i) => ({ id: i, serial: 'SN' + (100000 + i), value: Math.round(Math.sin(i) * 1000) / 10, status: i % 7 ? 'ok' : 'alarm' }));\nexport default () => ({ rows });\n`,
  );
  let script = '';
  for (let i = 0; script.length < 20_000; i++) script += `function f${i}(a, b) { return a * ${i} + b; }\n`;
  writeFileSync(join(sandbox.publicDir, 'app.js'), script);
  // A 1.4 KB page, like a small static file of the legacy site.
  writeFileSync(
    join(sandbox.publicDir, 'index.html'),
    `<!DOCTYPE html>\n<html><head><title>extqs</title></head><body>\n${'<p>External Query Service static page.</p>\n'.repeat(32)}</body></html>\n`,
  );
}
