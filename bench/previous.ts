/**
 * An earlier commit of the gateway, built once under .run/bench-previous/<commit>, for the suites
 * that measure this checkout beside the code it changed, in the same run on the same machine.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, openSync, closeSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** A built checkout of an earlier commit. */
export interface PreviousBuild {
  /** The commit, in full. */
  commit: string;
  /** Its first line, for the report. */
  subject: string;
  /** Where it is built: ClusterOptions.root. */
  root: string;
}

function git(...args: string[]): string {
  const result = spawnSync('git', args, { cwd: ROOT, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`git ${args.join(' ')}: ${result.stderr.trim()}`);
  return result.stdout.trim();
}

/**
 * The commit before the first one that added `path` (a file of this repository): the code as it
 * was before a feature whose contract that file is.
 */
export function commitBefore(path: string): string {
  const added = git('log', '--format=%H', '--diff-filter=A', '--', path).split('\n').filter(Boolean).at(-1);
  if (!added) throw new Error(`no commit of this repository adds ${path} (a shallow clone? fetch its history, or name a commit with --against=<ref>)`);
  return git('rev-parse', `${added}^`);
}

/**
 * Builds `ref` (a commit, branch or tag of this repository) once: its tree exported with git
 * archive, installed with the lockfile it carries (pnpm's store makes a second install quick) and
 * built with its own `pnpm build`. A later run reuses the build; a failed one is started afresh.
 * The install's and build's output go to `build.log` beside it.
 */
export function buildPrevious(ref: string): PreviousBuild {
  const commit = git('rev-parse', '--verify', `${ref}^{commit}`);
  const subject = git('log', '-1', '--format=%h %s', commit);
  const root = join(ROOT, '.run', 'bench-previous', commit);
  const built = join(root, '.built');
  if (existsSync(built)) return { commit, subject, root };
  rmSync(root, { recursive: true, force: true });
  mkdirSync(root, { recursive: true });
  const log = join(root, 'build.log');
  console.error(`building ${subject.slice(0, 80)} under ${root} (once; its log: ${log})`);
  const output = openSync(log, 'w');
  try {
    const steps: Array<[string, string[]]> = [
      ['sh', ['-c', `git -C "${ROOT}" archive --format=tar ${commit} | tar -x -C "${root}"`]],
      ['pnpm', ['install', '--frozen-lockfile', '--prefer-offline']],
      ['pnpm', ['build']],
    ];
    for (const [command, args] of steps) {
      const result = spawnSync(command, args, { cwd: root, stdio: ['ignore', output, output], env: { ...process.env, CI: 'true' } });
      if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed for ${subject} (exit ${result.status}); see ${log}`);
    }
  } finally {
    closeSync(output);
  }
  writeFileSync(built, `${commit}\n`);
  return { commit, subject, root };
}
