// How a rendered overlay behaves in operation, each rule a function of the rendered objects that
// returns its problems: NATS probed as the official chart does, its storage bounded and exported
// (nats-storage.mjs), the gateway's probes patient with a loaded pod and a startup that waits for
// its dependencies, the gateway's pods spread over zones
// and hosts, drains that take one pod at a time, autoscalers where production needs them,
// configuration that rolls the pods it changes (or is reloaded in place), and a public entry point that streams, takes the
// edge's bodies and keeps the admin API and the console private.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { natsExporterProblems, natsStorageProblems } from './nats-storage.mjs';

const GATEWAY = ['edge', 'auth', 'router', 'executor', 'metering', 'guard', 'cache', 'batch'];
/** The official NATS chart's probes, on the monitor port. */
const NATS_PROBES = { startupProbe: '/healthz', readinessProbe: '/healthz?js-server-only=true', livenessProbe: '/healthz?js-enabled-only=true' };
const SPREAD_KEYS = ['topology.kubernetes.io/zone', 'kubernetes.io/hostname'];
/**
 * Services that connect to a dependency before they listen: their startup probe outlasts its
 * outage. The cache waits for Redis too, but its probes ask /healthz on its metrics port, which
 * answers while it waits: liveness never judges the wait. The batch service migrates its
 * PostgreSQL at start: its startup probe outlasts a database away.
 */
const WAITS_BEFORE_LISTENING = { auth: 'Redis', metering: 'NATS', guard: 'Redis', batch: 'PostgreSQL' };
/** How long (s) such a startup probe waits at least before the kubelet restarts the container. */
const STARTUP_WAIT_SECONDS = 300;
/** The least a probe waits for its answer (s): the default 1 s fails a pod whose event loop is only busy. */
const PROBE_TIMEOUT_SECONDS = 5;
/** The least silence (s) before liveness restarts a pod: never for a GC pause or a burst of work. */
const LIVENESS_PATIENCE_SECONDS = 30;
/** What production's autoscalers must scale (the router and the MCP service run fixed counts). */
const AUTOSCALED = ['edge', 'executor', 'auth', 'metering', 'guard'];
/** Generated ConfigMaps: rendered as <name>-<hash of the content>, so that a change rolls their readers. */
const GENERATED = ['gateway-config'];
/**
 * Generated ConfigMaps the services reload when their file changes (the catalog, the plans):
 * rendered with their hash (a change rolls their readers), or without it (components/live-config:
 * a change is applied in place and reloaded), and then mounted as a directory, never with subPath
 * (the kubelet never updates a subPath mount), with reloading on (CONFIG_RELOAD_INTERVAL_MS not 0).
 */
const RELOADED = ['gateway-catalog', 'gateway-plans'];
/** Paths only the edge's admin port serves. */
const PRIVATE_PATHS = ['/admin', '/console'];
/** A stream's longest silence and length the entry point must allow, in seconds. */
const STREAM_SECONDS = 3600;
const NGINX = 'nginx.ingress.kubernetes.io/';

/**
 * The Secrets the operator creates (deploy/README.md shows each command): workloads may require
 * them although no overlay renders them. Each with the variables it carries: the provider keys are
 * the variables the catalog's deployments name (api_key_env), read from the rendered catalog.
 */
export const OPERATOR_SECRETS = {
  'gateway-provider-keys': 'catalog',
  'gateway-admin': ['EDGE_ADMIN_TOKEN'],
  'gateway-redis': ['REDIS_URL'],
  // The cache's entries' Redis, bounded and evicting: the cache alone reads it.
  'gateway-cache-redis': ['CACHE_REDIS_URL'],
  'gateway-nats': ['NATS_URL'],
  'gateway-bootstrap': ['GATEWAY_BOOTSTRAP_KEY'],
  'gateway-request-log-database': ['DATABASE_URL'],
  // The batch service's key that seals the owners' keys while their batches run (required).
  'gateway-batch': ['BATCH_SECRETS_KEY'],
  // components/nats-cluster: each NATS client's password, by service (docs/deploy-entry.md, "NATS users").
  'gateway-nats-users': ['edge', 'metering', 'request-log', 'router', 'executor'],
};

