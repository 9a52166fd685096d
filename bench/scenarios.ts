// The bench's scenarios: the four observed paths and the observed traffic, with the statuses each front
// must answer (a run with any other fails its row), and the site they are run against.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Sandbox } from '../tools/sandbox.ts';
export interface Scenario {
  name: string;
  /** Requested in turn on every connection. */
  paths: string[];
  /** Statuses each front is expected to answer (nginx passes on the host's empty 500 for a missing controller). */
  expected: { extqs: number[]; nginx: number[] };
  /** Minimum req/s ratio to nginx, same run (README, Performance). */
  target?: number;
}

export const SCENARIOS: Scenario[] = [
  { name: 'controller JSON', paths: ['/External/Echo?sn=123&no=1'], expected: { extqs: [200], nginx: [200] }, target: 0.8 },
  { name: 'missing controller', paths: ['/External/Latest?sn=123&no='], expected: { extqs: [500], nginx: [500] }, target: 1.5 },
  { name: 'missing favicon', paths: ['/favicon.ico'], expected: { extqs: [404], nginx: [404] }, target: 0.7 },
  { name: 'small static (1.4 KB)', paths: ['/index.html'], expected: { extqs: [200], nginx: [200] }, target: 0.8 },
  // What the legacy deployment received: the seed's four requests, in turn.
  {
    name: 'observed traffic',
    paths: ['/External/Latest?sn=123&no=1', '/External/Latest?sn=123&no=', '/External/Alarm?all_alarm&all', '/favicon.ico'],
    expected: { extqs: [500, 404], nginx: [500, 404] },
  },
];

/** The controller and the page the scenarios ask for (the others are missing on purpose). */
export function writeSite(sandbox: Sandbox): void {
  writeFileSync(join(sandbox.controllers, 'Echo.ts'), `export default ({ query }: any) => ({ sn: query.sn, no: query.no, ok: true });\n`);
  // A 1.4 KB page, like a small static file of the legacy site.
  writeFileSync(
    join(sandbox.publicDir, 'index.html'),
    `<!DOCTYPE html>\n<html><head><title>extqs</title></head><body>\n${'<p>External Query Service static page.</p>\n'.repeat(32)}</body></html>\n`,
  );
}
