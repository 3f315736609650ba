// What each gateway service runs with in a rendered overlay, and whether it can work with it: its
// container's effective environment resolved as the kubelet builds it (envFrom ConfigMaps and
// Secrets in order, later ones winning, then env, which wins over all), and, for every variable the
// service's config schema reads (the built schema, services/<name>/dist/config.js), a value that is
// set, or the schema's default. A required variable nobody sets, a ConfigMap or Secret that neither
// the overlay renders nor deploy/README.md has the operator create, a key missing from it, and an
// address (a *_URL or *_ADDR the service connects to) naming a Service the overlay does not render
// or the pod itself (127.0.0.1, the schemas' defaults for one machine) are problems. Values that
// come from an operator's Secret are the operator's: their hosts are not checked. The cache's
// entries (CACHE_REDIS_URL) must be in a Redis other than the state Redis (REDIS_URL), and one the
// overlay runs must be bounded and evicting (--maxmemory, an allkeys-/volatile- policy).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { OPERATOR_SECRETS } from './operations.mjs';

/** The services, each with the export of its config schema. */
export const SERVICE_SCHEMAS = {
  edge: 'EdgeConfigSchema',
  auth: 'AuthConfigSchema',
  router: 'RouterConfigSchema',
  executor: 'ExecutorConfigSchema',
  metering: 'MeteringConfigSchema',
  mcp: 'McpConfigSchema',
  guard: 'GuardConfigSchema',
  cache: 'CacheConfigSchema',
  batch: 'BatchConfigSchema',
  'request-log': 'RequestLogConfigSchema',
};

/**
 * Each service's config schema, from its build (`pnpm build` writes services/<name>/dist/config.js):
 * the variables it reads, their defaults and which are required.
 * @param {string} root the repository
 * @returns {Promise<Record<string, { properties: Record<string, { default?: unknown }>, required: string[] }>>}
 */
export async function configSchemas(root) {
  const schemas = {};
  for (const [service, exported] of Object.entries(SERVICE_SCHEMAS)) {
    const path = join(root, 'services', service, 'dist', 'config.js');
    if (!existsSync(path))
      throw new Error(`services/${service}/dist/config.js is missing: run pnpm build first (its config schema says what ${service} reads)`);
    const schema = (await import(pathToFileURL(path).href))[exported];
    if (!schema?.properties) throw new Error(`services/${service}/dist/config.js exports no ${exported}`);
    schemas[service] = { properties: schema.properties, required: schema.required ?? [] };
  }
  return schemas;
}

const nameOf = (object) => object?.metadata?.name;
/** A generated object's name without kustomize's hash suffix. */
const baseName = (name) => String(name ?? '').replace(/-[a-z0-9]{10}$/, '');
const decode = (value) => Buffer.from(String(value), 'base64').toString('utf8');

/** The keys (and values, where the overlay renders them) of a Secret or ConfigMap an envFrom or a keyRef names. */
function sourceOf(objects, kind, name) {
  const object = objects.find((candidate) => candidate?.kind === kind && nameOf(candidate) === name);
  if (object) {
    const data = kind === 'Secret' ? Object.fromEntries(Object.entries(object.data ?? {}).map(([key, value]) => [key, decode(value)])) : { ...object.data };
    return { values: { ...data, ...object.stringData }, operator: false };
  }
  if (kind === 'Secret' && name in OPERATOR_SECRETS) {
    const declared = OPERATOR_SECRETS[name];
    if (declared === 'catalog') return { values: undefined, operator: true }; // the provider keys: the catalog's api_key_env
    return { values: Object.fromEntries(declared.map((key) => [key, undefined])), operator: true };
  }
  return undefined;
}

/**
 * A container's environment as the kubelet builds it: name -> { value, from, operator, optional }
 * (value undefined when an operator's Secret holds it), with the problems of its references.
 */
