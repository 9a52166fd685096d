// The one error a bad setting raises: it names the setting, the value and what is allowed, so an
// operator can fix the value without reading the code.
export class ConfigError extends Error {
  readonly code = 'EXTQS_CONFIG';

  constructor(
    readonly setting: string,
    readonly value: string,
    allowed: string,
    /** A suggestion after the value: ` (did you mean EXTQS_PORT?)`. */
    hint = '',
  ) {
    super(`${setting} must be ${allowed}, got ${JSON.stringify(value)}${hint}`);
    this.name = 'ConfigError';
  }
}

/** Every problem found in one reading of the command line and configuration, one line each. */
export class ConfigErrors extends Error {
  readonly code = 'EXTQS_CONFIG';

  constructor(readonly problems: readonly (ConfigError | UsageError)[]) {
    super(problems.map((problem) => problem.message).join('\n'));
    this.name = 'ConfigErrors';
  }
}

export function isConfigError(err: unknown): err is ConfigError | ConfigErrors {
  return err instanceof ConfigError || err instanceof ConfigErrors;
}

/** A command line the command does not take (an unknown flag, one for another command, a stray word). */
export class UsageError extends Error {
  readonly code = 'EXTQS_USAGE';

  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
