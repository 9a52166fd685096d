// deploy/kubernetes/ as `kubectl apply -k` sends it (rendered offline by `kubectl kustomize`), validated against
// the Kubernetes API's JSON schemas (kubernetes-models) and the Prometheus Operator's (ServiceMonitor); its
// settings held to the settings table (every EXTQS_ name is a setting's, every value parses), every controller
// in its folder generated into the ConfigMap, the image named in one place, and the grace period covering
// preStop plus the launcher's worst-case stop (docs/operations.md, "The systemd units": the extqs.service rule).
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { parse, parseAllDocuments } from 'yaml';
import { ConfigMap, Service } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';
import { readConfig } from '../../common/config.ts';
import { SETTING_KEYS, specOf } from '../../common/settings.ts';
import { requireTool } from '../helpers/tools.ts';
import { makeSandbox, ROOT } from '../helpers/stack.ts';

const DIR = join(ROOT, 'deploy/kubernetes');
const WITH_SERVICE_MONITOR = join(ROOT, 'deploy/kubernetes-prometheus-operator');
type Doc = { kind: string; metadata: { name: string }; [key: string]: unknown };
const MODELS: Record<string, new (doc: never) => { validate(): void }> = {
  ConfigMap,
  Service,
  Deployment,
  PodDisruptionBudget,
  HorizontalPodAutoscaler,
  ServiceMonitor,
};

/** What `kubectl apply -k dir` would send. */
function rendered(dir: string): Doc[] {
  const yaml = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8', timeout: 60_000 });
  return parseAllDocuments(yaml).map((doc) => doc.toJS() as Doc);
}

