/**
 * Renders the settings tables of docs/configuration.md from the schema in src/common/config.ts. The
 * page keeps its prose; only the blocks between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->`
 * are derived. `npm run docs` rewrites them; test/unit/docs.test.ts keeps them equal.
 */
import { SECTION_SCHEMAS, TOP_SCHEMA, type Setting } from '../src/common/config.js';

function hint(value: number, unit: string | undefined): string {
  if (unit === 'bytes' && value >= 1024) {
    if (value % (1024 * 1024) === 0) return ` (${value / (1024 * 1024)} MiB)`;
    if (value % 1024 === 0) return ` (${value / 1024} KiB)`;
  }
  if (unit === 'ms' && value >= 60_000) {
    if (value % 3_600_000 === 0) return ` (${value / 3_600_000} h)`;
    if (value % 60_000 === 0) return ` (${value / 60_000} min)`;
  }
  return '';
}

export function formatDefault(s: Setting<unknown>): string {
  const v = s.default;
  if (Array.isArray(v)) return `\`${v.join(',')}\``;
  if (typeof v === 'number') {
    const unit = s.kind.type === 'number' ? s.kind.unit : undefined;
    return `\`${v}\`${hint(v, unit)}`;
  }
  if (v === '') return '(none)';
  return `\`${String(v)}\``;
}

function unitOf(s: Setting<unknown>): string {
  if (s.kind.type !== 'number') return '';
  return s.kind.unit === 'ms' ? ' (ms)' : s.kind.unit === 'bytes' ? ' (bytes)' : '';
}

function topTable(): string {
  const rows = [
    '| Setting | Flag | Environment variable | Config-file key | Default |',
    '| --- | --- | --- | --- | --- |',
  ];
  for (const [key, s] of Object.entries(TOP_SCHEMA) as [string, Setting<unknown>][]) {
    const flag = s.flag ? `\`${s.flag.replace(/\|/g, '\\|')}\`` : '—';
    const env = s.env ? `\`${s.env}\`` : '—';
    rows.push(`| ${s.doc}${unitOf(s)} | ${flag} | ${env} | \`${key}\` | ${formatDefault(s)} |`);
  }
  return rows.join('\n');
}

function sectionTable(name: keyof typeof SECTION_SCHEMAS): string {
  const rows = ['| Key | Meaning | Default |', '| --- | --- | --- |'];
  for (const [key, s] of Object.entries(SECTION_SCHEMAS[name]) as [string, Setting<unknown>][]) {
    rows.push(`| \`${key}\` | ${s.doc}${unitOf(s)} | ${formatDefault(s)} |`);
  }
  return rows.join('\n');
}

/** Every generated block of docs/configuration.md, by name. */
export function configBlocks(): Record<string, string> {
  const out: Record<string, string> = { settings: topTable() };
  for (const name of Object.keys(SECTION_SCHEMAS) as (keyof typeof SECTION_SCHEMAS)[])
    out[name] = sectionTable(name);
  return out;
}

/** The page with each generated block replaced by its current rendering. */
export function renderConfigDoc(page: string): string {
  let out = page;
  for (const [name, body] of Object.entries(configBlocks())) {
    const re = new RegExp(`(<!-- generated:${name} -->\\n)[\\s\\S]*?(\\n<!-- /generated:${name} -->)`);
    if (!re.test(out)) throw new Error(`docs/configuration.md has no generated:${name} block`);
    out = out.replace(re, (_m, open: string, close: string) => `${open}${body}${close}`);
  }
  return out;
}
