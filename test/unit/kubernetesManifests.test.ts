// deploy/kubernetes/ validated offline against the Kubernetes API's JSON schemas (kubernetes-models), and its
// settings held to the settings table: every EXTQS_ name is a setting's, every value parses, and the grace
// period covers preStop plus the launcher's worst-case stop (docs/design.md §8.2's extqs.service rule).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { parseAllDocuments } from 'yaml';
import { ConfigMap, Service } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { readConfig } from '../../common/config.ts';
import { SETTING_KEYS, specOf } from '../../common/settings.ts';
import { makeSandbox, ROOT } from '../helpers/stack.ts';

const DIR = join(ROOT, 'deploy/kubernetes');
type Doc = { kind: string; metadata: { name: string }; [key: string]: unknown };
const MODELS: Record<string, new (doc: never) => { validate(): void }> = {
  ConfigMap,
  Service,
  Deployment,
  PodDisruptionBudget,
  HorizontalPodAutoscaler,
};

const docs: Doc[] = readdirSync(DIR)
  .filter((file) => file.endsWith('.yaml'))
  .flatMap((file) => parseAllDocuments(readFileSync(join(DIR, file), 'utf8')).map((doc) => doc.toJS() as Doc));
const find = (kind: string, name: string) => docs.find((doc) => doc.kind === kind && doc.metadata.name === name)!;

describe('the Kubernetes manifests', function () {
  it('hold each object the deployment needs', function () {
    expect(docs.map((doc) => `${doc.kind}/${doc.metadata.name}`).sort()).to.deep.equal([
      'ConfigMap/extqs-controllers',
      'ConfigMap/extqs-settings',
      'Deployment/extqs',
      'HorizontalPodAutoscaler/extqs',
      'PodDisruptionBudget/extqs',
      'Service/extqs',
    ]);
  });

  for (const doc of docs) {
    it(`${doc.kind}/${doc.metadata.name} is valid against the API's schema`, function () {
      const Model = MODELS[doc.kind];
      expect(Model, doc.kind).to.not.equal(undefined);
      new Model(doc as never).validate();
    });
  }

  it('gives only settings of the table, each with a value the command accepts', function () {
    const data = find('ConfigMap', 'extqs-settings').data as Record<string, string>;
    const known = new Set(SETTING_KEYS.map((key) => specOf(key).env));
    for (const name of Object.keys(data)) expect(known.has(name), name).to.equal(true);
    const sandbox = makeSandbox();
    try {
      const config = readConfig('start', [], { ...data, EXTQS_WWW_ROOT: sandbox.www }, sandbox.dir);
      expect(config.logs).to.equal('-');
    } finally {
      sandbox.remove();
    }
  });

  it('lets a stop finish: grace period ≥ preStop + proxy stop + host stop', function () {
    const data = find('ConfigMap', 'extqs-settings').data as Record<string, string>;
    const pod = (find('Deployment', 'extqs') as unknown as { spec: { template: { spec: PodSpec } } }).spec.template.spec;
    const preStop = Number(pod.containers[0].lifecycle.preStop.exec.command[1]);
    const shutdown = Number(data.EXTQS_SHUTDOWN_TIMEOUT);
    // The launcher stops the proxy (up to the timeout), then the host (the timeout, then 5 s to kill its workers and 5 to exit).
    expect(pod.terminationGracePeriodSeconds).to.be.at.least(preStop + shutdown + shutdown + 10);
    expect(pod.containers[0].livenessProbe.httpGet.path).to.equal('/-/healthy');
    expect(pod.containers[0].readinessProbe.httpGet.path).to.equal('/-/ready');
  });
});

interface PodSpec {
  terminationGracePeriodSeconds: number;
  containers: {
    lifecycle: { preStop: { exec: { command: string[] } } };
    livenessProbe: { httpGet: { path: string } };
    readinessProbe: { httpGet: { path: string } };
  }[];
}
