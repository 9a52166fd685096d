// What the launcher (`extqs start`) and the processes it starts say to each other over IPC: a child asks
// for its configuration once, as data (nothing is re-spelled as flags), and hears of every SIGHUP reload.
import type { Conversation } from './ipc.ts';
import type { HostConfig, ProxyConfig, Role } from './settings.ts';

export interface ChildSays extends Conversation {
  requests: {
    /** The resolved, frozen settings of this child's role. */
    config: { body: { role: Role }; reply: ProxyConfig | HostConfig };
  };
  notices: Record<never, never>;
}

export interface LauncherSays extends Conversation {
  requests: Record<never, never>;
  notices: {
    /** The configuration read again on SIGHUP: apply its live settings and reopen the logs. */
    reload: ReloadNotice;
  };
}

export interface ReloadNotice {
  /** This child's settings after the reload (the live ones changed, the others as running). */
  config: ProxyConfig | HostConfig;
  /** What changed, and what would need a restart, or why the old configuration was kept. */
  note: string;
  /** The configuration could not be read again and the running one is kept: an error, not a notice. */
  kept: boolean;
}