export function effectiveEnvironment(objects, container, at) {
  const environment = new Map();
  const problems = [];
  for (const source of container.envFrom ?? []) {
    const kind = source.configMapRef ? 'ConfigMap' : 'Secret';
    const reference = source.configMapRef ?? source.secretRef;
    const found = sourceOf(objects, kind, reference?.name);
    const from = `${kind} ${baseName(reference?.name)}`;
    if (!found) {
      if (!reference?.optional)
        problems.push(`${at} takes the ${from}, which the overlay does not render and deploy/README.md does not have the operator create`);
      continue;
    }
    if (!found.values) continue; // keys known only to the catalog: provider keys, none a schema reads
    for (const [key, value] of Object.entries(found.values))
      environment.set(`${source.prefix ?? ''}${key}`, { value, from, operator: found.operator, optional: Boolean(reference?.optional) });
  }
  for (const variable of container.env ?? []) {
    if (variable.value !== undefined || !variable.valueFrom) {
      environment.set(variable.name, { value: String(variable.value ?? ''), from: 'env', operator: false, optional: false });
      continue;
    }
    const reference = variable.valueFrom.configMapKeyRef ?? variable.valueFrom.secretKeyRef;
    if (!reference) {
      environment.set(variable.name, { value: undefined, from: 'the pod', operator: true, optional: false }); // fieldRef, resourceFieldRef
      continue;
    }
    const kind = variable.valueFrom.configMapKeyRef ? 'ConfigMap' : 'Secret';
    const found = sourceOf(objects, kind, reference.name);
    const from = `${kind} ${baseName(reference.name)}`;
    if (!found || (found.values && !(reference.key in found.values))) {
      if (!reference.optional)
        problems.push(
          found
            ? `${at} takes ${variable.name} from the key ${reference.key} of the ${from}, which has no such key`
            : `${at} takes ${variable.name} from the ${from}, which the overlay does not render and deploy/README.md does not have the operator create`,
        );
      continue;
    }
    environment.set(variable.name, { value: found.values?.[reference.key], from, operator: found.operator, optional: Boolean(reference.optional) });
  }
  return { environment, problems };
}

/** Variables that name a server the service connects to: *_URL and *_ADDR, but its own listeners and the browser's redirects. */
const isAddress = (name) => /(_URL|_ADDR)$/.test(name) && !/LISTEN_ADDR$/.test(name) && !/REDIRECT_URL$/.test(name);
/** The pod itself: what a default for one machine points to. */
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '0.0.0.0']);

/** The hosts of an address (`scheme://[user@]host:port`, `dns:///host:port`, `host:port`, comma-separated lists). */
export function hostsOf(value) {
  return String(value)
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => {
      const rest = entry.replace(/^[a-z][a-z0-9+.-]*:\/\/\/?/i, '').replace(/^[^@/]*@/, '');
      return /^\[([^\]]+)\]/.exec(rest)?.[1] ?? /^[^:/?#]+/.exec(rest)?.[0] ?? '';
    })
    .filter(Boolean);
}

/**
 * Why a host does not resolve to a server in the overlay's namespace, or undefined when it does (or
 * is outside the cluster): a single-label name must be a rendered Service; `<pod>.<service>` a pod of
 * a rendered (headless) Service, or, named by a StatefulSet of the overlay, one that is missing;
 * `<service>.<namespace>[.svc[.cluster.local]]` a Service when the namespace is the overlay's.
 */
function unresolved(host, services, namespace, governing) {
  if (LOOPBACK.has(host)) return 'the pod itself';
  if (/^[\d.]+$/.test(host) || host.includes(':')) return undefined; // an address of the operator's
  const labels = host.replace(/\.svc(\.cluster\.local)?$/, '').split('.');
  const inCluster = /\.svc(\.cluster\.local)?$/.test(host);
  if (labels.length === 1) return services.has(labels[0]) ? undefined : `no Service ${labels[0]}`;
  if (labels.length === 2 && !inCluster && services.has(labels[1])) return undefined; // a StatefulSet pod: nats-0.nats
  if (labels.length === 2 && !inCluster && governing.has(labels[1])) return `no Service ${labels[1]}`; // its StatefulSet's, not rendered
  if (labels.length === 2 && labels[1] === namespace) return services.has(labels[0]) ? undefined : `no Service ${labels[0]}`;
  if (labels.length === 3 && labels[2] === namespace) return services.has(labels[1]) ? undefined : `no Service ${labels[1]}`;
  return inCluster && labels.at(-1) === namespace ? `no Service ${labels.at(-2)}` : undefined;
}

/**
 * The problems of each gateway service's environment in a rendered overlay.
 * @param {string} label the overlay, for the messages
 * @param {object[]} objects the rendered objects
 * @param {Awaited<ReturnType<typeof configSchemas>>} schemas from configSchemas()
 * @returns {string[]}
 */
