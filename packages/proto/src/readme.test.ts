/**
 * The docs against the contracts: proto/README.md lists every contract file with the package it
 * declares (and only files that exist), and each gRPC service's README names every RPC of the
 * service it serves, so neither can drift from proto/.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const PROTO = fileURLToPath(new URL('../../../proto/', import.meta.url));
const SERVICES = fileURLToPath(new URL('../../../services/', import.meta.url));

/** Which process serves which gRPC service of the contracts. */
const SERVED_BY: Readonly<Record<string, string>> = {
  'gateway/auth/v1/admin_access.proto': 'auth',
  'gateway/auth/v1/auth.proto': 'auth',
  'gateway/auth/v1/teams.proto': 'auth',
  'gateway/executor/v1/executor.proto': 'executor',
  'gateway/mcp/v1/mcp.proto': 'mcp',
  'gateway/responses/v1/response_store.proto': 'metering',
  'gateway/router/v1/router.proto': 'router',
  'gateway/usage/v1/usage_service.proto': 'metering',
  'gateway/request_log/v1/request_log.proto': 'request-log',
  'gateway/guard/v1/guard.proto': 'guard',
  'gateway/cache/v1/cache.proto': 'cache',
  'gateway/batch/v1/batch.proto': 'batch',
};

/**
 * Contracts whose server is not in services/ yet, with the service that calls them: its README
 * names each RPC instead. None today.
 */
const CALLED_BY: Readonly<Record<string, string>> = {};

function protoFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? protoFiles(join(folder, entry.name)) : entry.name.endsWith('.proto') ? [relative(PROTO, join(folder, entry.name))] : [],
  );
}

describe('proto/README.md', () => {
  it('lists every contract file with its package, and only files that exist', () => {
    const readme = readFileSync(join(PROTO, 'README.md'), 'utf8');
    const rows = new Map([...readme.matchAll(/^\| `([^`]+\.proto)` \| `([^`]+)` \|/gm)].map((match) => [match[1]!, match[2]!]));
    const files = protoFiles(PROTO).sort();
    expect(files.length).toBeGreaterThan(5);
    expect([...rows.keys()].sort()).toEqual(files);
    for (const file of files) {
      const declared = /^package ([\w.]+);/m.exec(readFileSync(join(PROTO, file), 'utf8'))?.[1];
      expect(rows.get(file), file).toBe(declared);
    }
  });

  it("is what every file declaring a gRPC service is served by, and that service's README names each of its RPCs", () => {
    const declaring = protoFiles(PROTO).filter((file) => /^service \w+ \{/m.test(readFileSync(join(PROTO, file), 'utf8')));
    expect(declaring.sort()).toEqual([...Object.keys(SERVED_BY), ...Object.keys(CALLED_BY)].sort());
    for (const [file, service] of [...Object.entries(SERVED_BY), ...Object.entries(CALLED_BY)]) {
      const rpcs = [...readFileSync(join(PROTO, file), 'utf8').matchAll(/^\s*rpc (\w+)\(/gm)].map((match) => match[1]!);
      expect(rpcs.length, file).toBeGreaterThan(0);
      const readme = readFileSync(join(SERVICES, service, 'README.md'), 'utf8');
      const missing = rpcs.filter((rpc) => !new RegExp(`\\b${rpc}\\b`).test(readme));
      expect(missing, `RPCs of ${file} that services/${service}/README.md does not name`).toEqual([]);
    }
  });
});
