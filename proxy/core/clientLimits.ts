// The proxy's timeouts and limits against slow or hostile clients, and what node:http takes of them.
import type { ProxyConfig } from '../../common/settings.ts';

/** The proxy's timeouts and limits against slow or hostile clients, as configured. */
export type ClientLimits = Pick<
  ProxyConfig,
  | 'headerTimeout'
  | 'requestTimeout'
  | 'keepAliveTimeout'
  | 'maxHeaderSize'
  | 'maxHeaderFields'
  | 'limitRequestFieldSize'
  | 'maxConnections'
  | 'limitRequestBody'
  | 'h2MaxConcurrentStreams'
>;

/**
 * How often Node looks for connections past --header-timeout or --request-timeout (its default, 30 s,
 * would let a slowloris connection outlive a 20 s limit by half a minute).
 */
const DEADLINE_CHECK_MS = 1_000;

/** node:http's limits for a listener's HTTP/1.x connections (both listeners' HTTP/1.1 is node:http). */
export function http1Limits(limits: ClientLimits) {
  return {
    keepAliveTimeout: limits.keepAliveTimeout * 1000,
    headersTimeout: limits.headerTimeout * 1000,
    requestTimeout: limits.requestTimeout * 1000,
    connectionsCheckingInterval: Math.min(DEADLINE_CHECK_MS, limits.headerTimeout * 250),
    // Past it Node's parser fails with HPE_HEADER_OVERFLOW: 431 (the clientError handler).
    maxHeaderSize: limits.maxHeaderSize,
  };
}
