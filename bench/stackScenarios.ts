// The whole-stack scenarios (bench/stack.ts): a controller answering JSON at once and one awaiting 200 ms
// first, each written as an extqs controller, as the Node stack floor's answer (clusterFloor.ts) and as a PHP
// script for php-fpm, all answering the same bytes; and the targets each scenario is held to.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** How long the awaiting controller waits before it answers, in every stack. */
export const AWAIT_MS = 200;

/** What each target compares: extqs's req/s or whole-stack CPU per request against another stack's, same run. */
export interface StackTargets {
  /** extqs's req/s at least this many times the Node stack floor's. */
  floorRate?: number;
  /** extqs's req/s at least this many times nginx + php-fpm's. */
  phpRate?: number;
  /** extqs's whole-stack CPU per request at most this many times the floor's. */
  floorCpu?: number;
  /** No request failed or answered other than 200, over every round. */
  noneFailed?: true;
}

export interface StackScenario {
  name: string;
  /** The controller (extqs), the floor's route and the PHP script (`<controller>.php`). */
  controller: 'Echo' | 'Wait';
  connections: number;
  targets: StackTargets;
}

// docs/benchmarks.md, "The whole stack": the targets against the Node stack floor and nginx + php-fpm.
export const STACK_SCENARIOS: StackScenario[] = [
  { name: 'stack: controller JSON', controller: 'Echo', connections: 50, targets: { floorRate: 0.5, phpRate: 1.5, floorCpu: 2 } },
  {
    name: `stack: controller awaiting ${AWAIT_MS} ms`,
    controller: 'Wait',
    connections: 100,
    targets: { floorRate: 0.9, noneFailed: true },
  },
];

const QUERY = 'sn=123&no=1';
export const stackPath = (scenario: StackScenario) => `/External/${scenario.controller}?${QUERY}`;

/** The answer every stack gives, from the request's query: the same object extqs's Echo controller returns. */
export function stackAnswer(query: URLSearchParams): { sn: string | null; no: string | null; ok: true } {
  return { sn: query.get('sn'), no: query.get('no'), ok: true };
}

/** The body every stack answers to `stackPath`, byte for byte. */
export const STACK_ANSWER_BODY = JSON.stringify(stackAnswer(new URLSearchParams(QUERY)));

const PHP_ANSWER = `header('Content-Type: application/json; charset=utf-8');\necho json_encode(['sn' => $_GET['sn'] ?? null, 'no' => $_GET['no'] ?? null, 'ok' => true]);\n`;

/** The awaiting controller into `controllers` (Echo.ts is bench/scenarios.ts's `writeSite`), both PHP scripts into `phpDir`. */
export function writeStackSite(controllers: string, phpDir: string): void {
  writeFileSync(
    join(controllers, 'Wait.ts'),
    `export default async ({ query }: any) => {\n  await new Promise((r) => setTimeout(r, ${AWAIT_MS}));\n  return { sn: query.sn, no: query.no, ok: true };\n};\n`,
  );
  writeFileSync(join(phpDir, 'Echo.php'), `<?php\n${PHP_ANSWER}`);
  writeFileSync(join(phpDir, 'Wait.php'), `<?php\nusleep(${AWAIT_MS * 1000});\n${PHP_ANSWER}`);
}
