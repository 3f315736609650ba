/**
 * An end-to-end file's cluster as its tests reach it: started in the file's beforeAll (once the
 * fakes its options name are up), stopped in its afterAll before those fakes are closed, with the
 * edge's origin, the official OpenAI and Anthropic clients on the cluster's key, and a directory of
 * its own for the files its environment names.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { eventually } from '@gateway/testing';
import type { UsageResult } from '../../services/edge/src/routes/admin/admin-api-schemas.js';
import { startCluster, type Cluster, type ClusterOptions } from './cluster.js';

/** What a file starts beside its cluster and closes after it: a fake upstream, cloud or token endpoint. */
export interface Closable {
  close(): Promise<unknown>;
}

/** One file's cluster: `start` in beforeAll, `stop` in afterAll, the rest in the tests. */
export class ClusterFixture {
  #cluster: Cluster | undefined;
  #openai: OpenAI | undefined;
  #anthropic: Anthropic | undefined;
  #directory: string | undefined;

  /**
   * An empty directory of the file's own, made on first use and removed by `stop`: for the
   * credential files the cluster's environment names, and where the cloud SDKs look for their own.
   */
  get directory(): string {
    this.#directory ??= mkdtempSync(join(tmpdir(), 'gateway-e2e-'));
    return this.#directory;
  }

  /** Starts the cluster (startCluster's options) and resolves once it is ready. */
  async start(options: ClusterOptions = {}): Promise<Cluster> {
    this.#cluster = await startCluster(options);
    return this.#cluster;
  }

  /** The running cluster. */
  get cluster(): Cluster {
    if (!this.#cluster) throw new Error('the cluster has not been started');
    return this.#cluster;
  }

  /** The edge's origin: the base URL without its /v1. */
  get origin(): string {
    return this.cluster.baseUrl.replace(/\/v1$/, '');
  }

  /** The official OpenAI client on the cluster's key, without retries. */
  get openai(): OpenAI {
    this.#openai ??= new OpenAI({ baseURL: this.cluster.baseUrl, apiKey: this.cluster.apiKey, maxRetries: 0 });
    return this.#openai;
  }

  /** The official Anthropic client on the cluster's key, without retries. */
  get anthropic(): Anthropic {
    this.#anthropic ??= new Anthropic({ baseURL: this.origin, apiKey: this.cluster.apiKey, maxRetries: 0 });
    return this.#anthropic;
  }

  /** The model's one row on GET /v1/usage (grouped by model), once `requests` of its requests are metered. */
  usageRow(model: string, requests: number): Promise<UsageResult> {
    const start = Math.floor(Date.now() / 1000) - 3_600;
    return eventually(async () => {
      const response = await fetch(`${this.origin}/v1/usage?start=${start}&bucket=day&group_by=model`, {
        headers: { authorization: `Bearer ${this.cluster.apiKey}` },
      });
      const page = (await response.json()) as { data: Array<{ results: UsageResult[] }> };
      const found = page.data.flatMap((bucket) => bucket.results).filter((row) => row.model === model);
      return found.length === 1 && found[0]!.requests === requests && found[0];
    }, `the ${requests} requests of ${model} to be metered`);
  }

  /** Stops the cluster if it started, then closes those of `others` the file got to start, and removes the directory. */
  async stop(...others: Array<Closable | undefined>): Promise<void> {
    await this.#cluster?.stop();
    await Promise.all(others.map((other) => other?.close()));
    if (this.#directory) rmSync(this.#directory, { recursive: true, force: true });
  }
}
