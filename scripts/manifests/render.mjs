// Renders a kustomization as `kubectl apply -k` would, with whichever renderer is on PATH.
import { execFileSync } from 'node:child_process';
import { parseAllDocuments } from 'yaml';

/**
 * The renderer on PATH: `kubectl kustomize`, or `kustomize build`; undefined when neither is (CI
 * machines may have none).
 * @returns {[string, string[]] | undefined}
 */
export function findRenderer() {
  return [
    ['kubectl', ['kustomize']],
    ['kustomize', ['build']],
  ].find(([command]) => {
    try {
      execFileSync(command, ['version', ...(command === 'kubectl' ? ['--client'] : [])], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * The objects a kustomization renders to; throws with the renderer's own message when it fails.
 * @param {[string, string[]]} renderer from findRenderer()
 * @param {string} folder the kustomization's folder
 * @returns {object[]}
 */
export function render([command, args], folder) {
  const output = execFileSync(command, [...args, folder], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return parseAllDocuments(output)
    .map((document) => document.toJS())
    .filter(Boolean);
}