const nameOf = (object) => object.metadata?.name;
const byKind = (objects, kind) => objects.filter((object) => object?.kind === kind);
const containersOf = (workload) => workload.spec?.template?.spec?.containers ?? [];

/** Whether a container runs a NATS server (its image is nats). */
const isNats = (container) => /(^|\/)nats(:|@|$)/.test(String(container.image));
/** The workloads that run a NATS server: components/nats-cluster's StatefulSet, dev's Deployment. */
const natsWorkloads = (objects) => [...byKind(objects, 'StatefulSet'), ...byKind(objects, 'Deployment')].filter((set) => containersOf(set).some(isNats));

/** NATS servers (containers running a nats image, in a StatefulSet or dev's Deployment) without the official chart's probes. */
export function natsProbeProblems(label, objects) {
  return natsWorkloads(objects).flatMap((set) =>
    containersOf(set)
      .filter(isNats)
      .flatMap((container) =>
        Object.entries(NATS_PROBES)
          .filter(([probe, path]) => container[probe]?.httpGet?.path !== path)
          .map(
            ([probe, path]) =>
              `${label}: ${set.kind} ${nameOf(set)}: the ${probe} must be GET ${path} (the official chart's), not ${container[probe]?.httpGet?.path ?? 'none'}`,
          ),
      ),
  );
}

/** Seconds of failed probes before a probe acts: failureThreshold periods (Kubernetes' defaults 3 and 10 s). */
const patience = (probe) => (probe?.failureThreshold ?? 3) * (probe?.periodSeconds ?? 10);
/** What a probe asks: its handler, for comparing two probes. */
const handlerOf = (probe) => JSON.stringify(probe?.httpGet ?? probe?.grpc ?? probe?.tcpSocket ?? probe?.exec ?? null);

/**
 * Gateway probes that cascade or crash-loop: a probe that gives up on a busy pod within a second, a
 * liveness that restarts a pod after less than half a minute of silence or before readiness took
 * it out of its Service (its load would land on the others, which then stall in turn), no startup
 * probe holding liveness back while the process starts, and for the services that connect to Redis
 * or NATS before they listen, a startup probe shorter than an outage of it (liveness would restart
 * them in a loop while it lasts).
 */
export function probeProblems(label, objects) {
  const problems = [];
  for (const deployment of byKind(objects, 'Deployment').filter((candidate) => GATEWAY.includes(nameOf(candidate)))) {
    const name = nameOf(deployment);
    const container = containersOf(deployment).find((candidate) => candidate.name === name) ?? containersOf(deployment)[0] ?? {};
    const at = `${label}: Deployment ${name}`;
    const { startupProbe: startup, readinessProbe: readiness, livenessProbe: liveness } = container;
    if (!startup) problems.push(`${at} has no startupProbe: liveness would judge it while it starts`);
    else if (handlerOf(startup) !== handlerOf(liveness)) problems.push(`${at}: its startupProbe must ask what its livenessProbe asks`);
    if (startup && name in WAITS_BEFORE_LISTENING && patience(startup) < STARTUP_WAIT_SECONDS)
      problems.push(
        `${at}: its startupProbe gives up after ${patience(startup)} s, but it waits for ${WAITS_BEFORE_LISTENING[name]} before it listens: at least ${STARTUP_WAIT_SECONDS} s`,
      );
    for (const [probeName, probe] of Object.entries({ startupProbe: startup, readinessProbe: readiness, livenessProbe: liveness }))
      if (probe && (probe.timeoutSeconds ?? 1) < PROBE_TIMEOUT_SECONDS)
        problems.push(
          `${at}: its ${probeName} waits ${probe.timeoutSeconds ?? 1} s for an answer, a loaded event loop more: at least ${PROBE_TIMEOUT_SECONDS}`,
        );
    if (liveness && patience(liveness) < LIVENESS_PATIENCE_SECONDS)
      problems.push(`${at}: its livenessProbe restarts it after ${patience(liveness)} s without an answer: at least ${LIVENESS_PATIENCE_SECONDS}`);
    if (liveness && readiness && patience(readiness) >= patience(liveness))
      problems.push(
        `${at}: its readinessProbe (${patience(readiness)} s) must take it out of its Service before its livenessProbe (${patience(liveness)} s) restarts it`,
      );
  }
  return problems;
}

