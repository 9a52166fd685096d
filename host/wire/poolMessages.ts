// What the host's primary process and its workers say to each other over the cluster IPC channel.
import type { Conversation } from '../../common/ipc.ts';
import type { HostEntry } from '../../common/logFormat.ts';
import type { EntryBatch } from '../../common/logRelay.ts';
import type { HostConfig } from '../../common/settings.ts';
import type { PoolStatus, WorkerSnapshot } from './stats.ts';

/** A host.log event on its way from a worker to the primary, the one writer of the file. */
export type WireHostEntry = Omit<HostEntry, 'time'> & { time: number };

/** What the relay (common/logRelay.ts) carries to the primary. */
export interface HostLogEntries {
  'host.log': WireHostEntry;
}

export interface WorkerSays extends Conversation {
  requests: {
    /** The pool's settings, asked once at start, and the private socket the worker listens on. */
    config: { body: null; reply: { config: HostConfig; socket: string; quarantined: QuarantineHold[] } };
    /** A /status request on this worker: the primary gathers every worker's snapshot. */
    status: { body: { full: boolean }; reply: PoolStatus };
    /** host.log events, answered once they are written (the worker is about to exit). */
    flush: { body: EntryBatch<HostLogEntries>; reply: null };
  };
  notices: {
    /** The worker listens on its private socket: the dispatcher may send it requests. */
    listening: null;
    /** host.log events (a turn's worth). */
    log: EntryBatch<HostLogEntries>;
    /**
     * The worker wants to be replaced (max requests reached, a controller overran its limit, an uncaught exception).
     * `now`: it is unsafe to run more (an uncaught exception), so it is sent nothing from now, not only once its
     * replacement listens.
     */
    'retire-me': { reason: string; now: boolean };
    /** A retiring worker's last counters, just before it exits. */
    'final-stats': { snapshot: WorkerSnapshot };
    /** A quarantined controller's file or one of its imports changed (the worker's watcher saw it): it runs again. */
    'files-changed': { controller: string };
  };
}

/** A controller held by the pool's quarantine, until `until` (ms since the epoch) unless its files change first. */
export interface QuarantineHold {
  controller: string;
  until: number;
  /** Its file and imports, as a worker it killed knew them; absent when unknown (any local module's change lifts it). */
  files?: readonly string[];
}

export interface PoolSays extends Conversation {
  requests: {
    stats: { body: null; reply: WorkerSnapshot };
    /** Answered once no controller request runs (one ended without its answer completing). */
    idle: { body: null; reply: null };
  };
  notices: {
    /** Stop taking requests, finish those in flight, exit. */
    retire: null;
    /** Answer the controller's requests 503 without running them (host/pool/quarantine.ts). */
    quarantine: QuarantineHold;
    /** Its files changed, as another worker saw: it runs again. */
    'quarantine-lifted': { controller: string };
    /** A spare worker (--spare-workers) loads the controllers the pool serves, before it takes a place. */
    preload: { controllers: string[] };
  };
}

/**
 * A worker's heartbeat older than this means its thread is running JavaScript now, not waiting (3 of its 100 ms
 * beats missed): the watchdog takes its stack for the slowlog, and tells the primary it is blocked.
 */
export const BLOCKED_AFTER_MS = 300;

/**
 * Why a worker is about to die, said by the worker (or its watchdog thread) before it goes, when the cause is
 * known: the request whose controller ended it is never sent again, and counts towards that controller's
 * quarantine. A death without this line has no known cause.
 */
export interface DeathCause {
  /** The request whose controller call caused the death (its X-Request-Id). */
  requestId: string;
  /** The controller's name, as routed (`Latest`). */
  controller: string;
  /** What ended it, for the death line: `process.kill(process.pid, 'SIGKILL')`, `an uncaught exception: …`. */
  cause: string;
  /** The controller's file and the local modules it imports, when known: a change of one lifts its quarantine. */
  files?: readonly string[];
  /** Every request the worker ran (a proxy's too, which the primary did not relay), for the death line. */
  running?: HeldRequest[];
}

/** A request a worker runs, as its death line names it. */
export interface HeldRequest {
  requestId: string;
  /** `GET /External/Name?x=1` */
  what: string;
  /** A GET or HEAD without a body whose answer had not begun: its proxy sends it again (common/workerLoss.ts). */
  resendable: boolean;
}

/**
 * A line of the watchdog's pipe: a host.log event, whether the worker's event loop has stopped turning
 * while it runs calls (the primary then routes around it), or the known cause of the worker's coming death.
 */
export type WatchdogLine = WireHostEntry | { blocked: boolean; running: string[] } | { death: DeathCause };

/** The worker's file descriptor of the pipe to the primary on which its watchdog thread writes host.log events. */
export const WATCHDOG_LOG_FD = 4;
