/**
 * Text output in mqadmin's style: `#`-prefixed headers over left-aligned columns, `Key: value`
 * blocks for single records, and mqadmin's renderings of times and permissions.
 */

import { escapeControl, escapeControlKeepingLines } from '../../common/escape.js';

export type Cell = string | number | boolean | null | undefined;

/** A cell as printed: ids, hosts and names come from clients, so control characters are escaped. */
const cellText = (c: Cell): string => (c === null || c === undefined ? '' : escapeControl(String(c)));

/** Aligned columns, two spaces apart, with a `#Header` row; no trailing blanks. */
export function formatTable(headers: readonly string[], rows: readonly (readonly Cell[])[]): string {
  const head = headers.map((h) => `#${h}`);
  const body = rows.map((r) => headers.map((_, i) => cellText(r[i])));
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(head), ...body.map(line)].join('\n') + '\n';
}

/**
 * `Key:   value` lines with the values aligned, as mqadmin prints one message or one config. A value
 * given as `{ text }` is multi-line text (a body): it keeps its newlines and tabs.
 */
export function formatKeyValues(pairs: readonly (readonly [string, Cell | { text: string }])[]): string {
  const width = Math.max(0, ...pairs.map(([k]) => k.length + 1));
  const show = (v: Cell | { text: string }) =>
    v !== null && typeof v === 'object' ? escapeControlKeepingLines(v.text) : cellText(v);
  return pairs.map(([k, v]) => `${`${k}:`.padEnd(width)}  ${show(v)}`.trimEnd()).join('\n') + '\n';
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** mqadmin's `yyyy-MM-dd HH:mm:ss,SSS` in local time; `N/A` for 0 (never). */
export function formatTime(ms: number | null | undefined): string {
  if (!ms || !Number.isFinite(ms) || ms <= 0) return 'N/A';
  const d = new Date(ms);
  return (
    `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())},${pad(d.getMilliseconds(), 3)}`
  );
}

/** RocketMQ's PermName.perm2String: 6 → `RW-`, 7 → `RWX`. */
export function formatPerm(perm: number): string {
  return `${perm & 4 ? 'R' : '-'}${perm & 2 ? 'W' : '-'}${perm & 1 ? 'X' : '-'}`;
}

/** Pretty JSON for `--json`. */
export function formatJson(value: unknown): string {
  return JSON.stringify(value, null, 2) + '\n';
}
