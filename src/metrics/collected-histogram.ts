/**
 * A prom-client histogram whose buckets are counted elsewhere: the broker keeps plain bucket counts
 * (broker/stats.ts) so that observing costs nothing on the hot path, and this exports them in the
 * standard `_bucket` / `_sum` / `_count` form at scrape time.
 */
import {
  Histogram,
  type LabelValues,
  type MetricObjectWithValues,
  type MetricValueWithName,
  type Registry,
} from 'prom-client';
import type { Histogram as Counts } from '../broker/stats.js';

export interface HistogramSeries<L extends string> {
  labels: LabelValues<L>;
  counts: Counts;
}

type Exported<L extends string> = MetricObjectWithValues<MetricValueWithName<L>>;

export class CollectedHistogram<L extends string> extends Histogram<L> {
  private readonly meta: { name: string; help: string };

  constructor(
    config: {
      name: string;
      help: string;
      labelNames: readonly L[];
      buckets: readonly number[];
      registry: Registry;
    },
    private readonly series: () => Iterable<HistogramSeries<L>>,
  ) {
    super({
      name: config.name,
      help: config.help,
      labelNames: config.labelNames,
      buckets: [...config.buckets],
      registers: [config.registry],
    });
    this.meta = { name: config.name, help: config.help };
  }

  override async get(): Promise<Exported<L>> {
    const { name, help } = this.meta;
    const values: MetricValueWithName<L>[] = [];
    const withLe = (labels: LabelValues<L>, le: number | string) =>
      ({ ...labels, le }) as unknown as LabelValues<L>;
    for (const { labels, counts } of this.series()) {
      let cumulative = 0;
      counts.bounds.forEach((le, i) => {
        cumulative += counts.counts[i]!;
        values.push({ metricName: `${name}_bucket`, labels: withLe(labels, le), value: cumulative });
      });
      values.push({ metricName: `${name}_bucket`, labels: withLe(labels, '+Inf'), value: counts.count });
      values.push({ metricName: `${name}_sum`, labels, value: counts.sum });
      values.push({ metricName: `${name}_count`, labels, value: counts.count });
    }
    return {
      name,
      help,
      type: 'histogram' as unknown as Exported<L>['type'],
      aggregator: 'sum',
      collect: () => {},
      values,
    };
  }

  /** What the registry calls when it renders text. */
  getForPromString(): Promise<Exported<L>> {
    return this.get();
  }
}
