// Debian's Chromium (.ci/run installs it), driven by playwright-core: never a downloaded browser.
import { chromium, type Browser } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';
// Without the background-networking flags Chromium keeps trying to reach Google, which this machine refuses.
const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS });
}
