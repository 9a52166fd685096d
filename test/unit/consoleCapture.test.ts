// The parts of console capture (host/worker/consoleCapture.ts) and the dev error page (host/controller/devErrorPage.ts) that
// need no process: the flood bucket, the controller found on a stack, the page's escaping.
import { expect } from 'chai';
import { controllerOnStack, TokenBucket } from '../../host/worker/consoleCapture.ts';
import { devErrorPage } from '../../host/controller/devErrorPage.ts';

describe('console capture', () => {
  describe('TokenBucket', () => {
    it('lets the burst through at once, then refills at its rate, never past the burst', () => {
      let now = 0;
      const bucket = new TokenBucket(100, 200, () => now);
      let passed = 0;
      for (let i = 0; i < 1000; i += 1) if (bucket.take()) passed += 1;
      expect(passed).to.equal(200);
      now += 50; // 5 tokens
      passed = 0;
      for (let i = 0; i < 1000; i += 1) if (bucket.take()) passed += 1;
      expect(passed).to.equal(5);
      now += 60_000;
      passed = 0;
      for (let i = 0; i < 1000; i += 1) if (bucket.take()) passed += 1;
      expect(passed).to.equal(200);
    });
  });

  describe('controllerOnStack', () => {
    it('names the first controller file on the stack, or nothing', () => {
      const stack = 'Error\n    at log (file:///opt/extqs/build/host/consoleCapture.js:1:1)\n    at /srv/www/controllers/Latest.ts:3:9\n';
      expect(controllerOnStack(stack, '/srv/www/controllers')).to.equal('Latest');
      expect(controllerOnStack('Error\n    at /srv/www/controllers/node_modules/x.js:1:1', '/srv/www/controllers')).to.equal(undefined);
      expect(controllerOnStack('Error\n    at foo (node:internal/x:1:1)', '/srv/www/controllers')).to.equal(undefined);
    });
  });
});

describe('the dev error page', () => {
  it('escapes every value: markup in a message or a name is shown, never run', () => {
    const page = devErrorPage({
      title: 'Uncaught exception in controller <Latest>',
      requestId: 'id"<x>',
      detail: `Error: <script>alert('x')</script> & more\n    at f (/w/controllers/Latest.ts:2:3)`,
      frame: '> 2 | if (a < b && c > d) throw "x";',
      typeErrors: [{ file: '/w/controllers/Latest.ts', line: 2, column: 9, message: "Type '<T>' is wrong.", frame: '> 2 | a<b' }],
    });
    expect(page).not.to.contain('<script>');
    expect(page).to.contain('Error: &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; more');
    expect(page).to.contain('&gt; 2 | if (a &lt; b &amp;&amp; c &gt; d) throw &quot;x&quot;;');
    expect(page).to.contain('/w/controllers/Latest.ts:2:3');
    expect(page).to.contain('id&quot;&lt;x&gt;');
    expect(page).to.contain('<h1>Uncaught exception in controller &lt;Latest&gt;</h1>');
    expect(page).to.contain('/w/controllers/Latest.ts:2:9 Type &#39;&lt;T&gt;&#39; is wrong.\n&gt; 2 | a&lt;b');
  });
});
