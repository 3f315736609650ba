// Renders a kustomization as `kubectl apply -k` would, with whichever renderer is on PATH.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';

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

/**
 * The objects a component renders to on the base alone, or on an overlay, in namespace `gateway` as
 * an overlay would put them: for the optional components no overlay carries, as an operator would
 * add them (ingress-nginx, which needs its controller; autoscale-on-concurrency, which needs a
 * metrics adapter and patches the autoscalers of overlays/prod).
 * @param {[string, string[]]} renderer from findRenderer()
 * @param {string} deployDir the deploy/ folder
 * @param {string} name the component's folder name under deploy/components
 * @param {string} onto the kustomization it is added to, relative to deployDir (`base`, `overlays/prod`)
 * @returns {object[]}
 */
export function renderComponent(renderer, deployDir, name, onto = 'base') {
  const folder = mkdtempSync(join(tmpdir(), 'gateway-component-'));
  try {
    const kustomization = {
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
      namespace: 'gateway',
      resources: [relative(folder, join(deployDir, onto))],
      components: [relative(folder, join(deployDir, 'components', name))],
    };
    writeFileSync(join(folder, 'kustomization.yaml'), stringify(kustomization));
    return render(renderer, folder);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}
