// Tables keyed by a word a client chose (a controller name, a header field name) with the words that
// resolve to something on a plain object: each must come out as an ordinary row, Object.prototype untouched.
import type { IncomingMessage } from 'node:http';
import { expect } from 'chai';
import { AggregatorRegistry } from 'prom-client';
import {
  addDeparted,
  departedNone,
  MAX_CONTROLLER_ROWS,
  MISSING_CONTROLLERS,
  OTHER_CONTROLLERS,
  summarize,
  WorkerStats,
  type WorkerSnapshot,
} from '../../host/wire/stats.ts';
import { forwardedHeaders, responseHeaders } from '../../proxy/forward/forwarding.ts';
import { hostMetricsJson } from '../../proxy/observe/hostMetrics.ts';
import { renderAuto, renderHtml, renderJson, type HostSummary } from '../../proxy/observe/statusPage.ts';
import { NO_POOL } from '../helpers/poolFields.ts';
import { contextFor } from '../helpers/requestContext.ts';

const HOSTILE_KEYS: readonly string[] = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '__defineGetter__',
];

/** Every key `table` would find on its prototype chain: none for a table of client-chosen words. */
function inheritedKeys(table: object): (string | symbol)[] {
  const keys: (string | symbol)[] = [];
  for (let proto = Object.getPrototypeOf(table) as object | null; proto; proto = Object.getPrototypeOf(proto) as object | null)
    keys.push(...Reflect.ownKeys(proto));
  return keys;
}

/** A snapshot as it crosses IPC and /status: JSON, whose parse makes `__proto__` an own key. */
function overTheWire(stats: WorkerStats): WorkerSnapshot {
  return JSON.parse(JSON.stringify(stats.snapshot())) as WorkerSnapshot;
}

function workerThatServed(names: readonly string[], times: number): WorkerStats {
  const stats = new WorkerStats();
  for (const name of names) {
    const counters = stats.controller(name);
    counters.requests += times;
    counters.errors += 1;
    stats.loaded(name, `v-${name}`, 'reload');
  }
  return stats;
}

