/**
 * A uPlot line chart of spend per group (key or model) over a usage window, one point per bucket
 * and zero where nothing was spent. The container keeps a stable id and test id, and says what it
 * draws in data attributes (series ids, total spend), so a test can read the chart without pixels.
 */
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import { formatUnixSeconds, formatUsd } from './format';
import type { SpendSeries } from './usage-series';

const PALETTE = ['#2563eb', '#dc2626', '#16a34a', '#d97706', '#7c3aed', '#0891b2', '#db2777', '#57534e'];
const HEIGHT = 260;

/**
 * The x axis's tick labels, in UTC and 24-hour time: hours within a day, dates at midnights and for
 * daily ticks, months for ticks a month or more apart.
 */
function timeTicks(splits: number[], increment: number): string[] {
  return splits.map((seconds) => {
    const iso = new Date(seconds * 1000).toISOString();
    if (increment >= 28 * 86_400) return iso.slice(0, 7);
    if (increment >= 86_400 || iso.slice(11, 16) === '00:00') return iso.slice(5, 10);
    return iso.slice(11, 16);
  });
}

/** The y axis's tick labels: USD with as many decimals as the ticks' spacing needs, at least cents. */
function usdTicks(splits: number[], increment: number): string[] {
  let decimals = 2;
  while (decimals < 12 && Math.abs(Math.round(increment * 10 ** decimals) - increment * 10 ** decimals) > 1e-6) decimals++;
  return splits.map((value) => `$${value.toFixed(decimals)}`);
}

/** Chart options for `spend`; every time is shown in UTC, as the buckets are cut. */
function chartOptions(width: number, spend: SpendSeries, label: (id: string) => string): uPlot.Options {
  return {
    width,
    height: HEIGHT,
    tzDate: (seconds) => uPlot.tzDate(new Date(seconds * 1000), 'Etc/UTC'),
    scales: {
      x: { time: true },
      // From zero, and a visible axis while nothing was spent.
      y: { range: (_plot, _min, max) => [0, max > 0 ? max * 1.15 : 0.0001] },
    },
    axes: [
      { stroke: '#57534e', grid: { stroke: '#e7e5e4' }, values: (_plot, splits, _axis, _space, increment) => timeTicks(splits, increment) },
      {
        stroke: '#57534e',
        grid: { stroke: '#e7e5e4' },
        values: (_plot, splits, _axis, _space, increment) => usdTicks(splits, increment),
        // As wide as the longest label: a cheap model's spend has many decimals.
        size: (_plot, values) => 18 + 7 * Math.max(4, ...(values ?? []).map((value) => value.length)),
      },
    ],
    series: [
      { label: 'Bucket (UTC)', value: (_plot, value) => (value === null ? '—' : formatUnixSeconds(value)) },
      ...spend.series.map(
        (series, index): uPlot.Series => ({
          label: label(series.id),
          stroke: PALETTE[index % PALETTE.length],
          width: 2,
          points: { size: 5 },
          value: (_plot, value) => (value === null ? '—' : formatUsd(value)),
        }),
      ),
    ],
    legend: { live: true },
    cursor: { drag: { x: false, y: false } },
  };
}

/** The chart; `label` names a series in the legend. */
export function SpendChart({ id, title, spend, label }: { id: string; title: string; spend: SpendSeries | undefined; label: (id: string) => string }) {
  const container = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = container.current;
    if (!element || !spend) return;
    const width = () => Math.max(320, element.clientWidth);
    const data: uPlot.AlignedData = [spend.times, ...spend.series.map((series) => series.values)];
    const plot = new uPlot(chartOptions(width(), spend, label), data, element);
    const observer = new ResizeObserver(() => plot.setSize({ width: width(), height: HEIGHT }));
    observer.observe(element);
    return () => {
      observer.disconnect();
      plot.destroy();
    };
  }, [spend, label]);
  return (
    <figure class="chart card">
      <figcaption>
        {title}
        {spend && <span class="muted"> · total {formatUsd(spend.total)}</span>}
        {spend && spend.series.length === 0 && <span class="muted"> · nothing spent in this range</span>}
      </figcaption>
      <div
        id={id}
        data-testid={id}
        class="chart-canvas"
        data-series-ids={spend ? spend.series.map((series) => series.id).join(' ') : undefined}
        data-total-usd={spend ? String(spend.total) : undefined}
        ref={container}
      />
    </figure>
  );
}
