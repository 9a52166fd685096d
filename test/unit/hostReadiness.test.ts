// A prober's /-/ready asks each host (proxy/forward/hostReadiness.ts): a host it cannot even ask is a reason in the 503's
// error line, never an exception (unhandled in the probe pass, it would end the proxy process).
import { expect } from 'chai';
import { hostNotReady } from '../../proxy/forward/hostReadiness.ts';
import { UpstreamState } from '../../proxy/forward/upstreams.ts';

describe("a host's readiness", () => {
  it('is a reason, not a throw, for an https:// host this process has no mutual TLS pair for', async () => {
    const why = await hostNotReady(new UpstreamState({ kind: 'tcp', host: '10.0.0.9', port: 9443, tls: true }));
    expect(why).to.equal('10.0.0.9: an https:// upstream without --mtls-cert, --mtls-key and --mtls-ca');
  });
});
