// The least a Node.js host does for a controller with no file, as a yardstick for the host in the same run:
// bare node:http on a unix socket that, for `/External/<Name>`, stats `<Name>.ts` and `<Name>.js` and answers
// the host's 500 (the same fields, so the proxy in front does what it does for the host); no logs, no request
// ids, no workers. Anything else is not its job: 501. `hostFloor.ts <socket> <controllers dir>` prints a
// ready line like extqs's.
import { rmSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { CONTROLLER_PREFIX } from '../common/protocol.ts';
import { readyLine } from '../common/ready.ts';
import { controllerFiles, endedWithoutHeadersFields, missingControllerMessage } from '../host/controller/missingController.ts';

const [socketPath, controllersDir] = process.argv.slice(2);
/** The name: up to the first `/` or `?` (the host also decodes and checks it; the bench's names need neither). */
const NAME = /^[^/?]*/;

const server = createServer({ keepAliveTimeout: 75_000 }, (req, res) => {
  const url = req.url ?? '/';
  const name = url.startsWith(CONTROLLER_PREFIX) ? NAME.exec(url.slice(CONTROLLER_PREFIX.length))![0] : '';
  if (name && !controllerFiles(controllersDir, name).some((file) => statSync(file, { throwIfNoEntry: false }))) {
    res.writeHead(500, endedWithoutHeadersFields(`${missingControllerMessage(controllersDir, name)} in ${req.method} ${url}`));
    res.end();
    return;
  }
  res.writeHead(501, { 'content-length': 0 });
  res.end();
});
rmSync(socketPath, { force: true });
server.listen(socketPath, () => process.stdout.write(`${readyLine(`unix:${socketPath}`)}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
