import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { SETTING_KEYS, specOf } from '../../common/settings.ts';
import { BEGIN, CONFIGURATION_DOC, settingsBlock, settingsMarkdown } from '../../tools/readmeSettings.ts';

describe('the configuration tables of docs/configuration.md', () => {
  const doc = readFileSync(CONFIGURATION_DOC, 'utf8');

  it('are exactly what the settings table makes (npm run readme:settings rewrites them)', () => {
    expect(settingsBlock(doc)).to.equal(settingsMarkdown());
  });

  it('name every setting once, with its flag and environment variable', () => {
    const block = settingsBlock(doc) ?? '';
    for (const key of SETTING_KEYS) {
      const { flag, env } = specOf(key);
      expect(block.split(`| \`--${flag}\` | \`${env}\` |`), key).to.have.length(2);
    }
  });

  it('are not copied into README.md, which links to them', () => {
    expect(readFileSync(new URL('../../README.md', import.meta.url), 'utf8')).not.to.include(BEGIN);
  });
});