describe('the Kubernetes manifests (kubectl kustomize)', function () {
  let docs: Doc[];
  let monitored: Doc[];
  const find = (kind: string, name: string) => docs.find((doc) => doc.kind === kind && doc.metadata.name === name)!;
  const podSpec = () => (find('Deployment', 'extqs') as unknown as { spec: { template: { spec: PodSpec } } }).spec.template.spec;

  before(function () {
    this.timeout(120_000);
    requireTool(this, 'kubectl');
    docs = rendered(DIR);
    monitored = rendered(WITH_SERVICE_MONITOR);
  });

  it('hold each object the deployment needs, and a ServiceMonitor with the Prometheus Operator', function () {
    const names = (list: Doc[]) => list.map((doc) => `${doc.kind}/${doc.metadata.name}`).sort();
    const base = ['ConfigMap/extqs-controllers', 'ConfigMap/extqs-settings', 'Deployment/extqs', 'HorizontalPodAutoscaler/extqs'];
    expect(names(docs)).to.deep.equal([...base, 'PodDisruptionBudget/extqs', 'Service/extqs']);
    expect(names(monitored)).to.deep.equal([...base, 'PodDisruptionBudget/extqs', 'Service/extqs', 'ServiceMonitor/extqs']);
  });

  it("has every object valid against its API's schema", function () {
    for (const doc of monitored) {
      const Model = MODELS[doc.kind];
      expect(Model, doc.kind).to.not.equal(undefined);
      expect(() => new Model(doc as never).validate(), `${doc.kind}/${doc.metadata.name}`).to.not.throw();
    }
  });

  it('generates the controllers ConfigMap from every file of the controllers folder', function () {
    const files = readdirSync(join(DIR, 'controllers')).sort();
    expect(files.length).to.be.above(0);
    const data = find('ConfigMap', 'extqs-controllers').data as Record<string, string>;
    expect(Object.keys(data).sort()).to.deep.equal(files);
    for (const file of files) expect(data[file], file).to.equal(readFileSync(join(DIR, 'controllers', file), 'utf8'));
    // Mounted under the name it is generated with (no content hash: the kubelet swaps the files in place).
    const volume = podSpec().volumes.find((v) => v.name === 'controllers')!;
    expect(volume.configMap.name).to.equal('extqs-controllers');
  });

  it("names the image in kustomization.yaml alone, tagged with the package's version", function () {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const kustomization = parse(readFileSync(join(DIR, 'kustomization.yaml'), 'utf8')) as { images: { newName: string; newTag: string }[] };
    expect(kustomization.images).to.have.length(1);
    expect(kustomization.images[0].newTag).to.equal(version);
    expect(podSpec().containers[0].image).to.equal(`${kustomization.images[0].newName}:${version}`);
  });

  it('declares the scrape on the metrics port: annotations, the Service port and the ServiceMonitor', function () {
    const settings = find('ConfigMap', 'extqs-settings').data as Record<string, string>;
    const port = Number(settings.EXTQS_METRICS_PORT);
    const deployment = find('Deployment', 'extqs') as unknown as {
      spec: { template: { metadata: { annotations: Record<string, string> } } };
    };
    expect(deployment.spec.template.metadata.annotations).to.deep.equal({
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': String(port),
      'prometheus.io/path': '/metrics',
    });
    expect(podSpec().containers[0].ports).to.deep.include({ name: 'metrics', containerPort: port });
    const service = find('Service', 'extqs') as unknown as { spec: { ports: { name: string; targetPort: string }[] } };
    expect(service.spec.ports.find((p) => p.name === 'metrics')?.targetPort).to.equal('metrics');
    const monitor = monitored.find((doc) => doc.kind === 'ServiceMonitor') as unknown as {
      spec: { selector: { matchLabels: Record<string, string> }; endpoints: { port: string; path: string }[] };
    };
    expect(monitor.spec.endpoints.map(({ port: name, path }) => ({ name, path }))).to.deep.equal([{ name: 'metrics', path: '/metrics' }]);
    expect(monitor.spec.selector.matchLabels).to.deep.equal(
      (service as unknown as { metadata: { labels: Record<string, string> } }).metadata.labels,
    );
  });

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

  it("keeps the host's spooled bodies and the uploads being read within the pod's /tmp volume", function () {
    const data = find('ConfigMap', 'extqs-settings').data as Record<string, string>;
    const sandbox = makeSandbox();
    try {
      const config = readConfig('start', [], { ...data, EXTQS_WWW_ROOT: sandbox.www }, sandbox.dir);
      const tmp = podSpec().volumes.find((v) => v.name === 'tmp')!;
      expect(podSpec().containers[0].volumeMounts).to.deep.include({ name: 'tmp', mountPath: '/tmp' });
      const limit = /^(\d+)Gi$/.exec(tmp.emptyDir!.sizeLimit)!;
      // The spool bound, and room beside it for 16 uploads of --post-max-size at once.
      expect(config.spoolMaxSize).to.be.above(0);
      expect(config.spoolMaxSize + 16 * config.postMaxSize).to.be.at.most(Number(limit[1]) * 1024 ** 3);
    } finally {
      sandbox.remove();
    }
  });

  it('lets a stop finish: grace period ≥ preStop + proxy stop + host stop', function () {
    const data = find('ConfigMap', 'extqs-settings').data as Record<string, string>;
    const pod = podSpec();
    const preStop = Number(pod.containers[0].lifecycle.preStop.exec.command[1]);
    const shutdown = Number(data.EXTQS_SHUTDOWN_TIMEOUT);
    // The launcher stops the proxy (up to the timeout), then the host (the timeout, then 5 s to kill its workers and 5 to exit).
    expect(pod.terminationGracePeriodSeconds).to.be.at.least(preStop + shutdown + shutdown + 10);
    expect(pod.containers[0].livenessProbe.httpGet.path).to.equal('/-/healthy');
    expect(pod.containers[0].readinessProbe.httpGet.path).to.equal('/-/ready');
  });

  it('asks for the memory the bench measured: at rest plus requests in flight, with a margin', function () {
    const { requests, limits } = podSpec().containers[0].resources;
    const mib = (quantity: string) => Number(/^(\d+)Mi$/.exec(quantity)![1]);
    const needs = (inFlight: number) => MEMORY_MARGIN * (AT_REST_MIB + (inFlight * PER_REQUEST_KIB) / 1024);
    expect(mib(requests.memory)).to.be.at.least(needs(REQUESTED_IN_FLIGHT));
    expect(mib(limits.memory)).to.be.at.least(needs(LIMIT_IN_FLIGHT));
  });
});

// The image's figures (Node 26) in docs/benchmarks.md "Start-up and memory", and the rule in docs/operations.md
// "Containers and Kubernetes": PSS of `extqs start` at rest 15 s after its controllers compiled, and per request
// held in a controller's await (`npm run bench:held`).
const AT_REST_MIB = 180;
const PER_REQUEST_KIB = 60;
const REQUESTED_IN_FLIGHT = 1_500;
const LIMIT_IN_FLIGHT = 4_000;
/** Compiles (an esbuild service per worker for 10 s), the garbage between two collections. */
const MEMORY_MARGIN = 1.2;

interface PodSpec {
  terminationGracePeriodSeconds: number;
  volumes: { name: string; configMap: { name: string }; emptyDir?: { sizeLimit: string } }[];
  containers: {
    image: string;
    volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[];
    ports: { name: string; containerPort: number }[];
    lifecycle: { preStop: { exec: { command: string[] } } };
    livenessProbe: { httpGet: { path: string } };
    readinessProbe: { httpGet: { path: string } };
    resources: Record<'requests' | 'limits', { memory: string }>;
  }[];
}
