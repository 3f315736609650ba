// `pnpm start`: the same as `bash scripts/start.sh` (which also works where pnpm is not installed
// yet). Arguments are passed through, e.g. `pnpm start --no-build`.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const script = fileURLToPath(new URL('./start.sh', import.meta.url));
const result = spawnSync('bash', [script, ...process.argv.slice(2)], { stdio: 'inherit' });
process.exit(result.status ?? 1);
