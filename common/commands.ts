// The commands of `extqs`, on their own so both the settings (whose defaults may depend on the command) and
// the reading of them (config.ts) name them without importing each other.

/** Both processes, one of them, both for a developer, or a check of what would run. */
export const COMMANDS = ['start', 'proxy', 'host', 'dev', 'check'] as const;
export type Command = (typeof COMMANDS)[number];
