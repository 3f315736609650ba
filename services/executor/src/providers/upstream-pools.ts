/**
 * One undici Pool per upstream origin, kept alive across requests (a TLS handshake per completion
 * would add a round trip to every time-to-first-token). Shared by every HTTP adapter
 * (openai-compatible, anthropic, gemini): two models of one origin share its connections. Whoever
 * creates the UpstreamPools closes it at shutdown.
 */
import { Pool } from 'undici';

/** The three upstream timeouts, in milliseconds. */
export interface UpstreamTimeouts {
  /** Establishing the TCP (and TLS) connection. */
  readonly connectMs: number;
  /** From sending the request to receiving the response headers: the model's time to first byte. */
  readonly firstByteMs: number;
  /** The longest silence between two pieces of the body: a stalled stream. */
  readonly idleMs: number;
}

/** Keep-alive connections per origin. */
export class UpstreamPools {
  private readonly pools = new Map<string, Pool>();

  /** `timeouts` apply to every pool; `connections` caps concurrent sockets per origin. */
  constructor(
    readonly timeouts: UpstreamTimeouts,
    private readonly connections = 128,
  ) {}

  /** The pool of an origin (`https://api.openai.com`), created on first use. */
  poolFor(origin: string): Pool {
    let pool = this.pools.get(origin);
    if (!pool) {
      pool = new Pool(origin, {
        connections: this.connections,
        connect: { timeout: this.timeouts.connectMs },
        headersTimeout: this.timeouts.firstByteMs,
        bodyTimeout: this.timeouts.idleMs,
        keepAliveTimeout: 30_000,
        keepAliveMaxTimeout: 600_000,
      });
      this.pools.set(origin, pool);
    }
    return pool;
  }

  /**
   * Closes every pool, letting requests in flight finish for up to `graceMs`; whatever is still
   * running after that is destroyed, so shutdown never waits on a stalled upstream.
   */
  async close(graceMs = 2_000): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(
      pools.map(async (pool) => {
        let timer: NodeJS.Timeout | undefined;
        const expired = new Promise<'expired'>((resolve) => {
          timer = setTimeout(() => resolve('expired'), graceMs);
        });
        const result = await Promise.race([pool.close().then(() => 'closed' as const), expired]);
        clearTimeout(timer);
        if (result === 'expired') await pool.destroy();
      }),
    );
  }
}
