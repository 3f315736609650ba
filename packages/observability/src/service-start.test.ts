import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startService } from './service-start.js';

describe('startService', () => {
  it('names the logger and the metrics after the service, and counts the reloads of its files', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'service-start-')), 'plans.yaml');
    writeFileSync(path, '3');
    const { logger, registry, reloadableFile } = startService('auth', { LOG_LEVEL: 'silent', CONFIG_RELOAD_INTERVAL_MS: 0 }, { graceMs: 1_000 });
    expect(logger.bindings()).toMatchObject({ service: 'auth' });
    expect(logger.level).toBe('silent');
    const file = reloadableFile({ path, name: 'plans', parse: Number });
    expect(file.current).toBe(3);
    const metrics = await registry.metrics();
    expect(metrics).toContain('gateway_config_reload_total{file="plans",outcome="success",service="auth"} 0');
    expect(() => reloadableFile({ path: `${path}.missing`, name: 'plans', parse: Number })).toThrow(/cannot read the plans file/);
  });
});
