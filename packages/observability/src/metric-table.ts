/**
 * A service's metrics declared as a table, one line each: its name, its help, and what differs (the
 * label a counter is split by and the values it exports from 0, a histogram's buckets, what a gauge
 * or a read counter reads at each scrape). `serviceMetrics` registers the table's metrics and returns them by key.
 */
import client from 'prom-client';

/** One row of a table: makes its metric on the registers it is given. */
export type MetricDefinition<Metric> = (registers: client.Registry[]) => Metric;

/** The rows a table is made of. */
export const metric = {
  /** A counter without labels. */
  counter(name: string, help: string): MetricDefinition<client.Counter> {
    return (registers) => new client.Counter({ name, help, registers });
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
    return (registers) => {
      const labelNames = typeof labels === 'string' ? [labels] : labels;
      const counter = new client.Counter<Label>({ name, help, labelNames, registers });
      for (const value of values) counter.inc({ [labelNames[0] as Label]: value } as client.LabelValues<Label>, 0);
      return counter;
    };
  },
  /**
   * A counter whose value is read at each scrape: the running total `read` returns (a count kept
   * elsewhere, never decreasing), so that what it counts costs no metric call where it happens.
   */
  count(name: string, help: string, read: () => number): MetricDefinition<client.Counter> {
    return (registers) =>
      new client.Counter({
        name,
        help,
        registers,
        collect() {
          this.reset();
          this.inc(read());
        },
      });
  },
  /** A counter by reason read at each scrape, as `count`: every one of `reasons` exported (from 0). */
  countByReason<Reason extends string>(
    name: string,
    help: string,
    reasons: readonly Reason[],
    read: () => Record<Reason, number>,
  ): MetricDefinition<client.Counter<'reason'>> {
    return (registers) =>
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
      });
  },
  /** A gauge its owner sets; with `read`, one that takes the value `read` gives at each scrape. */
  gauge(name: string, help: string, read?: () => number | Promise<number>): MetricDefinition<client.Gauge> {
    return (registers) =>
      new client.Gauge({
        name,
        help,
        registers,
        ...(read && {
          async collect() {
            this.set(await read());
          },
        }),
      });
  },
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
    return (registers) => {
      const histogram = new client.Histogram<Label>({ name, help, buckets, labelNames, registers });
      for (const value of values) histogram.zero({ [labelNames[0] as Label]: value } as client.LabelValues<Label>);
      return histogram;
    };
  },
};

/**
 * Registers every metric of `table` on `registry` and returns them by the table's keys. Without a
 * registry they are kept but not exported (a test that reads none of them).
 */
export function serviceMetrics<Table extends Record<string, MetricDefinition<unknown>>>(
  registry: client.Registry | undefined,
  table: Table,
): { [Key in keyof Table]: ReturnType<Table[Key]> } {
  const registers = registry ? [registry] : [];
  return Object.fromEntries(Object.entries(table).map(([key, define]) => [key, define(registers)])) as { [Key in keyof Table]: ReturnType<Table[Key]> };
}
