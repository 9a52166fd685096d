// What the proxy and the host agree on about a request.

/** Requests under this prefix are forwarded to the host and name a controller. */
export const CONTROLLER_PREFIX = '/External/';

/** An X-Request-Id worth keeping (a front load balancer may set one); anything else is replaced. */
export const WELL_FORMED_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
