// The configuration tables of docs/configuration.md, made from the settings table (common/settings.ts). Run it
// (`npm run readme:settings`) to rewrite them between the markers; test/unit/readmeSettings.test.ts fails while
// the document and the table disagree. (The name is from when the tables were in the README.)
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { COMMANDS } from '../common/commands.ts';
import { takes } from '../common/config.ts';
import { RELOAD_RULES } from '../common/reloadResolver.ts';
import { SETTING_KEYS, specOf, type SettingGroup } from '../common/settings.ts';

export const CONFIGURATION_DOC = fileURLToPath(new URL('../docs/configuration.md', import.meta.url));
export const BEGIN = '<!-- settings:begin: made from common/settings.ts by `npm run readme:settings` -->';
export const END = '<!-- settings:end -->';

const GROUP_TITLES: Readonly<Record<SettingGroup, string>> = {
  service: 'The service',
  tls: 'HTTPS and HTTP/2',
  host: 'The host and its controllers',
  input: "The controllers' request input (php.ini's names and defaults)",
  upstreams: 'Proxy and host on different machines',
  logs: 'Logs',
  limits: "The proxy's limits against slow or hostile clients (Apache's defaults)",
};

const code = (text: string) => `\`${text}\``;
const sentence = (text: string) => `${text[0].toUpperCase()}${text.slice(1)}.`;

export function settingsMarkdown(): string {
  const sections = (Object.keys(GROUP_TITLES) as SettingGroup[]).map((group) => {
    const rows = SETTING_KEYS.filter((key) => specOf(key).group === group).map((key) => {
      const spec = specOf(key);
      const fallback = spec.defaultText ?? (typeof spec.default === 'string' ? spec.default : '');
      const commands = COMMANDS.filter((command) => command !== 'check' && takes(command, key)).join(', ');
      const repeat = spec.repeatable ? ' Repeatable; the variable lists the values with commas.' : '';
      return `| ${code(`--${spec.flag}`)} | ${code(spec.env)} | ${code(fallback)} | ${commands} | ${RELOAD_RULES[key].summary} | ${sentence(spec.help)}${repeat} |`;
    });
    return [`**${GROUP_TITLES[group]}**`, '', '| Flag | Env | Default | Commands | SIGHUP | |', '|---|---|---|---|---|---|', ...rows].join(
      '\n',
    );
  });
  return [BEGIN, '', sections.join('\n\n'), '', END].join('\n');
}

/** The document's generated block as it stands, or undefined when its markers are missing. */
export function settingsBlock(doc: string): string | undefined {
  const begin = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  return begin === -1 || end === -1 ? undefined : doc.slice(begin, end + END.length);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const doc = readFileSync(CONFIGURATION_DOC, 'utf8');
  const current = settingsBlock(doc);
  if (current === undefined) throw new Error(`${CONFIGURATION_DOC} has no ${BEGIN} … ${END} block to rewrite`);
  writeFileSync(CONFIGURATION_DOC, doc.replace(current, settingsMarkdown()));
}