/**
 * Gateway Deployments and NATS servers whose pods may pile onto one zone or host: a spread over
 * each, selecting their own pods.
 */
export function spreadProblems(label, objects) {
  const spread = [...byKind(objects, 'Deployment').filter((deployment) => GATEWAY.includes(nameOf(deployment))), ...natsWorkloads(objects)];
  return spread.flatMap((deployment) => {
    const own = Object.entries(deployment.spec?.selector?.matchLabels ?? {});
    const podLabels = deployment.spec?.template?.metadata?.labels ?? {};
    const selectsOwn = (selector) => {
      const entries = Object.entries(selector?.matchLabels ?? {});
      return own.every(([key, value]) => selector?.matchLabels?.[key] === value) && entries.every(([key, value]) => podLabels[key] === value);
    };
    const constraints = deployment.spec?.template?.spec?.topologySpreadConstraints ?? [];
    return SPREAD_KEYS.filter((key) => !constraints.some((constraint) => constraint.topologyKey === key && selectsOwn(constraint.labelSelector))).map(
      (key) => `${label}: ${deployment.kind} ${nameOf(deployment)} has no topologySpreadConstraint over ${key} selecting its own pods`,
    );
  });
}

/** A Kubernetes memory quantity (`1Gi`, `512Mi`, `1G`, `1073741824`) in bytes. */
export function quantityBytes(quantity) {
  const [, number, unit = ''] = /^(\d+(?:\.\d+)?)([KMGT]i?|k)?$/.exec(String(quantity ?? '')) ?? [];
  if (number === undefined) return Number.NaN;
  const power = ' KMGT'.indexOf(unit[0]?.toUpperCase() ?? ' ');
  return Number(number) * (unit.endsWith('i') ? 1024 : 1000) ** Math.max(power, 0);
}

/** Go's GOMEMLIMIT (`921MiB`, `1GiB`, `966367641`) in bytes. */
const goMemoryBytes = (value) => {
  const [, number, unit = 'B'] = /^(\d+)(B|KiB|MiB|GiB|TiB)?$/.exec(String(value ?? '')) ?? [];
  return number === undefined ? Number.NaN : Number(number) * 1024 ** ['B', 'KiB', 'MiB', 'GiB', 'TiB'].indexOf(unit);
};
/** GOMEMLIMIT's share of the container's memory limit: room for what Go does not count, and for the collector to act. */
const GOMEMLIMIT_SHARE = [0.8, 0.95];

/**
 * NATS servers without GOMEMLIMIT at 80-95% of their memory limit: without it Go lets the heap
 * grow to twice what is live before it collects, past the container's limit, and the kernel kills
 * the server (and with it a replica of the usage stream).
 */
export function natsMemoryProblems(label, objects) {
  return natsWorkloads(objects).flatMap((set) =>
    containersOf(set)
      .filter(isNats)
      .flatMap((container) => {
        const at = `${label}: ${set.kind} ${nameOf(set)}`;
        const limit = quantityBytes(container.resources?.limits?.memory);
        const value = container.env?.find((variable) => variable.name === 'GOMEMLIMIT')?.value;
        if (value === undefined) return [`${at}: the NATS server has no GOMEMLIMIT (80-95% of its memory limit)`];
        const share = goMemoryBytes(value) / limit;
        return share >= GOMEMLIMIT_SHARE[0] && share <= GOMEMLIMIT_SHARE[1]
          ? []
          : [
              `${at}: GOMEMLIMIT ${value} is ${Number.isFinite(share) ? `${Math.round(share * 100)}%` : 'not comparable to'} of its memory limit ${container.resources?.limits?.memory}: 80-95%`,
            ];
      }),
  );
}

