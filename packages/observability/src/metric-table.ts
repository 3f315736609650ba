/**
 * A service's metrics declared as a table, one line each: its name, its help, and what differs (the
 * label a counter is split by and the values it exports from 0, a histogram's buckets, the labels
 * of a gauge, what a gauge or a read counter reads at each scrape). `serviceMetrics` registers the
 * table's metrics and returns them by key; `shared`, it reuses those its registry already holds.
 */
import client from 'prom-client';

/** One row of a table: makes its metric on the registers it is given. */
export interface MetricDefinition<Metric> {
  (registers: client.Registry[]): Metric;
  /** The metric's name: what a shared table (serviceMetrics' `shared`) finds it by on the registry. */
  readonly metricName: string;
}

/** A row making its metric with `make`, under `name`. */
function row<Metric>(name: string, make: (registers: client.Registry[]) => Metric): MetricDefinition<Metric> {
  return Object.assign(make, { metricName: name });
}

/** One series of a gauge by labels, as a reading gives it: its labels and its value. */
export interface LabelledValue<Label extends string> {
  labels: client.LabelValues<Label>;
  value: number;
}

/** A gauge without labels (metric.gauge). */
function gauge(name: string, help: string, read?: () => number | Promise<number>): MetricDefinition<client.Gauge>;
/** A gauge by labels (metric.gauge). */
function gauge<Label extends string>(
  name: string,
  help: string,
  labelNames: readonly Label[],
  read?: () => Iterable<LabelledValue<Label>>,
): MetricDefinition<client.Gauge<Label>>;
/**
 * The gauge rows: without labels, `read` gives the one value at each scrape; by labels, `read`
 * gives the series, the others dropped. That reading is synchronous: what it serves (the
 * executor's deployments) is state held in memory. Without a reading, the owner sets the gauge.
 */
function gauge(
  name: string,
  help: string,
  labelsOrRead?: readonly string[] | (() => number | Promise<number>),
  readLabelled?: () => Iterable<LabelledValue<string>>,
): MetricDefinition<client.Gauge> {
  const read = typeof labelsOrRead === 'function' ? labelsOrRead : undefined;
  const labelNames = typeof labelsOrRead === 'function' ? [] : (labelsOrRead ?? []);
  return row(
    name,
    (registers) =>
      new client.Gauge({
        name,
        help,
        labelNames,
        registers,
        ...(read && {
          async collect() {
            this.set(await read());
          },
        }),
        ...(readLabelled && {
          collect() {
            this.reset();
            for (const { labels, value } of readLabelled()) this.set(labels, value);
          },
        }),
      }),
  );
}

/** The rows a table is made of. */
export const metric = {
  /** A counter without labels. */
  counter(name: string, help: string): MetricDefinition<client.Counter> {
    return row(name, (registers) => new client.Counter({ name, help, registers }));
  },
  /**
   * A counter by one label, or by several. Each of `values` (of a single label) is exported from 0,
   * so that an alert on increase() sees the first one (a series that appears already at 1 shows no
   * increase); other values appear when counted.
   */
  counterBy<Label extends string>(
    name: string,
    help: string,
    labels: Label | readonly Label[],
    values: readonly string[] = [],
  ): MetricDefinition<client.Counter<Label>> {
    return row(name, (registers) => {
      const labelNames = typeof labels === 'string' ? [labels] : labels;
      const counter = new client.Counter<Label>({ name, help, labelNames, registers });
      for (const value of values) counter.inc({ [labelNames[0] as Label]: value } as client.LabelValues<Label>, 0);
      return counter;
    });
  },
  /**
   * A counter whose value is read at each scrape: the running total `read` returns (a count kept
   * elsewhere, never decreasing), so that what it counts costs no metric call where it happens.
   */
  count(name: string, help: string, read: () => number): MetricDefinition<client.Counter> {
    return row(
      name,
      (registers) =>
        new client.Counter({
          name,
          help,
          registers,
          collect() {
            this.reset();
            this.inc(read());
          },
        }),
    );
  },
  /** A counter by reason read at each scrape, as `count`: every one of `reasons` exported (from 0). */
  countByReason<Reason extends string>(
    name: string,
    help: string,
    reasons: readonly Reason[],
    read: () => Record<Reason, number>,
  ): MetricDefinition<client.Counter<'reason'>> {
    return row(
      name,
      (registers) =>
        new client.Counter({
          name,
          help,
          labelNames: ['reason'],
          registers,
          collect() {
            const counts = read();
            this.reset();
            for (const reason of reasons) this.inc({ reason }, counts[reason]);
          },
        }),
    );
  },
  /**
   * A gauge its owner sets; with `read`, one that takes the value `read` gives at each scrape. By
   * labels (their names after the help), its owner sets and removes its series; with `read` then,
   * it holds at each scrape exactly the series `read` gives, the others dropped, so that one whose
   * subject is gone (a deployment removed, say) disappears rather than keeps its last value.
   */
  gauge,
  /**
   * A histogram with these bucket bounds, by these labels. Each of `values` (of the first label) is
   * exported from 0, as counterBy's, so that a ratio or a rate an alert reads exists before the
   * first observation.
   */
  histogram<Label extends string = string>(
    name: string,
    help: string,
    buckets: number[],
    labelNames: readonly Label[] = [],
    values: readonly string[] = [],
  ): MetricDefinition<client.Histogram<Label>> {
    return row(name, (registers) => {
      const histogram = new client.Histogram<Label>({ name, help, buckets, labelNames, registers });
      for (const value of values) histogram.zero({ [labelNames[0] as Label]: value } as client.LabelValues<Label>);
      return histogram;
    });
  },
};

/** How serviceMetrics registers a table. */
export interface ServiceMetricsOptions {
  /**
   * Reuse a metric the registry already holds by a row's name instead of registering it again
   * (which prom-client refuses): for apps that count into the same series of one registry, as the
   * edge's public and admin listeners do. The metric found is taken as the row's.
   */
  shared?: boolean;
}

/** The metrics of a table, by its keys. */
export type TableMetrics<Table extends Record<string, MetricDefinition<unknown>>> = { [Key in keyof Table]: ReturnType<Table[Key]> };

/**
 * Registers every metric of `table` on `registry` and returns them by the table's keys. Without a
 * registry they are kept but not exported (a test that reads none of them).
 */
export function serviceMetrics<Table extends Record<string, MetricDefinition<unknown>>>(
  registry: client.Registry | undefined,
  table: Table,
  options: ServiceMetricsOptions = {},
): TableMetrics<Table> {
  const registers = registry ? [registry] : [];
  const made = (define: MetricDefinition<unknown>) => (options.shared && registry?.getSingleMetric(define.metricName)) || define(registers);
  return Object.fromEntries(Object.entries(table).map(([key, define]) => [key, made(define)])) as TableMetrics<Table>;
}
