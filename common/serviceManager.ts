// Tells systemd (Type=notify) the service answers, so `systemctl start` returns, and units ordered after
// this one start, only once the port is open. sd_notify(3) is a datagram on a unix socket, which Node
// cannot send without a native module: `systemd-notify --ready` sends it, and the unit's
// NotifyAccess=all lets systemd take it from that helper process.
import { execFile } from 'node:child_process';

/** The variable systemd sets for a Type=notify service; the launcher keeps it from its children. */
export const NOTIFY_SOCKET = 'NOTIFY_SOCKET';

/** Sends READY=1 when systemd asked for it; a failure is reported, never thrown (the service still runs). */
export function notifyReady(report: (message: string) => void): void {
  if (!process.env[NOTIFY_SOCKET]) return;
  execFile('systemd-notify', ['--ready'], (err, _stdout, stderr) => {
    if (err) report(`systemd-notify --ready failed, systemd will not see the service start: ${stderr.trim() || err.message}`);
  });
}
