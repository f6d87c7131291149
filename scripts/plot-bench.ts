/**
 * `node --import tsx scripts/plot-bench.ts summary.json out.svg`: plot a `vela bench … --json` run as
 * an SVG (throughput per second above, latency percentiles per second below). Used for the README's
 * picture of a bench run; the data is whatever run you give it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import type { BenchSummary, Tick } from '../src/bench/run.js';

interface Line {
  name: string;
  color: string;
  pick: (t: Tick) => number;
}

function chart(ticks: Tick[], lines: Line[], title: string, top: number, h: number): string {
  const W = 760;
  const pad = { l: 64, r: 16, t: 28, b: 28 };
  const xs = ticks.map((t) => t.second);
  const x0 = Math.min(...xs);
  const x1 = Math.max(x0 + 1, ...xs);
  const max = niceCeil(Math.max(1, ...ticks.flatMap((t) => lines.map((l) => l.pick(t)))));
  const x = (s: number) => pad.l + ((W - pad.l - pad.r) * (s - x0)) / (x1 - x0);
  const y = (v: number) => top + pad.t + (h - pad.t - pad.b) * (1 - v / max);
  const out: string[] = [];
  out.push(`<text x="${pad.l}" y="${top + 18}" class="title">${title}</text>`);
  for (const f of [0, 0.25, 0.5, 0.75, 1]) {
    const v = max * f;
    out.push(`<line x1="${pad.l}" x2="${W - pad.r}" y1="${y(v)}" y2="${y(v)}" class="grid"/>`);
    out.push(`<text x="${pad.l - 6}" y="${y(v) + 4}" class="tick" text-anchor="end">${fmt(v)}</text>`);
  }
  for (let s = Math.ceil(x0); s <= x1; s += Math.max(1, Math.round((x1 - x0) / 10))) {
    out.push(`<text x="${x(s)}" y="${top + h - 8}" class="tick" text-anchor="middle">${s}s</text>`);
  }
  lines.forEach((l, i) => {
    const pts = ticks.map((t) => `${x(t.second).toFixed(1)},${y(l.pick(t)).toFixed(1)}`).join(' ');
    out.push(`<polyline fill="none" stroke="${l.color}" stroke-width="2" points="${pts}"/>`);
    const lx = W - pad.r - 150 * (lines.length - i);
    out.push(`<rect x="${lx}" y="${top + 9}" width="10" height="10" fill="${l.color}"/>`);
    out.push(`<text x="${lx + 14}" y="${top + 18}" class="tick">${l.name}</text>`);
  });
  return out.join('\n');
}

function niceCeil(v: number): number {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}
const fmt = (v: number) =>
  v >= 1000 ? `${(v / 1000).toFixed(v >= 10_000 ? 0 : 1)}k` : `${Math.round(v * 10) / 10}`;

export function plotBench(s: BenchSummary): string {
  // Whole seconds only: the run's last tick may cover a fraction of one (and repeat its second).
  const ticks = s.timeline.filter((t, i, a) => t.second > 0 && (i === 0 || t.second !== a[i - 1]!.second));
  const h = 230;
  const charts = [
    chart(
      ticks,
      [
        { name: 'sent / s', color: '#2f5fd0', pick: (t) => t.sendTps },
        { name: 'received / s', color: '#1f8a4c', pick: (t) => t.receiveTps },
      ],
      'Throughput (messages per second)',
      0,
      h,
    ),
    chart(
      ticks,
      [
        { name: 'send p50', color: '#8aa6e8', pick: (t) => t.sendP50 },
        { name: 'send p99', color: '#2f5fd0', pick: (t) => t.sendP99 },
        { name: 'end-to-end p99', color: '#c26a00', pick: (t) => t.e2eP99 },
      ],
      'Latency per second (ms)',
      h,
      h,
    ),
  ];
  const ms = (v: number | undefined) => (v === undefined ? '–' : `${Math.round(v)} ms`);
  const caption =
    `vela bench ${s.mode}, ${s.messageSize} B, concurrency ${s.concurrency}, ${Math.round(s.durationS)} s: ` +
    `${s.sendTps} msg/s; send p99 ${ms(s.send?.p99)}, end-to-end p99 ${ms(s.e2e?.p99)}`;
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 760 ${2 * h + 30}" font-family="system-ui, sans-serif">
<style>.grid{stroke:#e6e8ee}.tick{fill:#5b6272;font-size:11px}.title{fill:#1d2330;font-size:13px;font-weight:600}</style>
<rect width="100%" height="100%" fill="#fff"/>
${charts.join('\n')}
<text x="64" y="${2 * h + 20}" class="tick">${caption}</text>
</svg>
`;
}

if (process.argv[1]?.endsWith('plot-bench.ts')) {
  const [input, output] = process.argv.slice(2);
  if (!input || !output) throw new Error('usage: plot-bench.ts summary.json out.svg');
  writeFileSync(output, plotBench(JSON.parse(readFileSync(input, 'utf8')) as BenchSummary));
}