/** The variables a service reads: those its own .env.example names (a test keeps it complete). */
function variablesRead(root, service) {
  const path = join(root, 'services', service, '.env.example');
  const text = existsSync(path) ? readFileSync(path, 'utf8') : '';
  return new Set([...text.matchAll(/^#?\s*([A-Z][A-Z0-9_]*)=/gm)].map((match) => match[1]));
}

/** The variables a Secret carries: an operator's as declared, a rendered one's keys; undefined when unknown. */
function secretVariables(objects, name) {
  const declared = OPERATOR_SECRETS[name];
  if (declared === 'catalog') {
    const catalog = byKind(objects, 'ConfigMap').find((map) => /^gateway-catalog(-[a-z0-9]{10})?$/.test(nameOf(map) ?? ''));
    const text = Object.values(catalog?.data ?? {}).join('\n');
    return [...new Set([...text.matchAll(/api_key_env:\s*"?([A-Z][A-Z0-9_]*)/g)].map((match) => match[1]))];
  }
  if (declared) return declared;
  const secret = byKind(objects, 'Secret').find((candidate) => nameOf(candidate) === name);
  return secret ? Object.keys({ ...secret.data, ...secret.stringData }) : undefined;
}

/**
 * Secrets given to a gateway service that does not read what they carry: the executors and the
 * router with Redis's URL (its password), auth with NATS's, a service with the admin token. Each
 * service gets only the Secrets, and the keys of Secrets, whose variables its .env.example names.
 */
export function secretProblems(root, label, objects) {
  const problems = [];
  for (const deployment of byKind(objects, 'Deployment').filter((candidate) => GATEWAY.includes(nameOf(candidate)))) {
    const read = variablesRead(root, nameOf(deployment));
    const at = `${label}: Deployment ${nameOf(deployment)}`;
    for (const container of containersOf(deployment)) {
      for (const source of container.envFrom ?? []) {
        const name = source.secretRef?.name;
        if (!name) continue;
        const unread = (secretVariables(objects, name) ?? []).filter((variable) => !read.has(variable));
        if (unread.length > 0) problems.push(`${at} takes the Secret ${name}, whose ${unread.join(', ')} it does not read`);
      }
      // A variable only another one's value expands ($(NATS_PASSWORD) in NATS_URL) is read through it.
      const expanded = new Set(
        (container.env ?? []).flatMap((variable) => [...String(variable.value ?? '').matchAll(/\$\(([A-Z0-9_]+)\)/g)].map((match) => match[1])),
      );
      for (const variable of container.env ?? [])
        if (variable.valueFrom?.secretKeyRef && !read.has(variable.name) && !expanded.has(variable.name))
          problems.push(`${at} takes ${variable.name} from the Secret ${variable.valueFrom.secretKeyRef.name}, and does not read it`);
    }
  }
  return problems;
}

/** PodDisruptionBudgets that let a drain evict more than one pod at once, or none ever. */
export function disruptionProblems(label, objects) {
  return byKind(objects, 'PodDisruptionBudget')
    .filter((budget) => budget.spec?.minAvailable !== undefined || !(typeof budget.spec?.maxUnavailable === 'number' && budget.spec.maxUnavailable <= 1))
    .map((budget) => `${label}: PodDisruptionBudget ${nameOf(budget)} must set maxUnavailable: 1 and no minAvailable`);
}

/**
 * Workloads an autoscaler scales that set a replica count (each apply would reset the autoscaler's),
 * and in production the Deployments no autoscaler scales.
 */
export function autoscalerProblems(label, objects, production) {
  const targets = byKind(objects, 'HorizontalPodAutoscaler').map((autoscaler) => autoscaler.spec?.scaleTargetRef ?? {});
  const fighting = objects.filter(
    (object) => object?.spec?.replicas !== undefined && targets.some((target) => target.kind === object.kind && target.name === nameOf(object)),
  );
  const scaled = new Set(targets.filter((target) => target.kind === 'Deployment').map((target) => target.name));
  return [
    ...fighting.map((object) => `${label}: ${object.kind} ${nameOf(object)} sets replicas although an autoscaler owns them`),
    ...(production ? AUTOSCALED.filter((name) => !scaled.has(name)) : []).map((name) => `${label}: no HorizontalPodAutoscaler scales Deployment ${name}`),
  ];
}

/** The metric types an autoscaler reads from a metrics adapter rather than from the kubelet's resource metrics. */
const ADAPTER_METRICS = { Pods: 'pods', Object: 'object', External: 'external' };
/** The APIServices through which an adapter (prometheus-adapter, KEDA) serves them. */
const ADAPTER_APIS = ['v1beta1.custom.metrics.k8s.io', 'v1beta2.custom.metrics.k8s.io', 'v1beta1.external.metrics.k8s.io'];

/**
 * The per-pod targets of deploy/README.md's capacity table ("Per replica"): each row names a
 * metric in backticks followed by its target, as `gateway_executor_in_flight` 700.
 */
export function capacityTargets(root) {
  const text = readFileSync(join(root, 'deploy', 'README.md'), 'utf8');
  const targets = new Map();
  for (const line of text.split('\n').filter((candidate) => candidate.startsWith('|')))
    for (const match of line.matchAll(/`(gateway_[a-z0-9_]+)` ([\d,]+)/g)) targets.set(match[1], Number(match[2].replaceAll(',', '')));
  return targets;
}

/**
 * Autoscalers that cannot scale without what the cluster may lack, or scale on a target nobody
 * measured: every one keeps a CPU utilization metric (what works with the kubelet's metrics alone);
 * one that also reads a custom or external metric needs an adapter serving it, which an overlay must
 * then render (`adapter`: false for a component added beside one), since an autoscaler that cannot
 * read one of its metrics never scales down; and each custom metric's per-pod target is the one
 * deploy/README.md's capacity table derives from measurements (`targets`, from capacityTargets).
 */
export function autoscalerMetricProblems(label, objects, targets, { adapter = true } = {}) {
  const problems = [];
  const served = byKind(objects, 'APIService').some((service) => ADAPTER_APIS.includes(nameOf(service)));
  for (const autoscaler of byKind(objects, 'HorizontalPodAutoscaler')) {
    const at = `${label}: HorizontalPodAutoscaler ${nameOf(autoscaler)}`;
    const metrics = autoscaler.spec?.metrics ?? [];
    if (!metrics.some((metric) => metric.type === 'Resource' && metric.resource?.name === 'cpu' && metric.resource?.target?.type === 'Utilization'))
      problems.push(`${at} has no CPU utilization metric, the one every cluster can read`);
    for (const metric of metrics.filter((candidate) => candidate.type in ADAPTER_METRICS)) {
      const source = metric[ADAPTER_METRICS[metric.type]] ?? {};
      const name = source.metric?.name;
      if (adapter && !served)
        problems.push(
          `${at} reads ${name}, which only a metrics adapter serves, and nothing here renders one (${ADAPTER_APIS[0]}): without it the autoscaler never scales down`,
        );
      const target = Number(source.target?.averageValue ?? source.target?.value);
      if (!targets.has(name)) problems.push(`${at} scales on ${name}, which deploy/README.md's capacity table does not size`);
      else if (target !== targets.get(name))
        problems.push(`${at} targets ${name} at ${source.target?.averageValue ?? source.target?.value} a pod, not the capacity table's ${targets.get(name)}`);
    }
  }
  return problems;
}

/** Every ConfigMap name a pod template reads, with where. */
function configMapReads(template) {
  const spec = template?.spec ?? {};
  const containers = [...(spec.initContainers ?? []), ...(spec.containers ?? [])];
  return [
    ...containers.flatMap((container) => (container.envFrom ?? []).map((source) => source.configMapRef?.name)),
    ...containers.flatMap((container) => (container.env ?? []).map((variable) => variable.valueFrom?.configMapKeyRef?.name)),
    ...(spec.volumes ?? []).flatMap((volume) => [volume.configMap?.name, ...(volume.projected?.sources ?? []).map((source) => source.configMap?.name)]),
  ].filter(Boolean);
}

/**
 * Generated ConfigMaps rendered without their hash, or read by a name that is not the rendered one
 * (a change would roll nothing); the catalog or the plans kept by name but mounted where a change
 * never arrives (subPath) or with reloading off; the plans not mounted where auth's AUTH_PLANS_PATH
 * reads them.
 */
export function configRolloutProblems(label, objects) {
  const problems = [];
  const configMaps = byKind(objects, 'ConfigMap');
  const hashedOf = (name) => configMaps.find((map) => new RegExp(`^${name}-[a-z0-9]{10}$`).test(nameOf(map)));
  const rendered = new Map(GENERATED.map((name) => [name, hashedOf(name)]));
  for (const [name, map] of rendered) if (!map) problems.push(`${label}: ConfigMap ${name} is not generated with a hash of its content`);
  // The reloaded ones: hashed, or kept by name for live reload.
  const live = new Map();
  for (const name of RELOADED) {
    const hashed = hashedOf(name);
    const named = configMaps.find((map) => nameOf(map) === name);
    if (hashed) rendered.set(name, hashed);
    else if (named) live.set(name, named);
  }
  const workloads = [...byKind(objects, 'Deployment'), ...byKind(objects, 'StatefulSet')];
  for (const workload of workloads)
    for (const read of configMapReads(workload.spec?.template))
      for (const [name, map] of [...rendered, ...live])
        if (map && read.startsWith(name) && read !== nameOf(map))
          problems.push(`${label}: ${workload.kind} ${nameOf(workload)} reads ConfigMap ${read}, not ${nameOf(map)}`);
  problems.push(...liveReloadProblems(label, workloads, live, gatewayConfigData(configMaps)));
  const auth = byKind(objects, 'Deployment').find((deployment) => nameOf(deployment) === 'auth');
  const plans = rendered.get('gateway-plans') ?? live.get('gateway-plans');
  if (auth && plans) {
    const spec = auth.spec.template.spec;
    const volume = (spec.volumes ?? []).find((candidate) => candidate.configMap?.name === nameOf(plans))?.name;
    const container = spec.containers[0];
    const path = container.env?.find((variable) => variable.name === 'AUTH_PLANS_PATH')?.value;
    const files = (container.volumeMounts ?? [])
      .filter((mount) => mount.name === volume)
      .flatMap((mount) => (mount.subPath ? [mount.mountPath] : Object.keys(plans.data ?? {}).map((key) => `${mount.mountPath.replace(/\/$/, '')}/${key}`)));
    if (!files.includes(path)) problems.push(`${label}: auth's AUTH_PLANS_PATH (${path ?? 'unset'}) is not a file of the mounted ConfigMap ${nameOf(plans)}`);
  }
  return problems;
}

/** The data of the rendered gateway-config (hashed or not). */
function gatewayConfigData(configMaps) {
  return configMaps.find((map) => /^gateway-config(-[a-z0-9]{10})?$/.test(nameOf(map) ?? ''))?.data ?? {};
}

/**
 * For the catalog and the plans kept by name (live reload): a pod that mounts one with subPath
 * (never updated by the kubelet), or reloading turned off (CONFIG_RELOAD_INTERVAL_MS=0), would go
 * on with the old file after an apply, and no rollout would fix it.
 */
function liveReloadProblems(label, workloads, live, configData) {
  const problems = [];
  if (live.size > 0 && String(configData.CONFIG_RELOAD_INTERVAL_MS ?? '') === '0')
    problems.push(`${label}: ${[...live.keys()].join(' and ')} are kept by name for live reload, but gateway-config sets CONFIG_RELOAD_INTERVAL_MS=0`);
  for (const workload of workloads) {
    const spec = workload.spec?.template?.spec ?? {};
    for (const [name] of live) {
      const volumes = (spec.volumes ?? []).filter((volume) => volume.configMap?.name === name).map((volume) => volume.name);
      for (const container of spec.containers ?? [])
        for (const mount of container.volumeMounts ?? [])
          if (volumes.includes(mount.name) && mount.subPath)
            problems.push(
              `${label}: ${workload.kind} ${nameOf(workload)} mounts ConfigMap ${name} with subPath, which never sees a change: mount its directory`,
            );
    }
  }
  return problems;
}

/** The edge's body limit: its rendered setting, else the default of services/edge/src/config.ts's schema. */
export function edgeBodyLimit(root, objects) {
  const edge = byKind(objects, 'Deployment').find((deployment) => nameOf(deployment) === 'edge');
  const set =
    containersOf(edge ?? {})[0]?.env?.find((variable) => variable.name === 'EDGE_BODY_LIMIT_BYTES')?.value ??
    objects.find((object) => object?.kind === 'ConfigMap' && /^gateway-config(-|$)/.test(nameOf(object)))?.data?.EDGE_BODY_LIMIT_BYTES;
  if (set !== undefined) return Number(set);
  const source = readFileSync(join(root, 'services', 'edge', 'src', 'config.ts'), 'utf8');
  const factors = /EDGE_BODY_LIMIT_BYTES:[^\n]*?default:\s*([\d\s*]+)/.exec(source)?.[1] ?? 'NaN';
  return factors.split('*').reduce((product, factor) => product * Number(factor.trim()), 1);
}

/** nginx's size (`16m`, `512k`, `1g`, bytes): binary units. */
const nginxBytes = (size) => {
  const [, number, unit = ''] = /^(\d+)([kmg]?)$/i.exec(String(size ?? '')) ?? [];
  return Number(number) * 1024 ** ' kmg'.indexOf(unit.toLowerCase() || ' ');
};
/** A Gateway API duration (`1h`, `3600s`, `1h30m`, `500ms`) in seconds. */
const durationSeconds = (duration) =>
  [...String(duration ?? '').matchAll(/(\d+)(ms|h|m|s)/g)].reduce(
    (total, [, number, unit]) => total + Number(number) * { h: 3600, m: 60, s: 1, ms: 0.001 }[unit],
    0,
  );
/** Whether a route's path (with its match type) sends a private path to the edge. */
const routesPrivate = (path, type) =>
  PRIVATE_PATHS.some((hidden) =>
    type === 'Exact' ? path === hidden || path.startsWith(`${hidden}/`) : `${hidden}/`.startsWith(`${path.replace(/\/$/, '')}/`) || path.startsWith(hidden),
  );

/**
 * Ingresses and HTTPRoutes that route the admin API or the console, target the edge's admin port,
 * cut streams short, buffer them, or take bodies of another size than the edge.
 */
export function entryPointProblems(label, objects, bodyLimit) {
  const problems = [];
  const adminPort = byKind(objects, 'Service')
    .flatMap((service) => service.spec?.ports ?? [])
    .find((port) => port.name === 'admin');
  const toAdmin = (port) => port !== undefined && (port === 'admin' || port === adminPort?.port);
  for (const ingress of byKind(objects, 'Ingress')) {
    const at = `${label}: Ingress ${nameOf(ingress)}`;
    // A default backend takes every path no rule names, /admin and /console among them.
    const paths = [
      ...(ingress.spec?.rules ?? []).flatMap((rule) => rule.http?.paths ?? []),
      ...(ingress.spec?.defaultBackend ? [{ path: '/', pathType: 'Prefix', backend: ingress.spec.defaultBackend }] : []),
    ];
    for (const { path = '/', pathType, backend } of paths) {
      if (routesPrivate(path, pathType)) problems.push(`${at} routes ${path} to the admin API or the console`);
      if (toAdmin(backend?.service?.port?.name ?? backend?.service?.port?.number)) problems.push(`${at} routes ${path} to the admin port`);
    }
    const annotation = (name) => ingress.metadata?.annotations?.[`${NGINX}${name}`];
    for (const name of ['proxy-read-timeout', 'proxy-send-timeout'])
      if (!(Number(annotation(name)) >= STREAM_SECONDS))
        problems.push(`${at}: ${NGINX}${name} must be at least ${STREAM_SECONDS} (streams), not ${annotation(name)}`);
    if (annotation('proxy-buffering') !== 'off') problems.push(`${at}: ${NGINX}proxy-buffering must be "off" (SSE)`);
    if (nginxBytes(annotation('proxy-body-size')) !== bodyLimit)
      problems.push(`${at}: ${NGINX}proxy-body-size (${annotation('proxy-body-size')}) must be the edge's body limit, ${bodyLimit} bytes`);
  }
  for (const route of byKind(objects, 'HTTPRoute')) {
    const at = `${label}: HTTPRoute ${nameOf(route)}`;
    for (const rule of route.spec?.rules ?? []) {
      for (const { path } of rule.matches?.length ? rule.matches : [{}]) {
        const { type = 'PathPrefix', value = '/' } = path ?? {};
        if (routesPrivate(value, type)) problems.push(`${at} routes ${value} to the admin API or the console`);
      }
      for (const backend of rule.backendRefs ?? []) if (toAdmin(backend.port)) problems.push(`${at} routes to the admin port`);
      for (const name of ['request', 'backendRequest'])
        if (!(durationSeconds(rule.timeouts?.[name]) >= STREAM_SECONDS))
          problems.push(`${at}: timeouts.${name} must be at least ${STREAM_SECONDS}s (streams), not ${rule.timeouts?.[name]}`);
    }
  }
  return problems;
}

/**
 * A production overlay whose public entry point is not the Gateway API's HTTPRoute to the edge
 * (components/gateway-api), or that still renders an Ingress: ingress-nginx is retired (no releases
 * or security fixes since March 2026); components/ingress-nginx is for a cluster that still runs it.
 */
export function productionEntryProblems(label, objects) {
  const routes = byKind(objects, 'HTTPRoute').filter((route) =>
    (route.spec?.rules ?? []).some((rule) => (rule.backendRefs ?? []).some((backend) => backend.name === 'edge')),
  );
  return [
    ...(routes.length === 0 ? [`${label}: no HTTPRoute to the edge: production's entry point is components/gateway-api`] : []),
    ...byKind(objects, 'Ingress').map(
      (ingress) => `${label}: Ingress ${nameOf(ingress)}: production's entry point is the HTTPRoute of components/gateway-api, not the retired ingress-nginx`,
    ),
  ];
}

/**
 * Every rule above (and nats-storage.mjs's) but production's autoscalers, on one rendered set.
 * @param {string} root the repository, for the edge's config schema
 */
export function operationProblems(root, label, objects) {
  return [
    ...natsProbeProblems(label, objects),
    ...natsMemoryProblems(label, objects),
    ...probeProblems(label, objects),
    ...natsStorageProblems(label, objects),
    ...natsExporterProblems(label, objects),
    ...spreadProblems(label, objects),
    ...disruptionProblems(label, objects),
    ...configRolloutProblems(label, objects),
    ...secretProblems(root, label, objects),
    ...entryPointProblems(label, objects, edgeBodyLimit(root, objects)),
  ];
}
