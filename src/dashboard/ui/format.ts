/** How the console writes numbers, sizes, durations and times. */

export const num = (n: number): string => Math.round(n).toLocaleString('en-US');

export function bytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(v < 10 ? 2 : 1)} ${units[i]}`;
}

export function duration(ms: number): string {
  if (!Number.isFinite(ms) || ms <= 0) return '0 s';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  const m = s / 60;
  if (m < 60) return `${Math.floor(m)} min ${Math.round(s % 60)} s`;
  const h = m / 60;
  if (h < 48) return `${Math.floor(h)} h ${Math.round(m % 60)} min`;
  return `${(h / 24).toFixed(1)} d`;
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

export function time(ms: number | undefined): string {
  if (!ms || ms <= 0) return '—';
  const d = new Date(ms);
  return (
    `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`
  );
}

/** A local date-time for `<input type="datetime-local">`. */
export function toLocalInput(ms: number): string {
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function percent(ratio: number): string {
  return `${(ratio * 100).toFixed(1)} %`;
}

/** Base64 → bytes. */
export function fromBase64(b64: string): Uint8Array {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** A classic hex dump: offset, 16 bytes, their printable characters. */
export function hexDump(data: Uint8Array, max = 4096): string {
  const lines: string[] = [];
  const n = Math.min(data.length, max);
  for (let off = 0; off < n; off += 16) {
    const row = data.subarray(off, Math.min(off + 16, n));
    const hex = [...row].map((b) => b.toString(16).padStart(2, '0')).join(' ');
    const text = [...row].map((b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.')).join('');
    lines.push(`${off.toString(16).padStart(8, '0')}  ${hex.padEnd(47)}  ${text}`);
  }
  if (data.length > max) lines.push(`… ${data.length - max} more bytes`);
  return lines.join('\n');
}
