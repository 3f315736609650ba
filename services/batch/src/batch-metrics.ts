/** The batch service's metrics: the lines its lane ended or sent again, its lines in flight, the batches running, the database. */
import { metric, type prometheus, serviceMetrics } from '@gateway/observability';

/** What the batch service's gauges read at each scrape. */
export interface BatchReadings {
  /** Lines this replica's lane runs now. */
  inFlight(): number;
  /** Batches not ended, of every key (read from the database; the last value read while it is away). */
  activeBatches(): Promise<number>;
  /** 1 while PostgreSQL answers and the schema is migrated. */
  databaseUp(): number;
}

/** The batch service's metrics; every label is bounded (results). */
export function createBatchMetrics(registry: prometheus.Registry | undefined, readings: BatchReadings) {
  // biome-ignore format: one metric a line, a table of name, help and the label each is counted by
  return serviceMetrics(registry, {
    lines: metric.counterBy('gateway_batch_lines_total', "Batch lines this replica's lane ended or sent again, by result (answered: the edge's answer, any status; failed: no answer after the last attempt; retried: sent again later).", 'result', ['answered', 'failed', 'retried']),
    inFlight: metric.gauge('gateway_batch_lane_in_flight', "Batch lines this replica's lane is sending to the edge now.", readings.inFlight),
    batchesActive: metric.gauge('gateway_batch_batches_active', 'Batches not ended (validating, in_progress, finalizing, cancelling), of every key.', readings.activeBatches),
    databaseUp: metric.gauge('gateway_batch_database_up', 'Whether PostgreSQL answers and the schema is migrated (1), or not (0).', readings.databaseUp),
  });
}

/** The batch service's metrics, as createBatchMetrics registers them. */
export type BatchMetrics = ReturnType<typeof createBatchMetrics>;
