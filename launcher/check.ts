// `extqs check`: what `nginx -t` and `apachectl configtest` give an operator. The settings were read
// already (a bad one stops before this, exit 2); this prints what would run, then loads every controller
// as the host would, type-checks the ones that load, and lists every problem. Exit status 1 when there is any.
import { readdir } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { describeProcessManager } from '../common/config.ts';
import type { Config } from '../common/settings.ts';
import { LINK_REFUSED, LinkGuard } from '../common/linkGuard.ts';
import type { FollowSymlinks } from '../common/settings.ts';
import { formatAllowList, formatUpstream } from '../common/settingParsers.ts';
import { compileController } from '../host/controller/compile.ts';
import { CONTROLLER_NAME } from '../common/controllerName.ts';
import { describeAdmission } from '../host/pool/admission.ts';
import { helperFiles, typeCheck } from './typeCheck.ts';

interface ControllerReport {
  file: string;
  problem?: string;
}

/** Every file in controllers/: loaded when it is a controller the host would serve, else why it is not. */
async function checkControllers(dir: string, followSymlinks: FollowSymlinks): Promise<ControllerReport[]> {
  // A link is listed too: the host serves one it may follow, and names one it may not.
  const names = (await readdir(dir, { withFileTypes: true }))
    .filter((entry) => entry.isFile() || entry.isSymbolicLink())
    .map((entry) => entry.name);
  const links = new LinkGuard(dir, followSymlinks);
  const reports: ControllerReport[] = [];
  for (const name of names.sort()) {
    const file = join(dir, name);
    const ext = extname(name);
    const base = name.slice(0, -ext.length);
    if (ext !== '.ts' && ext !== '.js') continue;
    if (!CONTROLLER_NAME.test(base)) {
      reports.push({ file, problem: `never served: ${JSON.stringify(base)} is not a controller name (${String(CONTROLLER_NAME)})` });
      continue;
    }
    if (ext === '.js' && names.includes(`${base}.ts`)) {
      reports.push({ file, problem: `never served: ${base}.ts beside it is served instead` });
      continue;
    }
    try {
      const verdict = links.checkSync(file);
      if (!verdict.follow) {
        reports.push({ file, problem: `never served: ${LINK_REFUSED}: ${verdict.link} (${verdict.reason})` });
        continue;
      }
      const compiled = await compileController(file, links.readFileSync(file, verdict).toString('utf8'));
      await compiled.dispose?.();
      reports.push({ file });
    } catch (err) {
      reports.push({ file, problem: (err as Error).message });
    }
  }
  return reports;
}

export async function check(config: Config, out: (line: string) => void): Promise<number> {
  const upstreams =
    config.upstreams.length > 0 ? config.upstreams.map(formatUpstream).join(', ') : "the host's private socket (extqs start)";
  const hostAddress = config.socket
    ? `unix:${config.socket}`
    : formatUpstream({ kind: 'tcp', host: config.hostListen, port: config.hostPort, ...(config.mtlsCert !== undefined && { tls: true }) });
  out(`settings: flags, environment${config.configFile ? `, ${config.configFile}` : ''}, defaults`);
  out(
    `proxy: http://${config.listen}:${config.port}, forwarding /External to ${upstreams} (${config.forwarder}), /server-status for ${formatAllowList(config.statusAllow)}`,
  );
  out(
    `host: ${config.workers} workers (${describeProcessManager(config)}), max execution time ${config.maxExecutionTime} s, max requests ${config.maxRequests || 'unlimited'}; extqs host listens on ${hostAddress}, admitting ${describeAdmission(config)}`,
  );
  out(`www: ${config.www} (symbolic links followed: ${config.followSymlinks})`);
  out(
    `slowlog: ${config.slowlogTimeout > 0 ? `a controller call running past ${config.slowlogTimeout} s gets its stack in host.log` : 'off'}`,
  );
  out(
    `logs: ${config.logs} (${config.logFormat}, level ${config.logLevel}${config.logMaxSize > 0 ? `, rotated past ${config.logMaxSize} bytes` : ''})`,
  );

  const dir = join(config.www, 'controllers');
  const reports = await checkControllers(dir, config.followSymlinks);
  // A controller that does not load is reported for that alone (esbuild's parse error, not TypeScript's too).
  const loaded = reports.filter((report) => report.problem === undefined).map((report) => report.file);
  const types = loaded.length > 0 ? await typeCheck(config.www, [...loaded, ...(await helperFiles(dir))]) : undefined;

  if (reports.length === 0) out('controllers: none (every /External request fails as a missing controller)');
  for (const report of reports) {
    const typeErrors = types?.errorsByFile.get(report.file) ?? 0;
    const verdict = typeErrors === 0 ? 'ok' : `loads; ${typeErrors} type error${typeErrors === 1 ? '' : 's'}, below`;
    out(`controller ${report.file}: ${report.problem ?? verdict}`);
  }
  if (types) {
    out(
      `types: ${types.checker}: ${types.errors.length === 0 ? 'no error' : `${types.errors.length} error${types.errors.length === 1 ? '' : 's'}`}`,
    );
    for (const error of types.errors) out(error);
  }
  const problems = reports.filter((report) => report.problem !== undefined).length + (types?.errors.length ?? 0);
  out(problems === 0 ? 'check: no problem found' : `check: ${problems} problem${problems === 1 ? '' : 's'} found`);
  return problems === 0 ? 0 : 1;
}
