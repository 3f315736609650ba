/**
 * Builds the web console into dist/console: index.html (copied as it is), app.js (the Preact app
 * and uPlot, one minified ES module) and app.css (the console's styles with uPlot's folded in),
 * the three files src/routes/admin/console.ts serves. The sources are type-checked first: esbuild only
 * strips types. Deterministic: no source maps (they would carry this machine's paths), no
 * timestamps, and the same sources always give the same bytes, so the ETags change only when the
 * console does.
 *
 *   node scripts/build-console.mjs
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const source = join(root, 'console');
const output = join(root, 'dist', 'console');

const require = createRequire(import.meta.url);
const tsc = require.resolve('typescript/bin/tsc');
/** The bundled libraries' notices; their own headers are not marked as licence comments. */
const versionOf = (name) => JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')).version;
const notice = `/*! Gateway console. Bundles preact ${versionOf('preact')} (MIT, (c) Jason Miller) and uPlot ${versionOf('uplot')} (MIT, (c) Leon Sorokin). */`;
try {
  execFileSync(process.execPath, [tsc, '-p', join(source, 'tsconfig.json')], { cwd: root, stdio: 'inherit' });
} catch {
  console.error('build-console: the console does not type-check (see above)');
  process.exit(1);
}

rmSync(output, { recursive: true, force: true });
mkdirSync(output, { recursive: true });
await build({
  absWorkingDir: root,
  entryPoints: [
    { in: 'console/src/main.tsx', out: 'app' },
    { in: 'console/styles/app.css', out: 'app' },
  ],
  outdir: output,
  bundle: true,
  minify: true,
  format: 'esm',
  // Browsers from 2023 on: module scripts, CSS nesting-free output, private fields left as they are.
  target: ['chrome111', 'edge111', 'firefox114', 'safari16.4'],
  platform: 'browser',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  define: { 'process.env.NODE_ENV': '"production"' },
  sourcemap: false,
  // Licence comments (uPlot's MIT notice) stay, at the end of each file.
  legalComments: 'eof',
  charset: 'utf8',
  banner: { js: notice, css: notice },
  logLevel: 'warning',
});
copyFileSync(join(source, 'index.html'), join(output, 'index.html'));

for (const name of ['index.html', 'app.js', 'app.css']) {
  const file = join(output, name);
  // A bundle that names this machine's paths would leak them and differ between machines.
  if (readFileSync(file, 'utf8').includes(root)) throw new Error(`build-console: ${name} contains the build directory's path`);
  console.log(`dist/console/${name}  ${(statSync(file).size / 1024).toFixed(1)} KiB`);
}
