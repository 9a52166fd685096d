// The ways a controller can fail to load, and an answer it may not send. Each carries the file it concerns; the host logs the message
// and ends the request without headers, as PHP's fatal errors do.
import { LINK_REFUSED, type Refusal } from '../../common/linkGuard.ts';
import { controllerFiles, missingControllerMessage } from './missingController.ts';

/** Neither `<Name>.ts` nor `<Name>.js` exists (PHP: "Failed opening controller script"). */
export class ControllerMissingError extends Error {
  readonly code = 'HOST_CONTROLLER_MISSING';
  readonly file: string;
  constructor(dir: string, name: string) {
    // Only its message is ever logged, and capturing a stack was a tenth of the time of a request for a
    // missing controller (every request of the observed deployment).
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(missingControllerMessage(dir, name));
    Error.stackTraceLimit = stackTraceLimit;
    this.file = controllerFiles(dir, name)[0];
    this.name = 'ControllerMissingError';
  }
}

/** The file exists but could not become a handler: a syntax error, a throw at load, no default export. */
export class ControllerLoadError extends Error {
  readonly code = 'HOST_CONTROLLER_LOAD';
  constructor(
    message: string,
    readonly file: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ControllerLoadError';
  }
}

/** The file is a symbolic link (or lies behind one) that --follow-symlinks does not follow: nothing of it runs. */
export class ControllerLinkRefusedError extends Error {
  readonly code = 'HOST_CONTROLLER_LINK_REFUSED';
  constructor(
    readonly file: string,
    { link, reason }: Refusal,
  ) {
    super(`Failed opening controller script ${file}: ${LINK_REFUSED}: ${link} (${reason})`);
    this.name = 'ControllerLinkRefusedError';
  }
}

/** A controller's Response carries more field bytes than CONTROLLER_HEAD_MAX: answered as its failure. */
export class ControllerHeadTooLargeError extends Error {
  readonly code = 'HOST_CONTROLLER_HEAD_TOO_LARGE';
  constructor(
    readonly bytes: number,
    readonly limit: number,
  ) {
    super(`its answer's header fields take ${bytes} bytes, more than the ${limit} a controller may send`);
    this.name = 'ControllerHeadTooLargeError';
  }
}

/** A controller's signal's reason when its client left (the proxy closed the host's request): no failure of its own. */
export class ClientClosedRequest extends Error {
  readonly code = 'HOST_CLIENT_CLOSED_REQUEST';
  constructor() {
    super('client closed the request');
    this.name = 'ClientClosedRequest';
  }
}

/**
 * What process.exit() throws in a controller's code: it ends that request, as PHP's `exit` ends a script, not
 * the worker and every request on it (host/worker/workerExit.ts). A controller that catches it and goes on may.
 */
export class ControllerExit extends Error {
  readonly code = 'HOST_CONTROLLER_EXIT';
  constructor(readonly exitCode: string | number | null | undefined) {
    super(`process.exit(${exitCode ?? ''}) called`);
    this.name = 'ControllerExit';
  }
}

/**
 * A controller's failure that reached no code of its own, an unhandled rejection or an uncaught exception of
 * one of its callbacks, ending its request that still awaited its answer (host/controller/controllerFaults.ts).
 */
export class ControllerFault extends Error {
  readonly code = 'HOST_CONTROLLER_FAULT';
  constructor(
    readonly kind: 'Unhandled rejection' | 'Uncaught exception',
    options: { cause: unknown },
  ) {
    super(kind, options);
    this.name = 'ControllerFault';
  }
}
