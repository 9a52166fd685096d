// The entry of a process the launcher starts (`child.js proxy` or `child.js host`): it asks the launcher
// for its settings over IPC, then runs its role; later settings come with the launcher's reload notices.
import { IpcChannel, parentEndpoint } from '../common/ipc.ts';
import type { ChildSays, LauncherSays } from '../common/launcherProtocol.ts';
import { reloadFromLauncher } from '../common/reload.ts';
import type { Role } from '../common/settings.ts';
import { exitWith, runRole } from './roles.ts';

const CONFIG_TIMEOUT_MS = 10_000;
const role = process.argv[2] as Role;

try {
  const channel = new IpcChannel<ChildSays, LauncherSays>(parentEndpoint());
  const config = await channel.request('config', { role }, CONFIG_TIMEOUT_MS);
  await runRole(role, config, reloadFromLauncher(channel, config));
} catch (err) {
  exitWith(role, err);
}
