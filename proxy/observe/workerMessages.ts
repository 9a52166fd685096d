// What the proxy's primary and its workers (--proxy-workers > 1) say to each other over the cluster
// channel. The primary is the one writer of access.log and error.log, as the host's primary is of
// host.log: workers send a turn's entries in one notice (common/logRelay.ts), so size rotation and SIGHUP reopening stay in
// one process.
import type { Conversation } from '../../common/ipc.ts';
import type { ReloadNotice } from '../../common/launcherProtocol.ts';
import type { AccessEntry, ErrorEntry } from '../../common/logFormat.ts';
import type { EntryBatch } from '../../common/logRelay.ts';
import type { ProxyConfig } from '../../common/settings.ts';
import type { MetricJson } from '../core/metricJson.ts';

/** access.log's entry on the wire (JSON has no Date). */
export type WireAccessEntry = Omit<AccessEntry, 'time'> & { time: number };

/** error.log's entry on the wire: the event, when and in which worker it happened. */
export type WireErrorEntry = ErrorEntry & { micros: number; pid: number };

/** What the relay (common/logRelay.ts) carries to the primary, by file. */
export interface ProxyLogEntries {
  'access.log': WireAccessEntry;
  'error.log': WireErrorEntry;
}

export interface ProxyWorkerSays extends Conversation {
  requests: {
    /** The settings to serve with. */
    config: { body: null; reply: ProxyConfig };
    /** These entries, and an answer once they are in the primary's hands (a worker about to exit). */
    flush: { body: EntryBatch<ProxyLogEntries>; reply: null };
    /** Every worker's share and the primary's, for a /metrics or /server-status this worker answers. */
    'all-metrics': { body: null; reply: MetricJson[][] };
    /** A retiring worker's last share of /metrics and /server-status, once it served its last request: kept by the primary. */
    'last-metrics': { body: MetricJson[]; reply: null };
    /** Why this worker cannot serve (the port is taken…): the primary's start fails with it. */
    failed: { body: { message: string; code?: string }; reply: null };
  };
  notices: {
    /** A turn's log entries. */
    log: EntryBatch<ProxyLogEntries>;
  };
}

export interface ProxyPrimarySays extends Conversation {
  requests: {
    /** Its share of /metrics and /server-status: prom-client's getMetricsAsJSON() form, which AggregatorRegistry.aggregate() sums. */
    metrics: { body: null; reply: MetricJson[] };
  };
  notices: {
    /** A SIGHUP reached the primary: apply the live settings (the primary reopened the files). */
    reload: ReloadNotice;
    /** New workers serve the port now: finish the requests and connections held, hand over the log lines, exit. */
    retire: null;
  };
}
