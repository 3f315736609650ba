/**
 * Every image the project runs but its own is pinned: the Dockerfile's base images, docker-compose.yml's
 * and every `image:` of the Kubernetes manifests under deploy/ (with each image a kustomization's
 * `images:` retags) name an exact release (a patch version: `redis:7.4.2-alpine`, never
 * `redis:7-alpine` or `latest`) and its digest (`...@sha256:<64 hex digits>`, the multi-arch index
 * digest), so that a rebuild or a rescheduled pod runs the very image that was tested: a tag can be
 * pushed again, a digest cannot. The gateway's own image (`gateway`, set by the overlays' `images:`
 * and by digest at release: docs/deployment.md, "Pinning images") is the one exception; the images
 * of TAG_ONLY, whose digests have no public record to check them against yet, keep their exact tag
 * alone until an operator resolves them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';

const ROOT = join(import.meta.dirname, '..');
/** The gateway's own image, as the base names it and compose builds it. */
const OWN_IMAGES = new Set(['gateway', 'gateway:local']);
/** Exact releases still pinned by tag alone (docs/deployment.md, "Pinning images", says why). */
const TAG_ONLY = new Set(['nats:2.10.24-alpine', 'natsio/prometheus-nats-exporter:0.15.0']);

/**
 * Why a reference's tag is not an exact release, or undefined when it is: major.minor.patch
 * (PostgreSQL numbers its releases major.minor, the minor being the patch release), with an optional
 * variant suffix.
 */
function tagProblem(reference) {
  const slash = reference.lastIndexOf('/');
  const colon = reference.indexOf(':', slash + 1);
  if (colon < 0) return 'no tag (latest)';
  const name = reference.slice(slash + 1, colon);
  const tag = reference.slice(colon + 1);
  const exact = name === 'postgres' ? /^v?\d+\.\d+(?:\.\d+)?(?:-[a-z0-9.]+)?$/ : /^v?\d+\.\d+\.\d+(?:-[a-z0-9.]+)?$/;
  return exact.test(tag) ? undefined : `a floating tag (${tag}): name a patch release`;
}

/**
 * Why a reference does not pin its image, or undefined when it does: an exact release and, after
 * it, the digest of that release (`name:tag@sha256:<64 hex>`); a reference of TAG_ONLY needs the
 * exact release alone.
 */
function pinProblem(reference, tagOnly = TAG_ONLY) {
  const at = reference.indexOf('@');
  const named = at >= 0 ? reference.slice(0, at) : reference;
  const tag = tagProblem(named);
  if (tag) return tag;
  if (at < 0) return tagOnly.has(reference) ? undefined : 'no digest: write @sha256:<digest> after the tag';
  return /^sha256:[0-9a-f]{64}$/.test(reference.slice(at + 1)) ? undefined : 'a digest that is not sha256:<64 hex digits>';
}

/** The YAML files under a folder. */
function yamlFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return yamlFiles(path);
    return /\.ya?ml$/.test(entry.name) ? [path] : [];
  });
}

/**
 * The images a kustomization's `images:` sets, as the references it renders (a retag of another
 * image there would override the pinned `image:` it names); the gateway's own is left out.
 */
function kustomizationImages(document) {
  return (document?.images ?? [])
    .filter((entry) => entry.name !== 'gateway')
    .map((entry) => `${entry.newName ?? entry.name}${entry.newTag === undefined ? '' : `:${entry.newTag}`}${entry.digest ? `@${entry.digest}` : ''}`);
}

/** Every `image` value in a parsed document, wherever it sits. */
function imagesIn(node, found = []) {
  if (Array.isArray(node)) for (const item of node) imagesIn(item, found);
  else if (node && typeof node === 'object')
    for (const [key, value] of Object.entries(node)) {
      if (key === 'image' && typeof value === 'string') found.push(value);
      else imagesIn(value, found);
    }
  return found;
}

/** Each image reference the project runs, with where it is written. */
function references() {
  const found = [];
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  for (const [, image] of dockerfile.matchAll(/^FROM\s+(\S+)/gim)) found.push(['Dockerfile', image]);
  for (const file of [join(ROOT, 'docker-compose.yml'), ...yamlFiles(join(ROOT, 'deploy'))])
    for (const document of parseAllDocuments(readFileSync(file, 'utf8'))) {
      const parsed = document.toJS();
      const images = /kustomization\.ya?ml$/.test(file) ? kustomizationImages(parsed) : imagesIn(parsed);
      for (const image of images) found.push([relative(ROOT, file), image]);
    }
  return found.filter(([, image]) => !OWN_IMAGES.has(image));
}

describe('image pins', () => {
  it('tells a pinned reference from a floating or digest-less one', () => {
    const digest = `@sha256:${'a'.repeat(64)}`;
    for (const pinned of [
      `redis:7.4.2-alpine${digest}`,
      `nats:2.10.24-alpine${digest}`,
      `node:22.22.0-slim${digest}`,
      `postgres:15.18-alpine${digest}`,
      `natsio/prometheus-nats-exporter:0.15.0${digest}`,
      `registry.example.com:5000/team/redis:7.4.2${digest}`,
    ])
      expect(pinProblem(pinned), pinned).toBeUndefined();
    for (const unpinned of [
      'redis',
      'redis:latest',
      'redis:7-alpine',
      'nats:2.10-alpine',
      'node:22-slim',
      'postgres:15-alpine',
      'registry.example.com:5000/redis',
      'redis:7.4.2-alpine',
      'postgres:15.18-alpine',
      'node:22.22.0-slim',
      'registry.example.com:5000/team/redis:7.4.2',
      `redis:7-alpine${digest}`,
      `redis@sha256:${'0'.repeat(64)}`,
      'redis:7.4.2-alpine@sha256:abc',
    ])
      expect(pinProblem(unpinned, new Set()), unpinned).toBeDefined();
  });

  it('lets only the listed exact releases go without a digest', () => {
    expect(pinProblem('nats:2.10.24-alpine')).toBeUndefined();
    expect(pinProblem('nats:2.10.25-alpine')).toMatch(/no digest/);
    expect(pinProblem('redis:7.4.2-alpine')).toMatch(/no digest/);
  });

  it('finds the images of the Dockerfile, compose and the manifests', () => {
    const files = new Set(references().map(([file]) => file));
    for (const file of ['Dockerfile', 'docker-compose.yml', 'deploy/components/redis/redis.yaml', 'deploy/components/nats/nats.yaml'])
      expect(files).toContain(file);
  });

  it.each(references())('%s runs %s, pinned', (_file, image) => {
    expect(pinProblem(image)).toBeUndefined();
  });
});
