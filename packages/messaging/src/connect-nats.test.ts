/**
 * A NATS_URL with credentials: the client refuses a user and password in a server URL, so they are
 * taken out of every URL and given as options; without them the URLs pass as they are.
 */
import { describe, expect, it } from 'vitest';
import { natsServers } from './connect-nats.js';

describe('natsServers', () => {
  it('passes URLs without credentials as they are', () => {
    expect(natsServers('nats://nats-0.nats:4222, nats://nats-1.nats:4222,')).toEqual({ servers: ['nats://nats-0.nats:4222', 'nats://nats-1.nats:4222'] });
    expect(natsServers('127.0.0.1:4222')).toEqual({ servers: ['127.0.0.1:4222'] });
  });

  it("takes a service's user and percent-encoded password out of every URL of a cluster", () => {
    expect(natsServers('tls://metering:p%40ss%3Aword@nats-0.nats:4222,tls://metering:p%40ss%3Aword@nats-1.nats:4222')).toEqual({
      servers: ['tls://nats-0.nats:4222', 'tls://nats-1.nats:4222'],
      user: 'metering',
      pass: 'p@ss:word',
    });
  });

  it('takes a user without a password as a token, as NATS clients do', () => {
    expect(natsServers('nats://s3cr3t@nats:4222')).toEqual({ servers: ['nats://nats:4222'], token: 's3cr3t' });
  });
});
