// The hosts the proxy forwards to: round robin with passive health checks, as nginx's upstream block
// (max_fails, fail_timeout). Only a failed connect counts against a host: a reset before the response
// headers is how a host says a controller failed (docs/design.md §5), not a sign that the host is gone.
import { HostTarget, type ClientTls } from '../../common/hostTarget.ts';
import { formatUpstream, upstreamLabel, type Upstream } from '../../common/settingParsers.ts';

export interface HealthOptions {
  /** Connect failures in a row that take an upstream out of the rotation. */
  maxFails: number;
  /** How long it stays out before it is tried again. */
  failTimeoutMs: number;
}

export interface UpstreamsOptions extends HealthOptions {
  /** This proxy's mutual TLS pair, which an https:// upstream is reached with (read once at start). */
  clientTls?: ClientTls;
}

/** One upstream, how it is reached, and what the proxy has seen of it. */
export class UpstreamState {
  readonly name: string;
  /** What every client of this host connects through (the engines, /server-status, /metrics, the readiness probe). */
  readonly target: HostTarget;
  /** Its name in /metrics (upstreamLabel()). */
  readonly label: string;
  /** Requests sent to it (each attempt counts once). */
  requests = 0;
  /** Connect failures since it was last reachable. */
  fails = 0;
  /** Connect failures since start. */
  totalFails = 0;
  /** Skipped until this time (ms since the epoch); 0 = in the rotation. */
  downUntil = 0;

  constructor(
    readonly upstream: Upstream,
    clientTls?: ClientTls,
  ) {
    this.target = new HostTarget(upstream, clientTls);
    this.name = formatUpstream(upstream);
    this.label = upstreamLabel(upstream);
  }
}

export interface UpstreamSnapshot {
  name: string;
  label: string;
  state: 'up' | 'down';
  requests: number;
  fails: number;
  /** Seconds until it is tried again, when down. */
  retryInSeconds: number;
}

export class Upstreams {
  readonly all: readonly UpstreamState[];
  private next = 0;

  constructor(
    upstreams: readonly Upstream[],
    private readonly health: UpstreamsOptions,
    /** Told when an upstream leaves or rejoins the rotation. */
    private readonly onChange: (message: string) => void = () => {},
    private readonly now: () => number = Date.now,
  ) {
    if (upstreams.length === 0) throw new Error('at least one upstream is needed');
    this.all = upstreams.map((upstream) => new UpstreamState(upstream, health.clientTls));
  }

  /**
   * The next upstream in the rotation not yet `tried` for this request. When every one left is out of
   * the rotation, the one due back first is tried anyway (as with a single upstream, which is never
   * skipped): refusing the request outright would only turn a maybe into a certain 503.
   */
  pick(tried?: ReadonlySet<UpstreamState>): UpstreamState | undefined {
    const all = this.all;
    if (all.length === 1) return tried?.has(all[0]) ? undefined : all[0];
    const now = this.now();
    let fallback: UpstreamState | undefined;
    for (let i = 0; i < all.length; i++) {
      const candidate = all[(this.next + i) % all.length];
      if (tried?.has(candidate)) continue;
      if (candidate.downUntil <= now) {
        this.next = (this.next + i + 1) % all.length;
        return candidate;
      }
      if (!fallback || candidate.downUntil < fallback.downUntil) fallback = candidate;
    }
    return fallback;
  }

  /** The connection could not be made. */
  connectFailed(state: UpstreamState): void {
    state.fails += 1;
    state.totalFails += 1;
    if (state.fails >= this.health.maxFails && this.all.length > 1) {
      const wasUp = state.downUntil <= this.now();
      state.downUntil = this.now() + this.health.failTimeoutMs;
      if (wasUp)
        this.onChange(
          `upstream ${state.name} out of the rotation for ${this.health.failTimeoutMs / 1000} s after ${state.fails} failed connect(s)`,
        );
    }
  }

  /** The upstream answered (with headers, or by ending the request itself): it is reachable. */
  reached(state: UpstreamState): void {
    if (state.fails === 0 && state.downUntil === 0) return;
    const wasDown = state.downUntil !== 0;
    state.fails = 0;
    state.downUntil = 0;
    if (wasDown) this.onChange(`upstream ${state.name} back in the rotation`);
  }

  /**
   * Takes the counts of the same upstreams from `previous` (a reload's new Upstreams), so no counter of /metrics goes
   * back. Whether each is in the rotation starts again, as nginx's health does at a reload.
   */
  countOn(previous: Upstreams): void {
    const before = new Map(previous.all.map((state) => [state.name, state]));
    for (const state of this.all) {
      const old = before.get(state.name);
      if (!old) continue;
      state.requests += old.requests;
      state.totalFails += old.totalFails;
    }
  }

  snapshot(): UpstreamSnapshot[] {
    const now = this.now();
    return this.all.map((state) => ({
      name: state.name,
      label: state.label,
      state: state.downUntil > now ? 'down' : 'up',
      requests: state.requests,
      fails: state.totalFails,
      retryInSeconds: Math.max(0, Math.ceil((state.downUntil - now) / 1000)),
    }));
  }
}
