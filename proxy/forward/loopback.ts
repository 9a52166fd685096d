// Whether a client is on this machine, from the address of its socket: the only address a client cannot
// choose (X-Forwarded-For and its kind are the client's word). `extqs dev` shows a controller's error with
// its stack to such a client only. The rule is common/clientList.ts's, which the host's admission uses too.
export { isLoopbackAddress as isLoopback } from '../../common/clientList.ts';
