/**
 * A live line chart in SVG: a few series over the last N samples, with a y axis scaled to the data.
 * Drawn by hand (no chart library): the console stays small and works offline.
 */
export interface Series {
  name: string;
  color: string;
  values: number[];
}

export function LineChart(props: { series: Series[]; height?: number; unit?: string; label: string }) {
  const width = 600;
  const height = props.height ?? 160;
  const pad = { left: 48, right: 8, top: 8, bottom: 18 };
  const n = Math.max(2, ...props.series.map((s) => s.values.length));
  const max = Math.max(1, ...props.series.flatMap((s) => s.values));
  const top = niceCeil(max);
  const x = (i: number, len: number) => pad.left + ((width - pad.left - pad.right) * (n - len + i)) / (n - 1);
  const y = (v: number) => pad.top + (height - pad.top - pad.bottom) * (1 - v / top);
  const ticks = [0, top / 2, top];
  return (
    <figure class="chart" aria-label={props.label}>
      <svg viewBox={`0 0 ${width} ${height}`} role="img">
        {ticks.map((t) => (
          <g key={t}>
            <line x1={pad.left} x2={width - pad.right} y1={y(t)} y2={y(t)} class="grid" />
            <text x={pad.left - 6} y={y(t) + 4} text-anchor="end" class="tick">
              {shortNumber(t)}
            </text>
          </g>
        ))}
        {props.series.map((s) =>
          s.values.length > 1 ? (
            <polyline
              key={s.name}
              fill="none"
              stroke={s.color}
              stroke-width="2"
              points={s.values.map((v, i) => `${x(i, s.values.length)},${y(v)}`).join(' ')}
            />
          ) : null,
        )}
        <text x={pad.left} y={height - 4} class="tick">
          {`${n} s ago`}
        </text>
        <text x={width - pad.right} y={height - 4} text-anchor="end" class="tick">
          now
        </text>
      </svg>
      <figcaption>
        {props.series.map((s) => (
          <span key={s.name} class="legend">
            <i style={{ background: s.color }} />
            {s.name}: <b>{shortNumber(s.values.at(-1) ?? 0)}</b>
            {props.unit ? ` ${props.unit}` : ''}
          </span>
        ))}
      </figcaption>
    </figure>
  );
}

function niceCeil(v: number): number {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}

export function shortNumber(v: number): string {
  if (v >= 1e9) return `${(v / 1e9).toFixed(1)}G`;
  if (v >= 1e6) return `${(v / 1e6).toFixed(1)}M`;
  if (v >= 1e4) return `${(v / 1e3).toFixed(1)}k`;
  return v >= 100 || Number.isInteger(v) ? String(Math.round(v)) : v.toFixed(1);
}