export function environmentProblems(label, objects, schemas) {
  const problems = [];
  const services = new Set(objects.filter((object) => object?.kind === 'Service').map(nameOf));
  /** The Services StatefulSets name for their pods' DNS names (`<pod>.<serviceName>`). */
  const governing = new Set(objects.filter((object) => object?.kind === 'StatefulSet').map((set) => set.spec?.serviceName));
  for (const workload of objects.filter((object) => object?.kind === 'Deployment' && nameOf(object) in schemas)) {
    const service = nameOf(workload);
    const { properties, required } = schemas[service];
    const container = (workload.spec?.template?.spec?.containers ?? [])[0] ?? {};
    const at = `${label}: Deployment ${service}`;
    const { environment, problems: referenceProblems } = effectiveEnvironment(objects, container, at);
    problems.push(...referenceProblems);
    for (const [variable, schema] of Object.entries(properties)) {
      const set = environment.get(variable);
      // TypeBox lists a variable with a default as required too: env-schema applies the default.
      const mandatory = required.includes(variable) && schema.default === undefined;
      if (!set && mandatory) {
        problems.push(`${at} reads ${variable}, which is required and which nothing sets`);
        continue;
      }
      if (set?.optional && mandatory) problems.push(`${at} reads ${variable}, which is required, from the optional ${set.from}`);
      if (!isAddress(variable) || set?.operator) continue;
      const value = set ? set.value : schema.default;
      const from = set ? `from the ${set.from}` : "the schema's default";
      const reasons = new Set(hostsOf(value ?? '').map((host) => unresolved(host, services, workload.metadata?.namespace, governing)));
      for (const why of reasons) if (why) problems.push(`${at} reads ${variable}=${value} (${from}): ${why} in the overlay`);
    }
    if (service === 'cache') problems.push(...cacheRedisProblems(at, objects, environment, properties));
  }
  return problems;
}

/** A redis-server's setting among its container's args (`--maxmemory 256mb`), or undefined. */
function redisArgument(container, name) {
  const args = [...(container.command ?? []), ...(container.args ?? [])].map(String);
  const index = args.indexOf(`--${name}`);
  return index === -1 ? undefined : args[index + 1];
}

/**
 * The cache's Redis servers: CACHE_REDIS_URL (its entries, which it fills) must not name REDIS_URL's
 * server (the state Redis, which must never evict and refuses writes when full), and a Redis the
 * overlay runs for it must start bounded (--maxmemory other than 0) and evicting (a policy other
 * than noeviction), or it grows until it refuses every store or is killed. Values from an
 * operator's Secret are the operator's.
 */
function cacheRedisProblems(at, objects, environment, properties) {
  const readOf = (variable) => {
    const set = environment.get(variable);
    return set ? (set.operator ? undefined : set.value) : properties[variable]?.default;
  };
  const [entries, state] = [readOf('CACHE_REDIS_URL'), readOf('REDIS_URL')];
  if (entries === undefined) return [];
  const problems = [];
  const hostAndPort = (url) =>
    String(url)
      .replace(/^[a-z][a-z0-9+.-]*:\/\/\/?/i, '')
      .replace(/^[^@/]*@/, '')
      .replace(/\/.*$/, '');
  if (state !== undefined && hostAndPort(entries) === hostAndPort(state))
    problems.push(`${at}: CACHE_REDIS_URL (${entries}) is REDIS_URL's Redis: the cache's entries need a bounded, evicting Redis of their own`);
  const [host] = hostsOf(entries);
  const service = objects.find((object) => object?.kind === 'Service' && nameOf(object) === host);
  const selector = Object.entries(service?.spec?.selector ?? {});
  const workload = selector.length
    ? objects.find(
        (object) =>
          ['Deployment', 'StatefulSet'].includes(object?.kind) && selector.every(([key, value]) => object.spec?.template?.metadata?.labels?.[key] === value),
      )
    : undefined;
  const redis = (workload?.spec?.template?.spec?.containers ?? []).find((container) => /(^|\/)redis(:|@|$)/.test(String(container.image)));
  if (!redis) return problems;
  const maxmemory = redisArgument(redis, 'maxmemory');
  const policy = redisArgument(redis, 'maxmemory-policy');
  if (maxmemory === undefined || /^0[a-z]*$/i.test(maxmemory) || !/^(allkeys|volatile)-/.test(policy ?? ''))
    problems.push(
      `${at}: CACHE_REDIS_URL names ${workload.kind} ${nameOf(workload)}, whose Redis is not bounded and evicting (--maxmemory ${maxmemory ?? 'unset'}, --maxmemory-policy ${policy ?? 'unset'}): it grows until it refuses the cache's stores`,
    );
  return problems;
}
