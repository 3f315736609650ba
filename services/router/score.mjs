// `pnpm --silent --filter @gateway/router score`: runs dist/score-command.js, first building the
// router and the packages it uses when this checkout has not been built or its sources changed
// since, so the command works on a fresh clone after `pnpm install`. The build's output goes to
// standard error: standard output carries only the scores.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';

const here = (path) => new URL(path, import.meta.url);
const command = here('./dist/score-command.js');
const sources = readdirSync(here('./src/'))
  .filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts'))
  .map((name) => here(`./src/${name}`));
const builtAt = existsSync(command) && existsSync(here('../../packages/tokens/dist/index.js')) ? statSync(command).mtimeMs : -1;
if (builtAt < 0 || sources.some((source) => statSync(source).mtimeMs > builtAt)) {
  const build = spawnSync('pnpm', ['--filter', '@gateway/router...', 'run', 'build'], { stdio: ['ignore', 2, 2] });
  if (build.status !== 0) {
    console.error('Building the score command failed; run `pnpm install && pnpm build` and try again.');
    process.exit(build.status ?? 1);
  }
}
await import(command.href);
