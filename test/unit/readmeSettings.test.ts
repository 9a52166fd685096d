import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { SETTING_KEYS, specOf } from '../../common/settings.ts';
import { README, readmeSettingsBlock, settingsMarkdown } from '../../tools/readmeSettings.ts';

describe("the README's configuration tables", () => {
  const readme = readFileSync(README, 'utf8');

  it('are exactly what the settings table makes (npm run readme:settings rewrites them)', () => {
    expect(readmeSettingsBlock(readme)).to.equal(settingsMarkdown());
  });

  it('name every setting once, with its flag and environment variable', () => {
    const block = readmeSettingsBlock(readme) ?? '';
    for (const key of SETTING_KEYS) {
      const { flag, env } = specOf(key);
      expect(block.split(`| \`--${flag}\` | \`${env}\` |`), key).to.have.length(2);
    }
  });
});