describe('tables keyed by names a client chose', () => {
  afterEach(() => {
    // Were any of them written through, every object in the process would show it.
    for (const key of ['requests', 'errors', 'loadFailures', 'reloads', 'versions', 'lastReload']) {
      expect(Object.prototype, `Object.prototype.${key}`).not.to.have.property(key);
    }
  });

  it("counts each hostile controller name as its own row in a worker's counters, a departed worker's and the pool's sum", () => {
    const a = overTheWire(workerThatServed(HOSTILE_KEYS, 3));
    const b = overTheWire(workerThatServed(HOSTILE_KEYS, 2));
    const departed = departedNone();
    addDeparted(departed, a);
    addDeparted(departed, a);
    const status = summarize(1, 'start', [b], departed, NO_POOL, false);
    // The JSON /status and the proxy read it back from: every name an own row with numbers in it.
    const read = JSON.parse(JSON.stringify(status)) as typeof status;
    for (const name of HOSTILE_KEYS) {
      expect(Object.hasOwn(departed.controllers, name), `departed ${name}`).to.equal(true);
      expect(departed.controllers[name]).to.deep.equal({ requests: 6, errors: 2, loadFailures: 0, reloads: 2 });
      expect(Object.hasOwn(read.controllers, name), `summed ${name}`).to.equal(true);
      expect(read.controllers[name]).to.include({ requests: 8, errors: 3, loadFailures: 0, reloads: 3 });
      expect(read.controllers[name].versions).to.deep.equal([`v-${name}`]);
    }
    expect(Object.keys(read.controllers)).to.have.members([...HOSTILE_KEYS]);
  });

  it('keeps at most MAX_CONTROLLER_ROWS rows, the rest under (other), in a worker and in the sums', () => {
    const names = Array.from({ length: MAX_CONTROLLER_ROWS * 2 }, (_, i) => `C${i}`);
    const stats = new WorkerStats();
    stats.controller(MISSING_CONTROLLERS).requests += 1;
    for (const name of names) stats.controller(name).requests += 1;
    const snapshot = overTheWire(stats);
    expect(Object.keys(snapshot.controllers)).to.have.length(MAX_CONTROLLER_ROWS);
    expect(snapshot.controllers[MISSING_CONTROLLERS].requests).to.equal(1);
    // Every request is still counted: the rows that did not fit are in (other).
    const counted = Object.values(snapshot.controllers).reduce((sum, c) => sum + c.requests, 0);
    expect(counted).to.equal(names.length + 1);
    expect(snapshot.controllers[OTHER_CONTROLLERS].requests).to.equal(names.length - (MAX_CONTROLLER_ROWS - 2));

    // Workers that each saw other names: the pool's sum is bounded the same way and loses no request.
    const other = new WorkerStats();
    for (const name of names.map((n) => `${n}b`)) other.controller(name).requests += 1;
    const departed = departedNone();
    addDeparted(departed, overTheWire(other));
    const status = summarize(1, 'start', [snapshot, overTheWire(other)], departed, NO_POOL, false);
    expect(Object.keys(status.controllers).length).to.be.at.most(MAX_CONTROLLER_ROWS);
    expect(Object.keys(departed.controllers).length).to.be.at.most(MAX_CONTROLLER_ROWS);
    expect(Object.values(status.controllers).reduce((sum, c) => sum + c.requests, 0)).to.equal(names.length * 3 + 1);
  });

  it('labels /metrics series and /server-status rows with the hostile names as they are', async () => {
    const summary = JSON.parse(
      JSON.stringify({
        pid: 1,
        workers: 1,
        states: { idle: 1 },
        acceptedRequests: 7,
        controllers: Object.fromEntries(HOSTILE_KEYS.map((name) => [name, { requests: 1, errors: 0, loadFailures: 1, reloads: 0 }])),
      }),
    ) as HostSummary;
    const hosts = [{ upstream: 'unix:/run/h.sock', summary }];
    const text = await AggregatorRegistry.aggregate([await hostMetricsJson(hosts)]).metrics();
    for (const name of HOSTILE_KEYS) {
      expect(text).to.contain(`extqs_host_controller_requests_total{upstream="unix:/run/h.sock",controller="${name}"} 1\n`);
    }
    const report = {
      serverVersion: 'extqs',
      now: new Date(),
      startedAt: new Date(),
      requests: 0,
      bytes: 0,
      inFlight: 0,
      connections: 0,
      statuses: {},
      upstreams: [],
      hosts,
    };
    const html = renderHtml(report, undefined);
    for (const name of HOSTILE_KEYS) expect(html).to.contain(`<td>${name}</td>`);
    expect(
      Object.keys((JSON.parse(renderJson(report)) as { hosts: { summary: HostSummary }[] }).hosts[0].summary.controllers),
    ).to.have.members([...HOSTILE_KEYS]);
    expect(renderAuto(report)).to.contain('HostWorkers: unix:/run/h.sock');
  });

  it('forwards header fields named like Object.prototype members as fields, in both directions', () => {
    // HTTP/2 gives the server a null-prototype header object that can hold `__proto__`.
    const incoming = Object.assign(Object.create(null) as Record<string, string | string[]>, { host: 'h', ':path': '/' });
    for (const name of HOSTILE_KEYS) incoming[name] = `v-${name}`;
    const req = { headers: incoming, socket: { remoteAddress: '127.0.0.1', encrypted: false } } as unknown as IncomingMessage;
    const out = forwardedHeaders(contextFor(req));
    const back = responseHeaders(out);
    for (const headers of [out, back]) {
      for (const name of HOSTILE_KEYS) {
        expect(Object.hasOwn(headers, name), name).to.equal(true);
        expect(headers[name]).to.equal(`v-${name}`);
      }
      expect(inheritedKeys(headers)).to.deep.equal([]);
    }
  });
});
